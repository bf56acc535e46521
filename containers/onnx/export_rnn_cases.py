#!/usr/bin/python3
"""Writes the recurrent and normalisation cases that ONNX's conformance data (Debian's
libonnx-testdata, ONNX 1.12) lacks, with ONNX Runtime's outputs: RNN, GRU and LSTM
reverse and bidirectional, with sequence_lens, initial states, every output, layout 1,
clip, activations with alpha and beta, linear_before_reset, peepholes and input_forget;
GroupNormalization 18 and 21; and two small sequence classifiers exported from
PyTorch (a bidirectional LSTM and a GRU, their sequences packed with
pack_padded_sequence, so that the export passes sequence_lens).

Each case is a directory of transforms/onnx/testdata/rnn/ in the layout of ONNX's test
data: model.onnx and test_data_set_0/input_N.pb, output_N.pb (ONNX TensorProtos),
the outputs ONNX Runtime's. TestRecurrentCases runs each on the CPU and on the
emulated device and holds it to them (1e-4 relative).

Run with Debian bookworm's Python (python3-onnx, python3-numpy, python3-torch; made
with onnx 1.12.0, torch 1.13 and onnxruntime-node 1.30.0 through
containers/onnx/ort.sh), from the repository root:

  /usr/bin/python3 containers/onnx/export_rnn_cases.py
"""

import io
import os
import shutil
import subprocess

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "transforms", "onnx", "testdata", "rnn")
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def rnn_case(rng, op, opset, seq, batch, inp, hidden, direction="forward", layout=0, lens=None, initial=False,
             bias=True, peep=False, outputs=("Y", "Y_h", "Y_c"), **attrs):
    """One recurrent node; its weights are initializers, X and the rest inputs."""
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    xs = [seq, batch, inp] if layout == 0 else [batch, seq, inp]
    hs = [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]
    inits = [onnx.numpy_helper.from_array((rng.standard_normal([dirs, g * hidden, inp]) * 0.5).astype(np.float32), "W"),
             onnx.numpy_helper.from_array((rng.standard_normal([dirs, g * hidden, hidden]) * 0.5).astype(np.float32), "R")]
    names, feeds, vinfo = ["X", "W", "R"], [(rng.standard_normal(xs)).astype(np.float32)], [helper.make_tensor_value_info("X", TensorProto.FLOAT, xs)]
    if bias:
        inits.append(onnx.numpy_helper.from_array((rng.standard_normal([dirs, 2 * g * hidden]) * 0.3).astype(np.float32), "B"))
        names.append("B")
    else:
        names.append("")
    if lens is not None:
        names.append("sequence_lens")
        feeds.append(np.array(lens, np.int32))
        vinfo.append(helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, [batch]))
    else:
        names.append("")
    if initial:
        names.append("initial_h")
        feeds.append(rng.standard_normal(hs).astype(np.float32))
        vinfo.append(helper.make_tensor_value_info("initial_h", TensorProto.FLOAT, hs))
        if op == "LSTM":
            names.append("initial_c")
            feeds.append(rng.standard_normal(hs).astype(np.float32))
            vinfo.append(helper.make_tensor_value_info("initial_c", TensorProto.FLOAT, hs))
    elif op == "LSTM" and peep:
        names += ["", ""]
    if peep:
        inits.append(onnx.numpy_helper.from_array((rng.standard_normal([dirs, 3 * hidden]) * 0.5).astype(np.float32), "P"))
        names.append("P")
    while names[-1] == "":
        names.pop()
    outs = [o for o in ("Y", "Y_h", "Y_c") if o in outputs and (o != "Y_c" or op == "LSTM")]
    node_outs = ["Y", "Y_h", "Y_c"][:max(["Y", "Y_h", "Y_c"].index(o) for o in outs) + 1]
    node_outs = [o if o in outs else "" for o in node_outs]
    if opset >= 14:
        attrs["layout"] = layout
    node = helper.make_node(op, names, node_outs, name=op.lower(), hidden_size=hidden, direction=direction, **attrs)
    graph = helper.make_graph([node], "case", vinfo, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="export_rnn_cases")
    model.ir_version = 8
    return model, feeds


def group_norm_case(rng, opset, shape, groups):
    per = shape[1] if opset >= 21 else groups
    node = helper.make_node("GroupNormalization", ["X", "scale", "bias"], ["Y"], name="groupnorm", num_groups=groups, epsilon=1e-3)
    inits = [onnx.numpy_helper.from_array(rng.standard_normal([per]).astype(np.float32), "scale"),
             onnx.numpy_helper.from_array(rng.standard_normal([per]).astype(np.float32), "bias")]
    graph = helper.make_graph([node], "case", [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="export_rnn_cases")
    model.ir_version = 8 if opset < 21 else 10
    return model, [(rng.standard_normal(shape) * 2 + 1).astype(np.float32)]


def torch_classifiers(rng):
    """A bidirectional LSTM and a GRU sequence classifier, exported by PyTorch with
    their padded batches packed (pack_padded_sequence), as users export them; the
    lengths sorted longest first (enforce_sorted=True: unsorted, the export adds TopK
    and ScatterElements to sort them)."""
    import torch
    from torch import nn

    torch.manual_seed(28)

    class Classifier(nn.Module):
        def __init__(self, cell, bidirectional):
            super().__init__()
            self.rnn = cell(8, 16, num_layers=1, batch_first=True, bidirectional=bidirectional)
            self.head = nn.Linear(16 * (2 if bidirectional else 1), 3)

        def forward(self, x, lengths):
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=True)
            _, h = self.rnn(packed)
            if isinstance(h, tuple):
                h = h[0]
            h = torch.cat([h[i] for i in range(h.shape[0])], dim=1)
            return self.head(h)

    out = {}
    for name, cell, bi in (("torch_lstm_bidirectional", nn.LSTM, True), ("torch_gru", nn.GRU, False)):
        m = Classifier(cell, bi).eval()
        x = torch.from_numpy(rng.standard_normal([4, 7, 8]).astype(np.float32))
        lengths = torch.tensor([7, 5, 3, 1], dtype=torch.int64)
        buf = io.BytesIO()
        torch.onnx.export(m, (x, lengths), buf, input_names=["x", "lengths"], output_names=["logits"], opset_version=14,
                          dynamic_axes={"x": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}})
        out[name] = (onnx.load_from_string(buf.getvalue()), [x.numpy(), lengths.numpy()])
    return out


def layout0_twin(model, feeds):
    """ONNX Runtime refuses layout=1 (batch first) for RNN, GRU and LSTM: its twin of
    layout 0 on the transposed inputs, whose outputs transpose back to layout 1's."""
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    node = twin.graph.node[0]
    for a in node.attribute:
        if a.name == "layout":
            a.i = 0
    tfeeds = []
    for v, f in zip(twin.graph.input, feeds):
        if v.name in ("X", "initial_h", "initial_c"):
            dims = v.type.tensor_type.shape.dim
            d0, d1 = dims[0].dim_value, dims[1].dim_value
            dims[0].dim_value, dims[1].dim_value = d1, d0
            f = np.ascontiguousarray(f.transpose(1, 0, 2))
        tfeeds.append(f)
    back = {"Y": (2, 0, 1, 3), "Y_h": (1, 0, 2), "Y_c": (1, 0, 2)}
    return twin, tfeeds, [back[o.name] for o in twin.graph.output]


def main():
    rng = np.random.default_rng(28)
    cases = {
        "lstm_bidirectional_all": rnn_case(rng, "LSTM", 14, 5, 3, 4, 6, "bidirectional", lens=[5, 2, 4], initial=True, peep=True),
        "lstm_reverse_layout1": rnn_case(rng, "LSTM", 14, 4, 2, 3, 5, "reverse", layout=1, lens=[3, 4], initial=True),
        "lstm_input_forget_clip": rnn_case(rng, "LSTM", 7, 6, 2, 3, 4, input_forget=1, clip=0.7, peep=True),
        "lstm_activations": rnn_case(rng, "LSTM", 7, 4, 2, 3, 4, activations=["HardSigmoid", "LeakyRelu", "ScaledTanh"],
                                     activation_alpha=[0.3, 0.05, 0.8], activation_beta=[0.4, 1.2]),
        "lstm_only_yc": rnn_case(rng, "LSTM", 14, 3, 2, 3, 4, "bidirectional", outputs=("Y_c",)),
        "gru_reverse_lbr": rnn_case(rng, "GRU", 14, 5, 3, 4, 6, "reverse", lens=[5, 3, 1], initial=True, linear_before_reset=1),
        "gru_bidirectional_layout1": rnn_case(rng, "GRU", 14, 4, 3, 3, 5, "bidirectional", layout=1, lens=[4, 2, 3], initial=True),
        "gru_activations_clip": rnn_case(rng, "GRU", 7, 4, 2, 3, 4, "bidirectional", clip=1.5,
                                         activations=["Sigmoid", "Elu", "HardSigmoid", "Softsign"], activation_alpha=[0.5, 0.25], activation_beta=[0.6]),
        "rnn_bidirectional_lens": rnn_case(rng, "RNN", 14, 5, 3, 4, 6, "bidirectional", lens=[2, 5, 3], initial=True),
        "rnn_reverse_relu_layout1": rnn_case(rng, "RNN", 14, 4, 2, 3, 5, "reverse", layout=1, activations=["Relu"], bias=False),
        "groupnorm18": group_norm_case(rng, 18, [2, 6, 4, 5], 3),
        "groupnorm21": group_norm_case(rng, 21, [2, 6, 7], 2),
    }
    cases.update(torch_classifiers(rng))
    ort = os.path.join(ROOT, "containers", "onnx", "ort.sh")
    js = os.path.join(ROOT, "containers", "onnx", "ort_run.js")
    shutil.rmtree(OUT, ignore_errors=True)
    for name, (model, feeds) in cases.items():
        d = os.path.join(OUT, name)
        sets = os.path.join(d, "test_data_set_0")
        os.makedirs(sets)
        onnx.save(model, os.path.join(d, "model.onnx"))
        for i, (v, feed) in enumerate(zip(model.graph.input, feeds)):
            with open(os.path.join(sets, f"input_{i}.pb"), "wb") as f:
                f.write(onnx.numpy_helper.from_array(feed, v.name).SerializeToString())
        ref, rfeeds, back = model, feeds, None
        if any(a.name == "layout" and a.i == 1 for n in model.graph.node for a in n.attribute):
            ref, rfeeds, back = layout0_twin(model, feeds)
        tmp = os.path.join(d, "ort")
        os.makedirs(tmp)
        onnx.save(ref, os.path.join(tmp, "model.onnx"))
        args = [ort, "--quiet", "--", js, "run", os.path.join(tmp, "model.onnx")]
        for i, (v, feed) in enumerate(zip(ref.graph.input, rfeeds)):
            p = os.path.join(tmp, f"input_{i}.pb")
            with open(p, "wb") as f:
                f.write(onnx.numpy_helper.from_array(feed, v.name).SerializeToString())
            args += ["--in", p]
        for i in range(len(model.graph.output)):
            args += ["--out", os.path.join(tmp, f"output_{i}.pb")]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        for i, o in enumerate(model.graph.output):
            y = onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(tmp, f"output_{i}.pb")))
            if back:
                y = np.ascontiguousarray(y.transpose(back[i]))
            with open(os.path.join(sets, f"output_{i}.pb"), "wb") as f:
                f.write(onnx.numpy_helper.from_array(y, o.name).SerializeToString())
        shutil.rmtree(tmp)
        print(name, [onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(sets, f"output_{i}.pb"))).shape for i in range(len(model.graph.output))])


if __name__ == "__main__":
    main()
