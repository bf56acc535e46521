#!/usr/bin/python3
"""Writes a small model with control flow, exported by PyTorch from a TorchScript
module (torch.jit.script, as users export models whose Python has loops and
branches), with ONNX Runtime's outputs: a Loop whose trip count comes from the
input's shape and whose body reads the main graph's weights and input (outer scope)
and holds an If on data, then an If on data whose branches read the Loop's output
and the head's weights. It is exported at opsets 11 and 16 (If and Loop 11, and 16).

Each case is a directory of transforms/onnx/testdata/flow/ in the layout of ONNX's
test data: model.onnx and test_data_set_N/input_0.pb, output_0.pb (ONNX
TensorProtos), the outputs ONNX Runtime's; set 0's input sums above 0 and set 1's
below, so that both branches of the last If run. TestControlFlowModels runs each on
the CPU and on the emulated device and holds it to them (1e-4 relative).

Run with Debian bookworm's Python (python3-onnx, python3-numpy, python3-torch; made
with onnx 1.12.0, torch 1.13 and onnxruntime-node 1.30.0 through
containers/onnx/ort.sh), from the repository root:

  /usr/bin/python3 containers/onnx/export_flow_cases.py
"""

import io
import os
import shutil
import subprocess

import numpy as np
import onnx
import onnx.numpy_helper
import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "transforms", "onnx", "testdata", "flow")


class Flow(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        h = x
        for i in range(x.size(1) // 2):
            h = torch.tanh(self.lin(h)) + x * 0.1 * float(i)
            if bool(h.mean() > 0.0):
                h = h * 0.5
            else:
                h = h - 0.25
        if bool(x.sum() > 0.0):
            y = self.head(h)
        else:
            y = -self.head(h)
        return y


def main():
    torch.manual_seed(28)
    rng = np.random.default_rng(28)
    module = torch.jit.script(Flow().eval())
    x = rng.standard_normal([3, 8]).astype(np.float32)
    feeds = [np.abs(x) + 0.1, -np.abs(x) - 0.1]
    ort = os.path.join(ROOT, "containers", "onnx", "ort.sh")
    js = os.path.join(ROOT, "containers", "onnx", "ort_run.js")
    shutil.rmtree(OUT, ignore_errors=True)
    for opset in (11, 16):
        name = f"torch_if_loop_opset{opset}"
        buf = io.BytesIO()
        torch.onnx.export(module, (torch.from_numpy(feeds[0]),), buf, input_names=["x"], output_names=["y"],
                          opset_version=opset, dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
        model = onnx.load_from_string(buf.getvalue())
        d = os.path.join(OUT, name)
        os.makedirs(d)
        onnx.save(model, os.path.join(d, "model.onnx"))
        for s, feed in enumerate(feeds):
            sets = os.path.join(d, f"test_data_set_{s}")
            os.makedirs(sets)
            inp, out = os.path.join(sets, "input_0.pb"), os.path.join(sets, "output_0.pb")
            with open(inp, "wb") as f:
                f.write(onnx.numpy_helper.from_array(feed, "x").SerializeToString())
            subprocess.run([ort, "--quiet", "--", js, "run", os.path.join(d, "model.onnx"), "--in", inp, "--out", out],
                           check=True, stdout=subprocess.DEVNULL)
            y = onnx.numpy_helper.to_array(onnx.load_tensor(out))
            with torch.no_grad():
                want = module(torch.from_numpy(feed)).numpy()
            assert np.allclose(y, want, rtol=1e-4, atol=1e-6), (name, s, y, want)
            print(name, s, y.shape)


if __name__ == "__main__":
    main()
