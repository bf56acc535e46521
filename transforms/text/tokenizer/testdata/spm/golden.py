#!/usr/bin/env python3
"""Encodes texts with SentencePiece itself, the reference for the Precompiled
normalizer and the Unigram model: reads {"text": ...} lines on stdin, writes
{"text", "ids", "norm"} lines, "norm" being the pieces joined (SentencePiece's
normalized text with ▁ for spaces). Needs Debian's python3-sentencepiece.

    go test -run TestWriteSPMTexts ./transforms/text/tokenizer -args -spm-texts=/tmp/texts.jsonl
    python3 golden.py test_model.model < /tmp/texts.jsonl > test_model.golden.jsonl
"""
import json
import sys

import sentencepiece

sp = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1])
for line in sys.stdin:
    text = json.loads(line)["text"]
    pieces = sp.encode(text, out_type=str)
    ids = sp.encode(text)
    print(json.dumps({"text": text, "ids": ids, "norm": "".join(pieces)}, ensure_ascii=False, separators=(",", ":")))
