#!/usr/bin/python3
"""Trains the Fashion-MNIST CNN shipped as pipelines/fashion/data/cnn-fashion.onnx.

A small CNN, trained on the CPU with Debian bookworm's PyTorch on the 60,000
training images of Debian's dataset-fashion-mnist, exported to ONNX (opset 17,
dynamic batch) and measured with ONNX Runtime on the 10,000 test images:

  input  float32 [N, 1, 28, 28], the pixels scaled x/255 (as the MLP's input)
  3 x (Conv 3x3 pad 1, BatchNorm, ReLU, MaxPool 2): 32, 64, 64 channels, 28 -> 14 -> 7 -> 3
  Flatten (576), Linear 128, ReLU, Dropout 0.3, Linear 10
  output float32 [N, 10], logits

Training: Adam (lr 0.001, cosine decay to 0 per step), batch 128, 6 epochs,
cross-entropy, random horizontal flips; seed 1, PyTorch's deterministic
algorithms, 2 threads. The epoch count and schedule are fixed in advance; the
test accuracy printed after each epoch is not used to choose anything. The export uses torch.onnx's default
(eval) mode, which folds each BatchNorm into its convolution, as users' exports
do. Then ONNX Runtime (containers/onnx/ort.sh, ort_run.js) runs the file on the
test set and the script prints its accuracy.

The shipped file was made with torch 1.13.0a0, onnx 1.12.0 and numpy 1.24.2
(Debian bookworm's python3-torch, python3-onnx, python3-numpy) and
onnxruntime-node 1.30.0, on 2 shared CPU cores (about 35 s an epoch unloaded;
7.5 min in all with other work on the machine): PyTorch's and ONNX Runtime's
test accuracy 0.9233 (see pipelines/fashion/data/README.md).

Usage (from the repository root; apt-get install python3-torch python3-onnx
dataset-fashion-mnist):

  /usr/bin/python3 containers/onnx/train_fashion_cnn.py \\
      --data_dir /usr/share/datasets/fashion-mnist --out pipelines/fashion/data/cnn-fashion.onnx
"""

import argparse
import gzip
import hashlib
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_idx(path):
    """An IDX file (gzip or not) as a numpy array."""
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        data = f.read()
    if data[:2] != b"\0\0" or data[2] != 8:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    nd = data[3]
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


def load(data_dir, split):
    """The images (float32 [N, 1, 28, 28], x/255) and labels (int64) of split."""
    prefix = "train" if split == "train" else "t10k"

    def find(name):
        for p in (os.path.join(data_dir, name + ".gz"), os.path.join(data_dir, name)):
            if os.path.exists(p):
                return p
        raise FileNotFoundError(f"no {name}[.gz] in {data_dir} (apt-get install dataset-fashion-mnist)")

    x = read_idx(find(f"{prefix}-images-idx3-ubyte")).astype(np.float32)[:, None, :, :] / 255
    y = read_idx(find(f"{prefix}-labels-idx1-ubyte")).astype(np.int64)
    return x, y


class FashionCNN(nn.Module):
    def __init__(self):
        super().__init__()

        def block(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]

        self.features = nn.Sequential(*block(1, 32), *block(32, 64), *block(64, 64))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64 * 3 * 3, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def accuracy(model, x, y, batch=1000):
    model.eval()
    right = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            right += (model(torch.from_numpy(x[i : i + batch])).argmax(1).numpy() == y[i : i + batch]).sum()
    return right / len(x)


def ort_logits(model_path, x):
    """ONNX Runtime's logits for x (containers/onnx/ort_run.js)."""
    with tempfile.TemporaryDirectory() as d:
        inp, out = os.path.join(d, "x.npy"), os.path.join(d, "logits.npy")
        np.save(inp, x)
        subprocess.run(
            [os.path.join(ROOT, "containers/onnx/ort.sh"), "--quiet", "--", os.path.join(ROOT, "containers/onnx/ort_run.js"),
             "run", model_path, "--in", inp, "--out", out],
            check=True, stdout=subprocess.DEVNULL)
        return np.load(out)


def main():
    ap = argparse.ArgumentParser(description="Train the Fashion-MNIST CNN and export it to ONNX.")
    ap.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--out", default=os.path.join(ROOT, "pipelines/fashion/data/cnn-fashion.onnx"))
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch_size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2, help="PyTorch's CPU threads (the sums, so the weights, can depend on it)")
    ap.add_argument("--train_limit", type=int, default=0, help="train on the first N images only (a quick check)")
    ap.add_argument("--no_ort", action="store_true", help="skip the ONNX Runtime accuracy")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, numpy {np.__version__}, {args.threads} threads", flush=True)

    xtr, ytr = load(args.data_dir, "train")
    xte, yte = load(args.data_dir, "test")
    if args.train_limit:
        xtr, ytr = xtr[: args.train_limit], ytr[: args.train_limit]
    model = FashionCNN()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    steps_per_epoch = (len(xtr) + args.batch_size - 1) // args.batch_size
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * steps_per_epoch)
    rng = np.random.default_rng(args.seed)
    xtr_t, ytr_t = torch.from_numpy(xtr), torch.from_numpy(ytr)
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        model.train()
        perm = torch.from_numpy(rng.permutation(len(xtr)))
        flips = torch.from_numpy(rng.random(len(xtr)) < 0.5)
        total = 0.0
        for i in range(0, len(xtr), args.batch_size):
            idx = perm[i : i + args.batch_size]
            xb = xtr_t[idx]
            xb = torch.where(flips[idx][:, None, None, None], xb.flip(3), xb)
            loss = nn.functional.cross_entropy(model(xb), ytr_t[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        print(f"epoch {epoch}: loss {total / len(xtr):.4f}, test accuracy {accuracy(model, xte, yte):.4f}, {time.time() - start:.0f} s", flush=True)
    train_s = time.time() - start

    model.eval()
    torch.onnx.export(
        model, (torch.zeros(1, 1, 28, 28),), args.out, opset_version=17,
        input_names=["input"], output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    onnx.checker.check_model(onnx.load(args.out), full_check=True)
    with open(args.out, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    ops = sorted({n.op_type for n in onnx.load(args.out).graph.node})
    acc = accuracy(model, xte, yte)
    print(f"trained in {train_s:.0f} s; {args.out}: {os.path.getsize(args.out)} bytes, sha256 {digest}, ops {', '.join(ops)}")
    print(f"PyTorch test accuracy {acc:.4f}")
    if not args.no_ort:
        logits = ort_logits(os.path.abspath(args.out), xte)
        with torch.no_grad():
            want = model(torch.from_numpy(xte)).numpy()
        pred = logits.argmax(1)
        print(f"ONNX Runtime test accuracy {(pred == yte).mean():.4f} ({(pred == yte).sum()} / {len(yte)}); "
              f"max |ORT - PyTorch| {np.abs(logits - want).max():.2g}, same predictions {(pred == want.argmax(1)).sum()} / {len(yte)}")


if __name__ == "__main__":
    sys.exit(main())
