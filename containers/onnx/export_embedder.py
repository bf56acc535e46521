#!/usr/bin/python3
"""Exports the sentence-transformers-style text encoder that pipelines/embed's
tests run, a corpus of texts, and the reference embeddings of the corpus.

The model is a small BERT-style encoder in plain PyTorch with seeded random
weights over the BERT uncased vocabulary of the committed tokenizer
(transforms/text/tokenizer/testdata/bert/uncased, 30,522 ids): a token
embedding, a learned position embedding (128 positions) and a token type
embedding (2 types), summed and layer-normalised; 2 encoder layers of
multi-head self-attention (hidden 16, 2 heads) with BERT's additive attention
mask ((1 - mask) * -10000 on the keys), a GELU feed-forward layer (32) and
post-layer norms. Inputs input_ids, attention_mask and token_type_ids (int64
[batch, sequence]); outputs pooler_output (float32 [batch, 16], tanh of a
linear map of the first token) first and last_hidden_state (float32 [batch,
sequence, 16]) second, so that a pipeline has to find the token output by its
shape. Batch and sequence are dynamic axes named "batch" and "sequence" on the
inputs and outputs alike. A sentence-transformers model's embedding is the
mean of last_hidden_state over the tokens the attention mask keeps,
L2-normalised; the reference below computes exactly that.

The corpus is real English prose: paragraphs of the docstrings of Python's
standard library (as the Python that runs this script holds them), in mixed
lengths (a word to several paragraphs joined, many past the test's
--max_length of 64 tokens), with a few texts of accents, CJK, emoji and
control characters; 400 JSONL lines {"id", "text"}.

The reference embeddings come from Hugging Face's tokenizers.js (npm
@huggingface/tokenizers) and ONNX Runtime (npm onnxruntime-node), one text per
model call, without padding: containers/onnx/embed_reference.js.

Run with Debian bookworm's Python and PyTorch (apt-get install python3-torch
python3-onnx), from the repository root:

  /usr/bin/python3 containers/onnx/export_embedder.py

It writes to pipelines/embed/testdata/:
  embedder.onnx      the model (opset 17)
  corpus.jsonl       the texts
  corpus.ref.jsonl   {"id", "embedding"} per text, in order (max_length 64)
"""

import inspect
import json
import math
import os
import pydoc
import random
import subprocess
import sys

import onnx
import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "pipelines", "embed", "testdata")
TOKENIZER = os.path.join(ROOT, "transforms", "text", "tokenizer", "testdata", "bert", "uncased")
OPSET = 17
VOCAB, POSITIONS, HIDDEN, HEADS, FF, LAYERS = 30522, 128, 16, 2, 32, 2
MAX_LENGTH = 64
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUTS = ("pooler_output", "last_hidden_state")


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(HIDDEN, HIDDEN) for _ in range(4))
        self.ln1 = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.ff1, self.ff2 = nn.Linear(HIDDEN, FF), nn.Linear(FF, HIDDEN)
        self.ln2 = nn.LayerNorm(HIDDEN, eps=1e-12)

    def heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, HEADS, HIDDEN // HEADS).transpose(1, 2)

    def forward(self, x, bias):
        b, s, _ = x.shape
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(HIDDEN // HEADS) + bias
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, HIDDEN)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, HIDDEN)
        self.positions = nn.Embedding(POSITIONS, HIDDEN)
        self.types = nn.Embedding(2, HIDDEN)
        self.ln = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.pool = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, input_ids, attention_mask, token_type_ids):
        pos = torch.arange(input_ids.shape[1], dtype=torch.int64).unsqueeze(0)
        x = self.ln(self.tokens(input_ids) + self.positions(pos) + self.types(token_type_ids))
        bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        return torch.tanh(self.pool(x[:, 0])), x


def make_model():
    torch.manual_seed(31)
    m = Encoder()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "ln" in name:
                p.copy_(torch.empty_like(p).uniform_(0.5, 1.5) if name.endswith("weight") else torch.randn_like(p) * 0.1)
            elif name.endswith("bias"):
                p.copy_(torch.randn_like(p) * 0.1)
            else:
                p.copy_(torch.randn_like(p) * (1.0 / math.sqrt(p.shape[-1])))
    return m.eval()


MODULES = ("json", "os", "re", "string", "textwrap", "collections", "functools", "itertools", "pathlib",
           "subprocess", "argparse", "logging", "random", "statistics", "datetime", "csv", "gzip", "zipfile",
           "shutil", "tempfile", "heapq", "bisect", "fractions", "decimal", "urllib.parse", "email.message",
           "http.client", "socket", "threading", "queue", "unittest", "difflib", "inspect", "typing")
EXTRA = ["Crème brûlée à la française, naïve café", "東京は日本の首都です。北京是中国的首都。",
         "emoji 🎉🚀 party 👩‍👩‍👧", "tabs\tand\x0bcontrol\x1fcharacters", "ÀÉÎÕÜ ÅSTRÖM Ñandú",
         "a", "Supercalifragilisticexpialidocious" * 8, "THE END."]


def corpus():
    paras = []
    for name in MODULES:
        mod = __import__(name, fromlist=["_"])
        for _, obj in sorted(vars(mod).items()):
            doc = inspect.getdoc(obj) if (inspect.isfunction(obj) or inspect.isclass(obj)) else None
            for p in (doc or "").split("\n\n"):
                p = " ".join(p.split())
                if len(p) > 20 and p not in paras:
                    paras.append(p)
    rng = random.Random(31)
    rng.shuffle(paras)
    texts, i = [], 0
    while len(texts) < 400 - len(EXTRA):
        kind = len(texts) % 5
        if kind == 0:  # a few words
            texts.append(" ".join(paras[i].split()[: rng.randint(1, 6)]))
            i += 1
        elif kind == 4:  # several paragraphs joined: past max length
            texts.append(" ".join(paras[i:i + 4]))
            i += 4
        else:
            texts.append(paras[i])
            i += 1
    texts[200:200] = EXTRA
    return [{"id": "doc-%03d" % k, "text": t} for k, t in enumerate(texts)]


def main():
    os.makedirs(OUT, exist_ok=True)
    m = make_model()
    path = os.path.join(OUT, "embedder.onnx")
    args = tuple(torch.ones(1, 7, dtype=torch.int64) for _ in INPUTS)
    axes = {n: {0: "batch", 1: "sequence"} for n in INPUTS}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    axes["pooler_output"] = {0: "batch"}
    torch.onnx.export(m, args, path, opset_version=OPSET, input_names=list(INPUTS), output_names=list(OUTPUTS),
                      dynamic_axes=axes, do_constant_folding=True)
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print("embedder.onnx: %d bytes, operators %s" % (os.path.getsize(path), ", ".join(ops)))
    docs = corpus()
    cpath = os.path.join(OUT, "corpus.jsonl")
    with open(cpath, "w") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    print("corpus.jsonl: %d texts, %d to %d characters" % (len(docs), min(len(d["text"]) for d in docs),
                                                           max(len(d["text"]) for d in docs)))
    env = dict(os.environ)
    mods = [subprocess.run([os.path.join(ROOT, s), "--quiet"], check=True, capture_output=True, text=True).stdout.strip()
            for s in ("containers/text/tokenizers-js.sh", "containers/onnx/ort.sh")]
    env["NODE_PATH"] = ":".join(mods)
    subprocess.run(["node", os.path.join(ROOT, "containers", "onnx", "embed_reference.js"),
                    os.path.join(TOKENIZER, "tokenizer.json"), os.path.join(TOKENIZER, "tokenizer_config.json"),
                    path, str(MAX_LENGTH), cpath, os.path.join(OUT, "corpus.ref.jsonl")], check=True, env=env)


if __name__ == "__main__":
    sys.exit(main())
