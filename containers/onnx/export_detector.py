#!/usr/bin/python3
"""Writes a small FPN detector exported from PyTorch with its post-processing, and ONNX
Runtime's outputs for a few images: the detector family that satellite-image and OCR jobs
run (https://cloud.google.com/dataflow/docs/samples/satellite-images-gpus).

The model (TinyFPNDetector): a three-stage convolutional backbone, a feature pyramid whose
top level is upsampled (Resize, nearest) and added to the level below, a class head and a
box head on both levels with anchors, then the post-processing as torchvision writes it:
sigmoid scores, the best class of each anchor, TopK of the 200 best, the boxes decoded
from the anchors, a score threshold (boolean indexing: NonZero) and torchvision's
batched_nms (NonMaxSuppression, per class by the coordinate offset), the 100 best kept.
Its outputs (boxes [K, 4], scores [K], labels [K]) have as many rows as the image has
detections: their shapes depend on the data.

The weights are random but the heads' biases are set so that a few per cent of the
anchors score above the threshold, and BatchNorm's statistics are recalibrated on random
batches (as the bench models), so that the image's detections are many and differ from
image to image. Each image is a directory of transforms/onnx/testdata/detector/ in the
layout of ONNX's test data: model.onnx (shared, in the directory above) and
test_data_set_N/input_0.pb, output_{0,1,2}.pb (ONNX Runtime's outputs). TestDetector
holds the runtime to them on the CPU and on the emulated device.

Run with Debian bookworm's Python (python3-torch, python3-torchvision, python3-onnx;
made with torch 1.13, torchvision 0.14, onnx 1.12.0 and onnxruntime-node 1.30.0 through
containers/onnx/ort.sh), from the repository root:

  /usr/bin/python3 containers/onnx/export_detector.py
"""

import io
import os
import shutil
import subprocess

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torchvision
from torch import nn
from torch.nn import functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "transforms", "onnx", "testdata", "detector")
SIZE, CLASSES, ANCHORS = 96, 3, 3


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


def anchors(stride, size):
    """ANCHORS boxes (x1, y1, x2, y2) per cell of a size x size grid, cell-major."""
    out = []
    for y in range(size):
        for x in range(size):
            cx, cy = (x + 0.5) * stride, (y + 0.5) * stride
            for s in (1.0, 2.0, 3.0):
                w = h = stride * s
                out.append([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
    return torch.tensor(out, dtype=torch.float32)


class TinyFPNDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2, self.c3 = block(3, 8), block(8, 16), block(16, 32)
        self.lat2, self.lat3 = nn.Conv2d(16, 16, 1), nn.Conv2d(32, 16, 1)
        self.cls = nn.Conv2d(16, ANCHORS * CLASSES, 3, 1, 1)
        self.box = nn.Conv2d(16, ANCHORS * 4, 3, 1, 1)
        nn.init.normal_(self.cls.weight, std=0.15)
        nn.init.constant_(self.cls.bias, -2.5)
        self.register_buffer("anchors", torch.cat([anchors(4, SIZE // 4), anchors(8, SIZE // 8)]))

    def head(self, p):
        n = p.shape[0]
        cls = self.cls(p).permute(0, 2, 3, 1).reshape(n, -1, CLASSES)
        box = self.box(p).permute(0, 2, 3, 1).reshape(n, -1, 4)
        return cls, box

    def forward(self, x):
        c2 = self.c2(self.c1(x))
        c3 = self.c3(c2)
        p3 = self.lat3(c3)
        p2 = self.lat2(c2) + F.interpolate(p3, scale_factor=2.0, mode="nearest")
        cls2, box2 = self.head(p2)
        cls3, box3 = self.head(p3)
        logits = torch.cat([cls2, cls3], 1)[0]
        deltas = torch.cat([box2, box3], 1)[0]
        scores, labels = torch.sigmoid(logits).max(1)
        top, idx = scores.topk(200)
        a, d = self.anchors[idx], deltas[idx] * 0.1
        wa, ha = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
        cx, cy = (a[:, 0] + a[:, 2]) / 2 + d[:, 0] * wa, (a[:, 1] + a[:, 3]) / 2 + d[:, 1] * ha
        w, h = wa * torch.exp(d[:, 2]), ha * torch.exp(d[:, 3])
        boxes = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1)
        keep = top > 0.2
        boxes, top, labels = boxes[keep], top[keep], labels[idx][keep]
        keep = torchvision.ops.batched_nms(boxes, top, labels, 0.4)[:100]
        return boxes[keep], top[keep], labels[keep]


def recalibrate(m, rng):
    """BatchNorm statistics from random batches (train mode, no gradients)."""
    m.train()
    with torch.no_grad():
        for _ in range(4):
            m(torch.from_numpy(rng.standard_normal((1, 3, SIZE, SIZE), dtype=np.float32)))
    m.eval()


def main():
    torch.manual_seed(28)
    rng = np.random.default_rng(28)
    m = TinyFPNDetector()
    recalibrate(m, rng)
    x = torch.from_numpy(rng.standard_normal((1, 3, SIZE, SIZE), dtype=np.float32))
    buf = io.BytesIO()
    torch.onnx.export(m, (x,), buf, input_names=["image"], output_names=["boxes", "scores", "labels"], opset_version=11,
                      dynamic_axes={"boxes": [0], "scores": [0], "labels": [0]})
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    path = os.path.join(OUT, "model.onnx")
    onnx.save(model, path)
    ort = os.path.join(ROOT, "containers", "onnx", "ort.sh")
    js = os.path.join(ROOT, "containers", "onnx", "ort_run.js")
    for k in range(4):
        sets = os.path.join(OUT, f"test_data_set_{k}")
        os.makedirs(sets)
        img = rng.standard_normal((1, 3, SIZE, SIZE), dtype=np.float32) * (0.7 + 0.15 * k)
        inp = os.path.join(sets, "input_0.pb")
        with open(inp, "wb") as f:
            f.write(onnx.numpy_helper.from_array(img, "image").SerializeToString())
        args = [ort, "--quiet", "--", js, "run", path, "--in", inp]
        for i in range(3):
            args += ["--out", os.path.join(sets, f"output_{i}.pb")]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        with torch.no_grad():
            want = m(torch.from_numpy(img))
        for i, o in enumerate(model.graph.output):
            y = onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(sets, f"output_{i}.pb")))
            assert y.shape == tuple(want[i].shape), (k, o.name, y.shape, want[i].shape)
        print(f"image {k}: {len(want[0])} detections")
    print("operators:", sorted({n.op_type for n in model.graph.node}), os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
