#!/usr/bin/python3
"""Writes a small model with control flow, exported by PyTorch from a TorchScript
module (torch.jit.script, as users export models whose Python has loops and
branches), with ONNX Runtime's outputs: a Loop whose trip count comes from the
input's shape and whose body reads the main graph's weights and input (outer scope)
and holds an If on data, then an If on data whose branches read the Loop's output
and the head's weights. It is exported at opsets 11 and 16 (If and Loop 11, and 16).
And a recurrent cell run by a Python loop that appends each step's state to a list,
then stacks (torch.stack) and concatenates (torch.cat) the list: PyTorch writes the
list as a sequence (SequenceEmpty, SequenceInsert in the Loop's body,
ConcatFromSequence after it), which the runtime holds as a scan output of the Loop.
And a loop over torch.unbind's slices and the first and last of torch.split's chunks
(SplitToSequence, SequenceLength as the trip count, SequenceAt in the body and after).

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
from typing import List

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


class ListLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, x):
        h = x[:, 0]
        outs: List[torch.Tensor] = []
        for t in range(x.size(1)):
            h = torch.tanh(self.cell(h) + x[:, t])
            outs.append(h)
        return torch.stack(outs, 1), torch.cat(outs, 1)


class Unbind(nn.Module):
    def forward(self, x):
        acc = torch.zeros_like(x[:, 0])
        for xt in x.unbind(1):
            acc = acc * 0.5 + xt
        parts = torch.split(x, 2, 1)
        return acc, parts[0] + parts[-1]


def main():
    torch.manual_seed(28)
    rng = np.random.default_rng(28)
    flow = torch.jit.script(Flow().eval())
    lists = torch.jit.script(ListLoop().eval())
    unbind = torch.jit.script(Unbind().eval())
    x = rng.standard_normal([3, 8]).astype(np.float32)
    flow_feeds = [np.abs(x) + 0.1, -np.abs(x) - 0.1]
    list_feeds = [rng.standard_normal([2, 5, 8]).astype(np.float32), rng.standard_normal([3, 2, 8]).astype(np.float32)]
    cases = [("torch_if_loop_opset11", flow, 11, flow_feeds, ["y"], {"x": {0: "batch"}, "y": {0: "batch"}}),
             ("torch_if_loop_opset16", flow, 16, flow_feeds, ["y"], {"x": {0: "batch"}, "y": {0: "batch"}}),
             ("torch_list_loop_opset16", lists, 16, list_feeds, ["y", "z"], {"x": {0: "batch", 1: "seq"}}),
             ("torch_unbind_split_opset16", unbind, 16, [list_feeds[0][:, :4], list_feeds[1][:, :2]], ["y", "z"],
              {"x": {0: "batch", 1: "seq"}})]
    ort = os.path.join(ROOT, "containers", "onnx", "ort.sh")
    js = os.path.join(ROOT, "containers", "onnx", "ort_run.js")
    shutil.rmtree(OUT, ignore_errors=True)
    for name, module, opset, feeds, outputs, axes in cases:
        buf = io.BytesIO()
        torch.onnx.export(module, (torch.from_numpy(feeds[0]),), buf, input_names=["x"], output_names=outputs,
                          opset_version=opset, dynamic_axes=axes)
        model = onnx.load_from_string(buf.getvalue())
        d = os.path.join(OUT, name)
        os.makedirs(d)
        onnx.save(model, os.path.join(d, "model.onnx"))
        for s, feed in enumerate(feeds):
            sets = os.path.join(d, f"test_data_set_{s}")
            os.makedirs(sets)
            inp = os.path.join(sets, "input_0.pb")
            with open(inp, "wb") as f:
                f.write(onnx.numpy_helper.from_array(feed, "x").SerializeToString())
            args = [ort, "--quiet", "--", js, "run", os.path.join(d, "model.onnx"), "--in", inp]
            for i in range(len(outputs)):
                args += ["--out", os.path.join(sets, f"output_{i}.pb")]
            subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
            with torch.no_grad():
                want = module(torch.from_numpy(feed))
            if not isinstance(want, tuple):
                want = (want,)
            for i, w in enumerate(want):
                y = onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(sets, f"output_{i}.pb")))
                assert np.allclose(y, w.numpy(), rtol=1e-4, atol=1e-6), (name, s, i, y, w)
                print(name, s, i, y.shape)


if __name__ == "__main__":
    main()
