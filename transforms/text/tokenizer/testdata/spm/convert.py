#!/usr/bin/env python3
"""Converts a SentencePiece Unigram model (.model, a ModelProto) to a Hugging Face
tokenizer.json the way transformers' convert_slow_tokenizer does for XLM-RoBERTa: the
model's pieces and scores as a Unigram vocabulary, its precompiled_charsmap as a
Precompiled normalizer, a Metaspace pre-tokenizer and decoder, and <s> $A </s> around each
sequence. Standard library only (it reads the protobuf wire format itself).

    python3 convert.py test_model.model > test_model.tokenizer.json
"""
import base64
import json
import struct
import sys


def fields(buf):
    """Yields (field number, wire type, value) of a protobuf message."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v


def varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def main(path):
    data = open(path, "rb").read()
    pieces, charsmap, model_type = [], b"", 1
    for num, _, v in fields(data):
        if num == 1:
            piece, score, typ = "", 0.0, 1
            for n2, _, v2 in fields(v):
                if n2 == 1:
                    piece = v2.decode("utf-8")
                elif n2 == 2:
                    score = struct.unpack("<f", v2)[0]
                elif n2 == 3:
                    typ = v2
            pieces.append((piece, score, typ))
        elif num == 2:
            for n2, _, v2 in fields(v):
                if n2 == 3:
                    model_type = v2
        elif num == 3:
            for n2, _, v2 in fields(v):
                if n2 == 2:
                    charsmap = v2
    if model_type != 1:
        sys.exit("%s: not a Unigram model (model_type %d)" % (path, model_type))
    unk = [i for i, p in enumerate(pieces) if p[2] == 2]
    ids = {p[0]: i for i, p in enumerate(pieces)}
    added = [{"id": i, "content": p[0], "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, p in enumerate(pieces) if p[2] in (2, 3)]
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Precompiled",
                       "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")} if charsmap else None,
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]} for t in ("<s>", "</s>")},
        },
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": unk[0] if unk else None,
                  "vocab": [[p[0], p[1]] for p in pieces], "byte_fallback": False},
    }
    json.dump(tok, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
