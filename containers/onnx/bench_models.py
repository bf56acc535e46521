#!/usr/bin/python3
"""Exports the models of `make bench-onnx` (containers/onnx/bench_onnx.sh) into a cache directory.

The models users bring, at the batches the benchmark times them (torchvision
0.14's architectures with seeded random weights, and a BERT-style encoder of
our own):

  resnet50            torchvision resnet50, batches 1 and 8, 3x224x224
  mobilenet_v3_small  torchvision mobilenet_v3_small, batches 1 and 32
  efficientnet_b0     torchvision efficientnet_b0, batch 8
  convnext_tiny       torchvision convnext_tiny, batch 8
  vit_b_16            torchvision vit_b_16, batch 4
  bert                a BERT-style encoder with an attention mask (MiniLM-L6's
                      shape: 6 layers, hidden 384, 12 heads, feed-forward 1536,
                      BERT's 30,522-token vocabulary), batches 8 x 128 and
                      32 x 64 tokens; inputs input_ids and attention_mask (int64)
  resize_linear, resize_nearest, resize_cubic
                      one Resize (F.interpolate by 2: bilinear, nearest,
                      bicubic), batch 8 of 32x112x112 (cubic: 16x64x64)
  convtranspose_k2s2, convtranspose_k3s2
                      one ConvTranspose of 64 to 32 channels (2x2 stride 2;
                      3x3 stride 2, padding 1, output_padding 1), batch 8 of
                      64x56x56
  topk_100            one TopK (the 100 largest of 8400, YOLO's anchors), batch
                      8 of 80x8400
  cumsum_axis1        one CumSum along axis 1, batch 8 of 256x4096

Random weights give a benchmark nothing to compare unless the outputs are far
from zero, so: batch-norm statistics are recalibrated on a few random batches
(the running averages of the activations the random weights give), ConvNeXt's
layer scales (1e-6 at initialisation, which makes every block an identity) are
set to 0.1 to 0.5, and heads initialised to zero (ViT's) get random values.
Every model is exported at opset 17 with a dynamic batch axis (and a dynamic
sequence axis for the encoder), eval mode, constant folding on.

Inputs are NumPy .npy files, one per model input and batch: images are
standard normal, token ids uniform over the vocabulary with rows of different
lengths padded (attention_mask 0 on the padding). The manifest, manifest.tsv,
has one line per benchmark entry:

  NAME <TAB> BATCH-LABEL <TAB> MODEL-FILE <TAB> INPUT-FILE[,INPUT-FILE...]

Run with Debian bookworm's Python and PyTorch (apt-get install python3-torch
python3-torchvision python3-onnx):

  /usr/bin/python3 containers/onnx/bench_models.py --out DIR [--only NAME,...]

An existing model file is kept (delete the directory to export anew); the
exports take a few minutes on two cores and about 700 MB.
"""

import argparse
import math
import os
import sys

import numpy as np
import onnx
import torch
import torchvision
from torch import nn

IMAGE = (3, 224, 224)


class EncoderLayer(nn.Module):
    """A post-norm BERT layer written out: attention with an additive mask,
    Add + LayerNorm, GELU feed-forward, Add + LayerNorm."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def split(self, x):
        n, s, _ = x.shape
        return x.view(n, s, self.heads, self.dh).transpose(1, 2)

    def forward(self, x, mask_add):
        n, s, d = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh) + mask_add
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(n, s, d)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class Encoder(nn.Module):
    def __init__(self, vocab=30522, d=384, heads=12, ff=1536, layers=6, max_len=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer(d, heads, ff) for _ in range(layers))

    def forward(self, input_ids, attention_mask):
        s = input_ids.shape[1]
        pos = torch.arange(s, device=input_ids.device).unsqueeze(0)
        x = self.ln(self.tok(input_ids) + self.pos(pos))
        mask_add = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_add)
        return x


def recalibrate(model, batches=4, batch=8, seed=0):
    """Batch norms' running statistics averaged over random batches."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average
    g = torch.Generator().manual_seed(seed)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn((batch,) + IMAGE, generator=g))
    model.eval()


def vision(name, seed):
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)()
    g = torch.Generator().manual_seed(seed + 1000)
    with torch.no_grad():
        for mod_name, p in model.named_parameters():
            if mod_name.endswith("layer_scale"):  # ConvNeXt: 1e-6 makes each block an identity
                p.copy_(0.1 + 0.4 * torch.rand(p.shape, generator=g))
            elif p.dim() >= 1 and torch.count_nonzero(p) == 0 and "bias" not in mod_name:
                p.copy_(0.02 * torch.randn(p.shape, generator=g))  # ViT's zero head
    recalibrate(model, seed=seed)
    return model


def export_vision(model, path):
    x = torch.randn((1,) + IMAGE)
    torch.onnx.export(
        model, (x,), path, opset_version=17, input_names=["input"], output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, do_constant_folding=True,
    )


class Interpolate(nn.Module):
    """F.interpolate by 2 in mode: a lone Resize."""

    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def forward(self, x):
        return nn.functional.interpolate(x, scale_factor=2.0, mode=self.mode)


class TopK(nn.Module):
    """The k largest of the last axis: a lone TopK (its values)."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return torch.topk(x, self.k, dim=-1).values


class CumSum(nn.Module):
    """Running sums along axis 1: a lone CumSum."""

    def forward(self, x):
        return torch.cumsum(x, dim=1)


def export_op(model, shape, path):
    """A module of one operator on inputs of shape (any batch), at opset 17."""
    x = torch.randn((1,) + shape[1:])
    torch.onnx.export(
        model.eval(), (x,), path, opset_version=17, input_names=["input"], output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, do_constant_folding=True,
    )


def export_encoder(model, path):
    ids = torch.randint(0, 30522, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    torch.onnx.export(
        model, (ids, mask), path, opset_version=17, input_names=["input_ids", "attention_mask"],
        output_names=["last_hidden_state"],
        dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                      "last_hidden_state": {0: "batch", 1: "seq"}},
        do_constant_folding=True,
    )


def token_inputs(batch, seq, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 30522, (batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    for r in range(batch):  # rows of different lengths, at least half the sequence
        n = int(rng.integers(seq // 2, seq + 1))
        ids[r, n:] = 0
        mask[r, n:] = 0
    return [ids, mask]


# (name, batches as (label, inputs maker)), in the order the table lists them.
VISION = [("resnet50", (1, 8)), ("mobilenet_v3_small", (1, 32)), ("efficientnet_b0", (8,)),
          ("convnext_tiny", (8,)), ("vit_b_16", (4,))]
ENCODER = [("bert", ((8, 128), (32, 64)))]
# Single operators of the decoders users bring (U-Net, FPN): Resize and
# ConvTranspose, each on the input shape given.
OPS = [
    ("resize_linear", lambda: Interpolate("bilinear"), (8, 32, 112, 112)),
    ("resize_nearest", lambda: Interpolate("nearest"), (8, 32, 112, 112)),
    ("resize_cubic", lambda: Interpolate("bicubic"), (8, 16, 64, 64)),
    ("convtranspose_k2s2", lambda: nn.ConvTranspose2d(64, 32, 2, stride=2), (8, 64, 56, 56)),
    ("convtranspose_k3s2", lambda: nn.ConvTranspose2d(64, 32, 3, stride=2, padding=1, output_padding=1), (8, 64, 56, 56)),
    # and of the detectors' heads: TopK of a score map, CumSum
    ("topk_100", lambda: TopK(100), (8, 80, 8400)),
    ("cumsum_axis1", CumSum, (8, 256, 4096)),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="the cache directory to write the models, inputs and manifest.tsv into")
    ap.add_argument("--only", default="", help="comma-separated model names to export (default: all)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    lines = []

    def add(name, label, model_path, arrays):
        files = []
        for i, a in enumerate(arrays):
            f = os.path.join(args.out, f"{name}-{label}.input{i}.npy")
            if not os.path.exists(f):
                np.save(f, a)
            files.append(f)
        lines.append("\t".join([name, label, model_path, ",".join(files)]))

    for seed, (name, batches) in enumerate(VISION, start=1):
        if only and name not in only:
            continue
        path = os.path.join(args.out, name + ".onnx")
        if not os.path.exists(path):
            print(f"bench_models: exporting {name}", file=sys.stderr, flush=True)
            export_vision(vision(name, seed), path + ".tmp")
            onnx.checker.check_model(path + ".tmp")
            os.replace(path + ".tmp", path)
        for b in batches:
            x = np.random.default_rng(100 + b).standard_normal((b,) + IMAGE, dtype=np.float32)
            add(name, f"b{b}", path, [x])

    for name, shapes in ENCODER:
        if only and name not in only:
            continue
        path = os.path.join(args.out, name + ".onnx")
        if not os.path.exists(path):
            print(f"bench_models: exporting {name}", file=sys.stderr, flush=True)
            torch.manual_seed(7)
            model = Encoder().eval()
            export_encoder(model, path + ".tmp")
            onnx.checker.check_model(path + ".tmp")
            os.replace(path + ".tmp", path)
        for b, s in shapes:
            add(name, f"b{b}x{s}", path, token_inputs(b, s, 200 + b))

    for seed, (name, make, shape) in enumerate(OPS, start=300):
        if only and name not in only:
            continue
        path = os.path.join(args.out, name + ".onnx")
        if not os.path.exists(path):
            print(f"bench_models: exporting {name}", file=sys.stderr, flush=True)
            torch.manual_seed(seed)
            export_op(make(), shape, path + ".tmp")
            onnx.checker.check_model(path + ".tmp")
            os.replace(path + ".tmp", path)
        add(name, f"b{shape[0]}", path, [np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)])

    with open(os.path.join(args.out, "manifest.tsv.tmp"), "w") as f:
        f.write("".join(line + "\n" for line in lines))
    os.replace(os.path.join(args.out, "manifest.tsv.tmp"), os.path.join(args.out, "manifest.tsv"))
    print(f"bench_models: {len(lines)} entries in {os.path.join(args.out, 'manifest.tsv')}", file=sys.stderr)


if __name__ == "__main__":
    main()
