#!/usr/bin/python3
"""Writes the single-operator models of `make bench-onnx BENCH_ONNX=ops` into a cache directory.

One model per entry, each a single node (GRU and LSTM with their weights as
initializers) written with onnx.helper, at a size the models users bring give
the operator: a Resize of a 1x64x128x128 feature map, an LSTM of 64 steps of a
batch of 16 with 128 hidden units, a NonMaxSuppression of 4 classes of 3,000
boxes, and so on (the ENTRIES table below says each). The inputs are seeded
random .npy files, one per graph input; every graph input is a runtime input
(NonZero's and NonMaxSuppression's too, so their output shapes come from the
values of the run).

The manifest, manifest.tsv, has the format of containers/onnx/bench_models.py's
(NAME <TAB> LABEL <TAB> MODEL <TAB> INPUT[,INPUT...]), LABEL being "op".

    /usr/bin/python3 containers/onnx/bench_ops.py --out DIR

Needs numpy and onnx (Debian's python3-onnx). The models leave their outputs'
shapes unsaid and Gelu's takes opset 20, which onnx 1.12 does not know, so
onnx's checker is not run: both runtimes check a model as they load it. An
existing file is kept.
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64, I32, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL
NP = {F: np.float32, I64: np.int64, I32: np.int32, B: np.bool_}
FMAP = (1, 64, 128, 128)  # a feature map: the elementwise operators' input


def rng(seed):
    return np.random.default_rng(seed)


def normal(seed, shape, scale=1.0):
    return (scale * rng(seed).standard_normal(shape)).astype(np.float32)


class Entry:
    """One single-node model: inputs (name, type, array), constant initializers
    (name, array), the node's op and attributes, its outputs and the opset."""

    def __init__(self, name, op, inputs, outputs, opset=17, consts=(), attrs=None, node_inputs=None):
        self.name, self.op, self.inputs, self.outputs = name, op, inputs, outputs
        self.opset, self.consts, self.attrs = opset, list(consts), attrs or {}
        self.node_inputs = node_inputs

    def model(self):
        ins = [helper.make_tensor_value_info(n, t, a.shape) for n, t, a in self.inputs]
        outs = [helper.make_tensor_value_info(n, t, None) for n, t in self.outputs]
        inits = [numpy_helper.from_array(a, n) for n, a in self.consts]
        names = self.node_inputs if self.node_inputs is not None else [n for n, _, _ in self.inputs] + [n for n, _ in self.consts]
        node = helper.make_node(self.op, names, [n for n, _ in self.outputs], name=self.name, **self.attrs)
        g = helper.make_graph([node], self.name, ins, outs, initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)], producer_name="bench_ops.py")
        m.ir_version = 8
        return m


def unary(name, op, seed, opset=17, scale=3.0, **attrs):
    return Entry(name, op, [("x", F, normal(seed, FMAP, scale))], [("y", F)], opset=opset, attrs=attrs)


def recurrent(name, op, seed, gates, seq=64, batch=16, inp=128, hidden=128, dirs=1, **attrs):
    s = 1 / np.sqrt(hidden)
    r = rng(seed)
    w = r.uniform(-s, s, (dirs, gates * hidden, inp)).astype(np.float32)
    rr = r.uniform(-s, s, (dirs, gates * hidden, hidden)).astype(np.float32)
    b = r.uniform(-s, s, (dirs, 2 * gates * hidden)).astype(np.float32)
    lens = r.integers(seq // 2, seq + 1, batch).astype(np.int32)
    lens[0] = seq
    x = normal(seed + 1, (seq, batch, inp))
    if dirs == 2:
        attrs["direction"] = "bidirectional"
    return Entry(
        name, op, [("x", F, x), ("sequence_lens", I32, lens)], [("y", F), ("y_h", F)], opset=14,
        consts=[("w", w), ("r", rr), ("b", b)], attrs=dict(hidden_size=hidden, **attrs),
        node_inputs=["x", "w", "r", "b", "sequence_lens"],
    )


def boxes(seed, n):
    r = rng(seed)
    xy = r.uniform(0, 600, (n, 2))
    wh = r.uniform(8, 120, (n, 2))
    return np.concatenate([xy, xy + wh], axis=1).astype(np.float32)


def entries():
    e = []
    # Upsampling and transposed convolution (a U-Net's or an FPN's decoder).
    sc = np.array([1, 1, 2, 2], np.float32)
    e.append(Entry("resize_linear", "Resize", [("x", F, normal(1, FMAP))], [("y", F)], opset=13,
                   consts=[("roi", np.zeros(0, np.float32)), ("scales", sc)], node_inputs=["x", "roi", "scales"],
                   attrs=dict(mode="linear", coordinate_transformation_mode="half_pixel")))
    e.append(Entry("resize_linear_align", "Resize", [("x", F, normal(2, FMAP))], [("y", F)], opset=13,
                   consts=[("roi", np.zeros(0, np.float32)), ("scales", sc)], node_inputs=["x", "roi", "scales"],
                   attrs=dict(mode="linear", coordinate_transformation_mode="align_corners")))
    e.append(Entry("resize_nearest", "Resize", [("x", F, normal(3, FMAP))], [("y", F)], opset=13,
                   consts=[("roi", np.zeros(0, np.float32)), ("scales", sc)], node_inputs=["x", "roi", "scales"],
                   attrs=dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")))
    e.append(Entry("resize_cubic", "Resize", [("x", F, normal(4, (1, 16, 128, 128)))], [("y", F)], opset=13,
                   consts=[("roi", np.zeros(0, np.float32)), ("scales", sc)], node_inputs=["x", "roi", "scales"],
                   attrs=dict(mode="cubic", coordinate_transformation_mode="half_pixel")))
    e.append(Entry("upsample_nearest", "Upsample", [("x", F, normal(5, FMAP))], [("y", F)], opset=9,
                   consts=[("scales", sc)], attrs=dict(mode="nearest")))
    e.append(Entry("convtranspose_k2s2", "ConvTranspose", [("x", F, normal(6, (1, 64, 64, 64)))], [("y", F)],
                   consts=[("w", normal(7, (64, 32, 2, 2), 0.1)), ("b", normal(8, (32,), 0.1))],
                   attrs=dict(kernel_shape=[2, 2], strides=[2, 2])))
    e.append(Entry("convtranspose_k4s2", "ConvTranspose", [("x", F, normal(9, (1, 64, 64, 64)))], [("y", F)],
                   consts=[("w", normal(10, (64, 32, 4, 4), 0.1)), ("b", normal(11, (32,), 0.1))],
                   attrs=dict(kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1])))
    e.append(Entry("depthtospace", "DepthToSpace", [("x", F, normal(12, (1, 256, 64, 64)))], [("y", F)], opset=13,
                   attrs=dict(blocksize=2, mode="DCR")))
    e.append(Entry("spacetodepth", "SpaceToDepth", [("x", F, normal(13, FMAP))], [("y", F)], opset=13,
                   attrs=dict(blocksize=2)))
    # Detection: a YOLO-style head of 8,400 anchors and 80 classes, boxes.
    e.append(Entry("topk", "TopK", [("x", F, normal(14, (80, 8400)))], [("values", F), ("indices", I64)],
                   consts=[("k", np.array([100], np.int64))], attrs=dict(axis=-1)))
    e.append(Entry("nonmaxsuppression", "NonMaxSuppression",
                   [("boxes", F, boxes(15, 3000)[None]), ("scores", F, rng(16).uniform(0, 1, (1, 4, 3000)).astype(np.float32))],
                   [("selected", I64)],
                   consts=[("max_out", np.array([200], np.int64)), ("iou", np.array([0.5], np.float32)),
                           ("score", np.array([0.05], np.float32))]))
    e.append(Entry("argmax", "ArgMax", [("x", F, normal(17, (4, 80, 8400)))], [("y", I64)], attrs=dict(axis=1, keepdims=0)))
    e.append(Entry("argmin", "ArgMin", [("x", F, normal(18, (4, 80, 8400)))], [("y", I64)], attrs=dict(axis=1, keepdims=0)))
    e.append(Entry("gatherelements", "GatherElements",
                   [("x", F, normal(19, (256, 2048))), ("i", I64, rng(20).integers(0, 2048, (256, 2048)))], [("y", F)],
                   attrs=dict(axis=1)))
    e.append(Entry("gathernd", "GatherND",
                   [("x", F, normal(21, (8, 8400, 85))), ("i", I64, rng(22).integers(0, 8400, (8, 1000, 1)))], [("y", F)],
                   attrs=dict(batch_dims=1)))
    e.append(Entry("scatternd", "ScatterND",
                   [("x", F, normal(23, (4096, 256))), ("i", I64, rng(24).permutation(4096)[:2048].reshape(2048, 1)),
                    ("u", F, normal(25, (2048, 256)))], [("y", F)]))
    e.append(Entry("scatterelements", "ScatterElements",
                   [("x", F, normal(26, (256, 2048))),
                    ("i", I64, np.stack([rng(27 + r).permutation(2048)[:512] for r in range(256)])),
                    ("u", F, normal(28, (256, 512)))], [("y", F)], attrs=dict(axis=1)))
    sparse = normal(29, (1, 16, 128, 128))
    sparse[rng(30).uniform(0, 1, sparse.shape) > 0.1] = 0
    e.append(Entry("nonzero", "NonZero", [("x", F, sparse)], [("y", I64)]))
    rois = boxes(31, 1000) / 8  # in the 1/8 feature map's pixels
    e.append(Entry("roialign", "RoiAlign",
                   [("x", F, normal(32, (1, 256, 80, 80))), ("rois", F, rois), ("idx", I64, np.zeros(1000, np.int64))],
                   [("y", F)], opset=16,
                   attrs=dict(output_height=7, output_width=7, sampling_ratio=2, spatial_scale=1.0,
                              coordinate_transformation_mode="half_pixel")))
    e.append(Entry("tile", "Tile", [("x", F, normal(33, (1, 64, 64, 64)))], [("y", F)],
                   consts=[("repeats", np.array([2, 1, 2, 2], np.int64))]))
    e.append(Entry("mod_fmod", "Mod", [("a", F, normal(34, FMAP, 10)), ("b", F, rng(35).uniform(0.5, 3, FMAP).astype(np.float32))],
                   [("y", F)], attrs=dict(fmod=1)))
    e.append(Entry("mod_int64", "Mod", [("a", I64, rng(36).integers(-100000, 100000, FMAP)), ("b", I64, rng(37).integers(1, 1000, FMAP))],
                   [("y", I64)]))
    for i, op in enumerate(["Floor", "Ceil", "Round", "Sin", "Cos"]):
        e.append(unary(op.lower(), op, 40 + i))
    e.append(Entry("cumsum", "CumSum", [("x", F, normal(45, (64, 16384)))], [("y", F)],
                   consts=[("axis", np.array(1, np.int64))]))
    e.append(Entry("onehot", "OneHot", [("i", I64, rng(46).integers(0, 1000, (8, 512)))], [("y", F)],
                   consts=[("depth", np.array([1000], np.int64)), ("values", np.array([0, 1], np.float32))], attrs=dict(axis=-1)))
    e.append(Entry("trilu", "Trilu", [("x", F, normal(47, (8, 512, 512)))], [("y", F)], attrs=dict(upper=0)))
    # Einsum as exporters write it: attention's products and a batched product.
    e.append(Entry("einsum_qk", "Einsum", [("q", F, normal(48, (8, 12, 128, 64))), ("k", F, normal(49, (8, 12, 128, 64)))],
                   [("y", F)], opset=12, attrs=dict(equation="bhid,bhjd->bhij")))
    e.append(Entry("einsum_av", "Einsum", [("a", F, normal(50, (8, 12, 128, 128))), ("v", F, normal(51, (8, 12, 128, 64)))],
                   [("y", F)], opset=12, attrs=dict(equation="bhij,bhjd->bhid")))
    e.append(Entry("einsum_bmm", "Einsum", [("a", F, normal(52, (16, 256, 256))), ("b", F, normal(53, (16, 256, 256)))],
                   [("y", F)], opset=12, attrs=dict(equation="bij,bjk->bik")))
    # Recurrent: 64 steps of a batch of 16, 128 inputs and hidden units, rows
    # of different lengths (sequence_lens).
    e.append(recurrent("lstm", "LSTM", 60, 4))
    e.append(recurrent("lstm_bidirectional", "LSTM", 62, 4, dirs=2))
    e.append(recurrent("gru", "GRU", 64, 3, linear_before_reset=1))
    e.append(recurrent("gru_bidirectional", "GRU", 66, 3, dirs=2, linear_before_reset=1))
    e.append(recurrent("rnn", "RNN", 68, 1))
    # Normalisations and activations of newer exporters.
    nmap = (8, 64, 64, 64)
    e.append(Entry("instancenorm", "InstanceNormalization", [("x", F, normal(70, nmap))], [("y", F)],
                   consts=[("s", normal(71, (64,))), ("b", normal(72, (64,)))], attrs=dict(epsilon=1e-5)))
    e.append(Entry("groupnorm", "GroupNormalization", [("x", F, normal(73, nmap))], [("y", F)], opset=18,
                   consts=[("s", normal(74, (8,))), ("b", normal(75, (8,)))], attrs=dict(num_groups=8, epsilon=1e-5)))
    e.append(unary("gelu", "Gelu", 76, opset=20))
    e.append(unary("gelu_tanh", "Gelu", 77, opset=20, approximate="tanh"))
    for i, op in enumerate(["Mish", "Softplus", "Softsign", "Selu", "Celu", "ThresholdedRelu"]):
        e.append(unary(op.lower(), op, 80 + i, opset=18 if op == "Mish" else 17))
    e.append(Entry("prelu", "PRelu", [("x", F, normal(90, FMAP))], [("y", F)],
                   consts=[("slope", rng(91).uniform(0, 0.3, (64, 1, 1)).astype(np.float32))]))
    e.append(Entry("hardmax", "Hardmax", [("x", F, normal(92, (1024, 1000)))], [("y", F)], attrs=dict(axis=-1)))
    e.append(Entry("reducelogsumexp", "ReduceLogSumExp", [("x", F, normal(93, (256, 4096)))], [("y", F)],
                   consts=[("axes", np.array([-1], np.int64))], opset=18, attrs=dict(keepdims=1)))
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="the directory to write the models, inputs and manifest.tsv into")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lines = []
    for e in entries():
        path = os.path.join(args.out, e.name + ".onnx")
        if not os.path.exists(path):
            onnx.save(e.model(), path + ".tmp")
            os.replace(path + ".tmp", path)
        files = []
        for i, (_, t, a) in enumerate(e.inputs):
            f = os.path.join(args.out, f"{e.name}.input{i}.npy")
            if not os.path.exists(f):
                np.save(f, np.ascontiguousarray(a, dtype=NP[t]))
            files.append(f)
        lines.append("\t".join([e.name, "op", path, ",".join(files)]))
    with open(os.path.join(args.out, "manifest.tsv.tmp"), "w") as f:
        f.write("".join(line + "\n" for line in lines))
    os.replace(os.path.join(args.out, "manifest.tsv.tmp"), os.path.join(args.out, "manifest.tsv"))
    print(f"bench_ops: {len(lines)} entries in {os.path.join(args.out, 'manifest.tsv')}")


if __name__ == "__main__":
    main()
