#!/usr/bin/python3
"""Exports the BERT-style encoder that pipelines/infer's multi-input and
variable-length tests run, with its rows and ONNX Runtime's outputs for them.

The model is a small BERT-style encoder in plain PyTorch, seeded random
weights: a token embedding (vocabulary 100), a learned position embedding (64
positions) and a token type embedding (2 types), summed and layer-normalised;
2 encoder layers of multi-head self-attention (hidden 32, 4 heads) with BERT's
additive attention mask ((1 - mask) * -10000 on the keys), a GELU feed-forward
layer (64) and post-layer norms; and BERT's pooler (tanh of a linear map of the
first token). Inputs input_ids, attention_mask and token_type_ids (int64
[batch, sequence]); outputs last_hidden_state (float32 [batch, sequence, 32])
and pooler_output (float32 [batch, 32]). Batch and sequence are dynamic axes,
named "batch" and "sequence" on the inputs and on the outputs alike, so that a
runtime can tell which output axes come from the inputs' sequence axis. Every
LayerNorm gets random affine parameters (none is an identity) and the weights
are drawn at a scale that keeps the activations far from constant.

Run with Debian bookworm's Python and PyTorch (apt-get install python3-torch
python3-onnx; the committed files were made with torch 1.13.0a0, onnx 1.12.0,
numpy 1.24.2 and onnxruntime-node 1.30.0), from the repository root:

  /usr/bin/python3 containers/onnx/export_encoder.py

It writes to pipelines/infer/testdata/encoder/:
  encoder.onnx       the model (opset 17)
  rows.jsonl         12 rows of lengths 1 to 40, one JSON object a line with
                     the three inputs as arrays (attention_mask all ones:
                     padding is the pipeline's)
  rows.ref.jsonl     ONNX Runtime's outputs for each row of rows.jsonl, run one
                     row per call without padding (containers/onnx/ort_run.js):
                     {"row", "last_hidden_state": {"shape", "values"},
                      "pooler_output": {...}}
  fixed_*.npy        6 rows of length 8, one .npy per input (the multi-file
                     --input form), and fixed.ref.jsonl their outputs, as above
It prints the operators and ONNX Runtime's agreement with PyTorch.
"""

import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "pipelines", "infer", "testdata", "encoder")
OPSET = 17
VOCAB, POSITIONS, HIDDEN, HEADS, FF, LAYERS = 100, 64, 32, 4, 64, 2
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUTS = ("last_hidden_state", "pooler_output")


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
        return x, torch.tanh(self.pool(x[:, 0]))


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


def row(rng, n):
    ids = rng.integers(1, VOCAB, n, dtype=np.int64)
    types = np.zeros(n, dtype=np.int64)
    types[n // 2:] = 1 if n > 2 else 0
    return {"input_ids": ids, "attention_mask": np.ones(n, dtype=np.int64), "token_type_ids": types}


def ort_run(model, r, tmp):
    ins = []
    for name in INPUTS:
        p = os.path.join(tmp, name + ".npy")
        np.save(p, r[name][None, :])
        ins += ["--in", p]
    outs = [os.path.join(tmp, name + ".out.npy") for name in OUTPUTS]
    ort = os.path.join(ROOT, "containers", "onnx", "ort.sh")
    js = os.path.join(ROOT, "containers", "onnx", "ort_run.js")
    subprocess.run([ort, "--quiet", "--", js, "run", model] + ins + sum((["--out", o] for o in outs), []),
                   check=True, stdout=subprocess.DEVNULL)
    return [np.load(o)[0] for o in outs]


def tensor_json(a):
    return {"shape": list(a.shape), "values": [float(np.float32(v)) for v in a.reshape(-1)]}


def main():
    os.makedirs(OUT, exist_ok=True)
    m = make_model()
    path = os.path.join(OUT, "encoder.onnx")
    x = row(np.random.default_rng(0), 7)
    args = tuple(torch.from_numpy(x[n][None, :]) for n in INPUTS)
    axes = {n: {0: "batch", 1: "sequence"} for n in INPUTS}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    axes["pooler_output"] = {0: "batch"}
    torch.onnx.export(m, args, path, opset_version=OPSET, input_names=list(INPUTS), output_names=list(OUTPUTS),
                      dynamic_axes=axes, do_constant_folding=True)
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print("encoder.onnx: %d bytes, operators %s" % (os.path.getsize(path), ", ".join(ops)))

    rng = np.random.default_rng(31)
    sets = {
        "rows": [row(rng, n) for n in (5, 17, 3, 9, 31, 12, 1, 24, 7, 16, 2, 40)],
        "fixed": [row(rng, 8) for _ in range(6)],
    }
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, rows in sets.items():
            refs = []
            for i, r in enumerate(rows):
                got = ort_run(path, r, tmp)
                with torch.no_grad():
                    want = m(*(torch.from_numpy(r[n][None, :]) for n in INPUTS))
                for g, w in zip(got, want):
                    w = w[0].numpy()
                    worst = max(worst, float(np.abs(g - w).max() / max(1e-6, np.abs(w).max())))
                    assert np.std(g) > 0.1, "degenerate output"
                refs.append(dict({"row": i}, **{o: tensor_json(g) for o, g in zip(OUTPUTS, got)}))
            with open(os.path.join(OUT, name + ".ref.jsonl"), "w") as f:
                for r in refs:
                    f.write(json.dumps(r) + "\n")
            if name == "rows":
                with open(os.path.join(OUT, "rows.jsonl"), "w") as f:
                    for r in rows:
                        f.write(json.dumps({n: r[n].tolist() for n in INPUTS}) + "\n")
            else:
                for n in INPUTS:
                    np.save(os.path.join(OUT, "fixed_%s.npy" % n), np.stack([r[n] for r in rows]))
    print("ONNX Runtime vs PyTorch: largest difference %.2g of the output's largest magnitude" % worst)


if __name__ == "__main__":
    sys.exit(main())
