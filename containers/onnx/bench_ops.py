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
U8, I8 = TensorProto.UINT8, TensorProto.INT8
NP = {F: np.float32, I64: np.int64, I32: np.int32, B: np.bool_, U8: np.uint8, I8: np.int8}
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

    def nodes(self):
        names = self.node_inputs if self.node_inputs is not None else [n for n, _, _ in self.inputs] + [n for n, _ in self.consts]
        return [helper.make_node(self.op, names, [n for n, _ in self.outputs], name=self.name, **self.attrs)]

    def model(self):
        ins = [helper.make_tensor_value_info(n, t, a.shape) for n, t, a in self.inputs]
        outs = [helper.make_tensor_value_info(n, t, None) for n, t in self.outputs]
        inits = [numpy_helper.from_array(a, n) for n, a in self.consts]
        g = helper.make_graph(self.nodes(), self.name, ins, outs, initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)], producer_name="bench_ops.py")
        m.ir_version = 8
        return m


class Graph(Entry):
    """An entry of several nodes (a sequence's producer and consumers): nodes
    is the list of NodeProtos, the first named after the entry."""

    def __init__(self, name, nodes, inputs, outputs, opset=17, consts=()):
        super().__init__(name, nodes[0].op_type, inputs, outputs, opset=opset, consts=consts)
        self.graph_nodes = nodes

    def nodes(self):
        return self.graph_nodes


def value(name, t):
    return helper.make_tensor_value_info(name, t, None)


def quantized(seed, shape, lo=0, hi=255, dtype=np.uint8):
    return rng(seed).integers(lo, hi + 1, shape).astype(dtype)


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
    # Quantized models (ORT's quantizer and PyTorch's QAT): a 3x3 convolution
    # of 64 channels on 56x56 (ResNet's first stage) and a BERT-base
    # projection of 8 x 128 tokens. The int8 weights are 7-bit (ORT's
    # quantizer's reduce_range), as ONNX Runtime's uint8 x int8 products on
    # AVX2 without VNNI saturate pairs of products in int16 otherwise.
    qx = quantized(100, (1, 64, 56, 56))
    qw = quantized(101, (64, 64, 3, 3), -64, 63, np.int8)
    wscale = rng(102).uniform(0.002, 0.01, 64).astype(np.float32)
    e.append(Entry("quantizelinear", "QuantizeLinear", [("x", F, normal(103, FMAP))], [("y", U8)], opset=13,
                   consts=[("s", np.array(0.02, np.float32)), ("z", np.array(128, np.uint8))]))
    e.append(Entry("dequantizelinear_axis", "DequantizeLinear", [("x", U8, quantized(104, FMAP))], [("y", F)], opset=13,
                   consts=[("s", rng(105).uniform(0.01, 0.05, 64).astype(np.float32)), ("z", quantized(106, (64,), 100, 150))],
                   attrs=dict(axis=1)))
    e.append(Entry("dynamicquantizelinear", "DynamicQuantizeLinear", [("x", F, normal(107, FMAP))],
                   [("y", U8), ("y_scale", F), ("y_zero_point", U8)], opset=11))
    e.append(Entry("qlinearconv", "QLinearConv", [("x", U8, qx)], [("y", U8)], opset=10,
                   consts=[("xs", np.array(0.02, np.float32)), ("xz", np.array(128, np.uint8)), ("w", qw), ("ws", wscale),
                           ("wz", np.zeros(64, np.int8)), ("ys", np.array(0.05, np.float32)), ("yz", np.array(128, np.uint8)),
                           ("b", rng(108).integers(-2000, 2000, 64).astype(np.int32))],
                   node_inputs=["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], attrs=dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])))
    e.append(Entry("qlinearmatmul", "QLinearMatMul", [("a", U8, quantized(109, (8, 128, 768)))], [("y", U8)], opset=10,
                   consts=[("as", np.array(0.02, np.float32)), ("az", np.array(128, np.uint8)),
                           ("b", quantized(110, (768, 768), -64, 63, np.int8)), ("bs", np.array(0.004, np.float32)),
                           ("bz", np.array(0, np.int8)), ("ys", np.array(0.5, np.float32)), ("yz", np.array(128, np.uint8))]))
    e.append(Entry("matmulinteger", "MatMulInteger", [("a", U8, quantized(111, (8, 128, 768)))], [("y", I32)], opset=10,
                   consts=[("b", quantized(112, (768, 768), -64, 63, np.int8)), ("az", np.array(128, np.uint8))],
                   node_inputs=["a", "b", "az"]))
    e.append(Entry("convinteger", "ConvInteger", [("x", U8, qx)], [("y", I32)], opset=10,
                   consts=[("w", quantized(113, (64, 64, 3, 3), 0, 127)), ("xz", np.array(128, np.uint8))],
                   node_inputs=["x", "w", "xz"], attrs=dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])))
    # Control flow: an If on a runtime condition whose branches read the
    # feature map of the main graph; a Loop of 16 iterations carrying a
    # 256x1024 sum and giving each iteration's as a scan output; a Scan that
    # is an RNN (64 steps of a batch of 16, 128 hidden units; its weight an
    # initializer of the main graph); Size; and a sequence split and
    # concatenated again, with an element taken from it.
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [value("t", F)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["o"])], "else", [], [value("o", F)])
    e.append(Entry("if", "If", [("cond", B, np.array(True)), ("x", F, normal(120, FMAP))], [("y", F)], opset=13,
                   node_inputs=["cond"], attrs=dict(then_branch=then, else_branch=other)))
    body = helper.make_graph([
        helper.make_node("Identity", ["c_in"], ["c_out"]),
        helper.make_node("Add", ["s_in", "x"], ["s_out"]),
        helper.make_node("Identity", ["s_out"], ["scan"]),
    ], "body", [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("c_in", B, []), value("s_in", F)],
        [helper.make_tensor_value_info("c_out", B, []), value("s_out", F), value("scan", F)])
    e.append(Entry("loop", "Loop", [("x", F, normal(121, (256, 1024))), ("s0", F, normal(122, (256, 1024)))],
                   [("s", F), ("all", F)], opset=13, consts=[("m", np.array(16, np.int64))],
                   node_inputs=["m", "", "s0"], attrs=dict(body=body)))
    step = helper.make_graph([
        helper.make_node("MatMul", ["h_in", "w"], ["hw"]),
        helper.make_node("Add", ["hw", "x_t"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["h_out"]),
        helper.make_node("Identity", ["h_out"], ["y_t"]),
    ], "step", [value("h_in", F), value("x_t", F)], [value("h_out", F), value("y_t", F)])
    e.append(Entry("scan", "Scan", [("h0", F, normal(123, (16, 128))), ("x", F, normal(124, (64, 16, 128)))],
                   [("h", F), ("y", F)], opset=11, consts=[("w", normal(125, (128, 128), 1 / np.sqrt(128)))],
                   node_inputs=["h0", "x"], attrs=dict(body=step, num_scan_inputs=1)))
    e.append(Entry("size", "Size", [("x", F, normal(126, FMAP))], [("n", I64)]))
    e.append(Graph("sequence", [
        helper.make_node("SplitToSequence", ["x"], ["seq"], name="sequence", axis=0, keepdims=0),
        helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0, new_axis=1),
        helper.make_node("SequenceAt", ["seq", "i"], ["z"]),
    ], [("x", F, normal(127, (64, 128, 128)))], [("y", F), ("z", F)], opset=13, consts=[("i", np.array(5, np.int64))]))
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
                np.save(f, np.array(a, dtype=NP[t], order="C"))  # not ascontiguousarray: it makes a scalar 1-D
            files.append(f)
        lines.append("\t".join([e.name, "op", path, ",".join(files)]))
    with open(os.path.join(args.out, "manifest.tsv.tmp"), "w") as f:
        f.write("".join(line + "\n" for line in lines))
    os.replace(os.path.join(args.out, "manifest.tsv.tmp"), os.path.join(args.out, "manifest.tsv"))
    print(f"bench_ops: {len(lines)} entries in {os.path.join(args.out, 'manifest.tsv')}")


if __name__ == "__main__":
    main()
