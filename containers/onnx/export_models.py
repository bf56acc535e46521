#!/usr/bin/python3
"""Exports the ONNX models that beamgpu's ONNX runtime is tested and benchmarked on.

Four small models with seeded random weights, each at opset 14 and 17, with a
dynamic batch axis, written to transforms/onnx/testdata/models/ with a fixed
input (batch 4) and ONNX Runtime's outputs for it:

  resnet       a ResNet-style CNN: a stem (Conv, BatchNormalization, ReLU,
               MaxPool), three stages of two residual blocks (16, 32, 64
               channels), GlobalAveragePool, Flatten, Gemm; input 3x64x64.
  mobilenetv2  torchvision's mobilenet_v2(width_mult=0.25, num_classes=10)
               (MobileNetV2's layers and depthwise convolutions, at a
               quarter of the width to keep the file near 1 MB); input
               3x64x64.
  transformer  a token embedding (Gather) plus a learned position embedding,
               nn.TransformerEncoder (2 layers, d_model 64, 4 heads,
               feed-forward 128, GELU), a final LayerNorm, the mean over the
               sequence and a linear head; input int64 token ids [N, 16].
  unet         a small U-Net segmenter (UNetSmall: ConvTranspose with and
               without padding, output_padding and groups, bilinear and
               nearest Resize, Concat skip connections, MaxPool, batch norm);
               input 3x64x64, output 2 class logits per pixel.

Batch normalisation and dropout are in eval mode. The models are exported with
training=TrainingMode.PRESERVE (the modules in eval mode), so that the
exporter keeps BatchNormalization as a node instead of folding it into the
convolution before it (as the default export does), and every BatchNormalization
and LayerNorm gets random statistics and affine parameters, so that none is an
identity.

Run with Debian bookworm's Python and PyTorch (apt-get install python3-torch
python3-torchvision python3-onnx; the committed files were made with torch
1.13.0a0, torchvision 0.14.1a0, onnx 1.12.0, numpy 1.24.2 and onnxruntime-node
1.30.0), from the repository root:

  /usr/bin/python3 containers/onnx/export_models.py [--only unet ...]

It writes, for each model M and opset V:
  M-opsetV.onnx              the model
  M.input.pb                 its fixed input (TensorProto; one per model kind)
  M-opsetV.output.pb         ONNX Runtime's output for it (containers/onnx/ort_run.js)
and models.txt, the list of models (one line each) that the Go tests, the
benchmarks and the peers read. It prints, per model, the operators it uses,
ONNX Runtime's agreement with PyTorch and the smallest top-1/top-2 logit gap.
With --no-ort the outputs are PyTorch's instead (for a machine without Node.js).
"""

import argparse
import collections
import hashlib
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torchvision
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "transforms", "onnx", "testdata", "models")
OPSETS = (14, 17)
BATCH = 4


class BasicBlock(nn.Module):
    """ResNet's basic block: two 3x3 convolutions with batch norm, and a 1x1
    projection on the shortcut where the shape changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.short is None else self.short(x)))


class ResNetSmall(nn.Module):
    def __init__(self, widths=(16, 32, 64), blocks=2, classes=10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 3, 1, 1, bias=False),
            nn.BatchNorm2d(widths[0]),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        layers, cin = [], widths[0]
        for i, w in enumerate(widths):
            for b in range(blocks):
                layers.append(BasicBlock(cin, w, 2 if (i > 0 and b == 0) else 1))
                cin = w
        self.stages = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))


class TinyTransformer(nn.Module):
    def __init__(self, vocab=1000, seq=16, d=64, heads=4, ff=128, layers=2, classes=10):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, activation="gelu", batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d), enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, tokens):
        x = self.enc(self.tok(tokens) + self.pos)
        return self.head(x.mean(dim=1))


def conv_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class UNetSmall(nn.Module):
    """A U-Net segmenter at a small width: two encoder levels (3x3
    convolutions, batch norm, ReLU, max pooling), a bottleneck, and a decoder
    that upsamples by transposed convolutions (2x2 stride 2, and 3x3 stride 2
    with padding, output_padding and groups) and by bilinear interpolation,
    concatenating the encoder's features at each level; a nearest-upsampled
    side output of the bottleneck is added to the head's logits."""

    def __init__(self, classes=2):
        super().__init__()
        self.enc1 = nn.Sequential(conv_bn_relu(3, 8), conv_bn_relu(8, 8))
        self.enc2 = conv_bn_relu(8, 16)
        self.mid = conv_bn_relu(16, 32)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec2 = conv_bn_relu(32, 16)
        self.up1 = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.lin1 = nn.Conv2d(16, 8, 1)
        self.dec1 = conv_bn_relu(16, 8)
        self.head = nn.Conv2d(8, classes, 1)
        self.side = nn.Conv2d(32, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(nn.functional.max_pool2d(e1, 2))
        b = self.mid(nn.functional.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], 1))
        r1 = self.lin1(nn.functional.interpolate(d2, scale_factor=2.0, mode="bilinear", align_corners=False))
        d1 = self.dec1(torch.cat([self.up1(d2) + r1, e1], 1))
        side = nn.functional.interpolate(self.side(b), scale_factor=4.0, mode="nearest")
        return self.head(d1) + side


def randomize_norms(model, seed):
    """Random running statistics and affine parameters for every batch norm
    and layer norm, so that none is an identity."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
                n = m.weight.numel()
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.1 * torch.randn(n, generator=g))
            if isinstance(m, nn.BatchNorm2d):
                n = m.running_mean.numel()
                m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
                m.running_var.copy_(0.5 + torch.rand(n, generator=g))


def make_models():
    """(name, module, input) for each model kind, each from its own seeds."""
    torch.manual_seed(1)
    resnet = ResNetSmall()
    randomize_norms(resnet, 11)
    x_resnet = np.random.default_rng(101).standard_normal((BATCH, 3, 64, 64), dtype=np.float32)

    torch.manual_seed(2)
    mobilenet = torchvision.models.mobilenet_v2(width_mult=0.25, num_classes=10)
    randomize_norms(mobilenet, 12)
    x_mobilenet = np.random.default_rng(102).standard_normal((BATCH, 3, 64, 64), dtype=np.float32)

    torch.manual_seed(3)
    transformer = TinyTransformer()
    randomize_norms(transformer, 13)
    x_transformer = np.random.default_rng(103).integers(0, 1000, (BATCH, 16), dtype=np.int64)

    torch.manual_seed(4)
    unet = UNetSmall()
    randomize_norms(unet, 14)
    x_unet = np.random.default_rng(104).standard_normal((BATCH, 3, 64, 64), dtype=np.float32)

    return [("resnet", resnet, x_resnet), ("mobilenetv2", mobilenet, x_mobilenet), ("transformer", transformer, x_transformer), ("unet", unet, x_unet)]


def export(module, x, path, opset):
    module.eval()
    torch.onnx.export(
        module,
        (torch.from_numpy(x),),
        path,
        opset_version=opset,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=True,
    )
    onnx.checker.check_model(onnx.load(path), full_check=True)


def save_tensor(path, arr, name):
    with open(path, "wb") as f:
        f.write(onnx.numpy_helper.from_array(arr, name).SerializeToString())


def load_tensor(path):
    return onnx.numpy_helper.to_array(onnx.load_tensor(path))


def ort_run(model, inp, out):
    ort = os.path.join(ROOT, "containers", "onnx", "ort.sh")
    js = os.path.join(ROOT, "containers", "onnx", "ort_run.js")
    subprocess.run([ort, "--quiet", "--", js, "run", model, "--in", inp, "--out", out], check=True, stdout=subprocess.DEVNULL)


def ops_of(path):
    counts = collections.Counter(n.op_type for n in onnx.load(path).graph.node)
    return ", ".join(f"{op} {counts[op]}" for op in sorted(counts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="output directory (default: %(default)s)")
    ap.add_argument("--no-ort", action="store_true", help="write PyTorch's outputs as the references (no Node.js needed)")
    ap.add_argument("--only", action="append", default=[], help="export only this model kind (repeatable; models.txt still lists them all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)  # the same float sums on any machine
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")
    lines = [
        "# The test models of transforms/onnx (written by containers/onnx/export_models.py; see ORIGIN.md).",
        "# name  model  input  output (ONNX Runtime's, for the input)",
    ]
    for name, module, x in make_models():
        if args.only and name not in args.only:
            for opset in OPSETS:
                base = f"{name}-opset{opset}"
                lines.append(f"{base}  {base}.onnx  {name}.input.pb  {base}.output.pb")
            continue
        module.eval()
        inp = os.path.join(args.out, f"{name}.input.pb")
        save_tensor(inp, x, "input")
        with torch.no_grad():
            want = module(torch.from_numpy(x)).numpy()
        for opset in OPSETS:
            base = f"{name}-opset{opset}"
            model = os.path.join(args.out, base + ".onnx")
            out = os.path.join(args.out, base + ".output.pb")
            export(module, x, model, opset)
            if args.no_ort:
                save_tensor(out, want, "logits")
            else:
                ort_run(model, inp, out)
            got = load_tensor(out)
            top2 = np.sort(got, axis=1)[:, -2:]
            diff = np.abs(got - want).max()
            reln = np.linalg.norm(got - want) / np.linalg.norm(want)
            same = (got.argmax(1) == want.argmax(1)).all()
            with open(model, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            print(
                f"{base}: {os.path.getsize(model)} bytes, sha256 {digest[:16]}, output {list(got.shape)} "
                f"|max| {np.abs(got).max():.3g}, vs PyTorch: max abs diff {diff:.2g}, relative norm {reln:.2g}, "
                f"same argmax {same}, smallest top-1/top-2 gap {(top2[:, 1] - top2[:, 0]).min():.3g}"
            )
            print(f"  ops: {ops_of(model)}")
            lines.append(f"{base}  {os.path.basename(model)}  {os.path.basename(inp)}  {os.path.basename(out)}")
    with open(os.path.join(args.out, "models.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
