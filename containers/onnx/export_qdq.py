#!/usr/bin/python3
"""Writes the QDQ-quantized CNN that beamgpu's ONNX runtime is held to ONNX Runtime on.

A small CNN with seeded random weights, quantized as ONNX Runtime's static
quantizer writes a model in its QDQ format (opset 13): every activation is
QuantizeLinear then DequantizeLinear (uint8, asymmetric, its range from a
calibration batch), every weight a DequantizeLinear of int8 constants
(symmetric, 7 bits as with the quantizer's reduce_range: see W_MAX; per
output channel for three of the convolutions, per tensor for the others), every bias a DequantizeLinear of int32 with scale
x_scale x w_scale and zero point 0; a ReLU is folded into the range of the
QuantizeLinear after its convolution (range [0, max], zero point 0), as the
quantizer does. onnxruntime's Python quantizer is not packaged for Debian, so
the graph is written here with onnx.helper from the float weights.

  x float32 [N, 3, 16, 16]
  -> Q/DQ -> Conv 3->8, 3x3, pad 1 (+ReLU)      per-channel weights, bias
  -> Q/DQ -> Conv 8->16, 3x3, stride 2, pad 1 (+ReLU)   per-channel, bias
  -> Q/DQ -> Conv 16->16, 1x1 (no ReLU, zero point != 0) per-tensor, no bias
  -> Q/DQ -> Conv 16->16, 3x3, stride 2, pad 1, group 16 (+ReLU) per-channel, bias
  -> Q -> Reshape [N, 256] (uint8) -> DQ -> MatMul 256->10 (per-tensor) -> Q -> DQ
  outputs: logits (float32 [N, 10]) and logits_q (its uint8 values)

Run with Debian bookworm's Python (apt-get install python3-torch python3-onnx;
the committed files were made with torch 1.13.0a0, onnx 1.12.0, numpy 1.24.2
and onnxruntime-node 1.30.0 through containers/onnx/ort.sh), from the
repository root:

  /usr/bin/python3 containers/onnx/export_qdq.py

It writes to transforms/onnx/testdata/quant/: qdq-cnn.onnx, qdq-cnn.input.pb
(a batch of 4) and ONNX Runtime's outputs for it, qdq-cnn.logits.pb and
qdq-cnn.logits_q.pb (containers/onnx/ort_run.js). It prints how far ONNX
Runtime's quantized logits are from the same graph computed in float32 by
PyTorch (dequantize, float convolution, quantize: the model as written), in
quanta.
"""

import os
import subprocess

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "transforms", "onnx", "testdata", "quant")

# The convolutions: (name, in, out, kernel, stride, pad, group, relu, per_channel, bias).
CONVS = [
    ("c1", 3, 8, 3, 1, 1, 1, True, True, True),
    ("c2", 8, 16, 3, 2, 1, 1, True, True, True),
    ("c3", 16, 16, 1, 1, 0, 1, False, False, False),
    ("c4", 16, 16, 3, 2, 1, 16, True, True, True),
]
FC_IN, FC_OUT = 16 * 4 * 4, 10


def f32(x):
    return np.asarray(x, dtype=np.float32)


def act_params(lo, hi):
    """uint8 asymmetric scale and zero point for the range [lo, hi] widened to hold 0."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = f32((hi - lo) / 255.0)
    zp = int(np.clip(np.rint(-lo / scale), 0, 255))
    return scale, np.uint8(zp)


def quantize(x, scale, zp, lo=0, hi=255):
    return np.clip(np.rint(f32(x) / scale) + np.float32(zp), lo, hi)


def fake_quant(x, scale, zp):
    """QuantizeLinear then DequantizeLinear (uint8), in float32."""
    return (f32(quantize(x, scale, zp)) - np.float32(zp)) * scale


# The weights' range: 7 bits, as ONNX Runtime's quantizer writes them with
# reduce_range=True. ONNX Runtime's uint8 x int8 products on x86 CPUs without
# VNNI (AVX2; AMD EPYC before Zen 4) sum pairs of products in int16 with
# saturation (vpmaddubsw): 255 x 127 x 2 overflows, 255 x 63 x 2 does not. With
# 8-bit weights its results there are not the integer products' (off by up to
# 13 quanta in a layer, measured); with 7 they are, on every CPU.
W_MAX = 63


def weight_params(w, per_channel):
    """int8 symmetric scales (one per output channel or one) and the quantized weights, in [-W_MAX, W_MAX]."""
    if per_channel:
        amax = np.abs(w).reshape(w.shape[0], -1).max(axis=1)
    else:
        amax = np.array([np.abs(w).max()])
    scale = f32(amax / W_MAX)
    s = scale.reshape((-1,) + (1,) * (w.ndim - 1)) if per_channel else scale[0]
    q = np.clip(np.rint(w / s), -W_MAX, W_MAX).astype(np.int8)
    return (scale if per_channel else f32(scale[0])), q


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    rng = np.random.default_rng(2028)
    calib = f32(rng.standard_normal((16, 3, 16, 16)))
    x_test = f32(rng.standard_normal((4, 3, 16, 16)))

    inits, nodes = [], []

    def const(name, a):
        inits.append(onnx.numpy_helper.from_array(a, name))
        return name

    def q_dq(src, name, scale, zp, dq=True):
        s, z = const(name + "_scale", f32(scale)), const(name + "_zp", np.array(zp, dtype=np.uint8))
        nodes.append(helper.make_node("QuantizeLinear", [src, s, z], [name + "_q"], name=name + "_Q"))
        if not dq:
            return name + "_q"
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", s, z], [name + "_dq"], name=name + "_DQ"))
        return name + "_dq"

    def dq_const(name, q, scale, zp, axis=None):
        attrs = {} if axis is None else {"axis": axis}
        ins = [const(name + "_q", q), const(name + "_scale", scale)]
        if zp is not None:
            ins.append(const(name + "_zp", zp))
        nodes.append(helper.make_node("DequantizeLinear", ins, [name], name=name + "_DQ", **attrs))
        return name

    # Calibrate layer by layer on the fake-quantized graph, writing it as we go.
    s_in, z_in = act_params(calib.min(), calib.max())
    cur = q_dq("x", "x_in", s_in, z_in)
    h = torch.from_numpy(fake_quant(calib, s_in, z_in))
    h_test = torch.from_numpy(fake_quant(x_test, s_in, z_in))
    s_prev = s_in
    for name, cin, cout, k, stride, pad, group, relu, per_channel, has_bias in CONVS:
        fan_in = cin // group * k * k
        w = f32(rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in))
        b = f32(rng.standard_normal(cout) * 0.1) if has_bias else None
        ws, wq = weight_params(w, per_channel)
        wz = np.zeros(ws.shape, dtype=np.int8)
        wname = dq_const(name + "_w", wq, ws, wz, axis=0 if per_channel else None)
        w_dq = torch.from_numpy((wq.astype(np.float32) * (ws.reshape(-1, 1, 1, 1) if per_channel else ws)).astype(np.float32))
        ins = [cur, wname]
        b_dq = None
        if has_bias:
            bs = f32(np.float32(s_prev) * f32(ws))  # float32 products, as the runtimes compute them
            bq = np.rint(b / bs).astype(np.int32)
            ins.append(dq_const(name + "_b", bq, bs, np.zeros(bs.shape, dtype=np.int32), axis=0))
            b_dq = torch.from_numpy(f32(bq.astype(np.float32) * bs))
        nodes.append(helper.make_node("Conv", ins, [name + "_y"], name=name, kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[pad] * 4, group=group))
        y = F.conv2d(h, w_dq, b_dq, stride=stride, padding=pad, groups=group).numpy()
        lo = 0.0 if relu else y.min()
        s_y, z_y = act_params(lo, y.max())
        last = name == CONVS[-1][0]
        cur = q_dq(name + "_y", name + "_out", s_y, z_y, dq=not last)
        h = torch.from_numpy(fake_quant(y, s_y, z_y))
        yt = F.conv2d(h_test, w_dq, b_dq, stride=stride, padding=pad, groups=group).numpy()
        h_test = torch.from_numpy(fake_quant(yt, s_y, z_y))
        s_prev, z_prev = s_y, z_y
    # Reshape the uint8 values, then DQ -> MatMul -> Q -> DQ.
    nodes.append(helper.make_node("Reshape", [cur, const("flat_shape", np.array([-1, FC_IN], dtype=np.int64))], ["flat_q"], name="flatten"))
    s_c, z_c = const("flat_scale", f32(s_prev)), const("flat_zp", np.array(z_prev, dtype=np.uint8))
    nodes.append(helper.make_node("DequantizeLinear", ["flat_q", s_c, z_c], ["flat_dq"], name="flat_DQ"))
    wfc = f32(rng.standard_normal((FC_IN, FC_OUT)) * np.sqrt(1.0 / FC_IN))
    fs, fq = weight_params(wfc, False)
    fname = dq_const("fc_w", fq, fs, np.int8(0))
    nodes.append(helper.make_node("MatMul", ["flat_dq", fname], ["fc_y"], name="fc"))
    wfc_dq = f32(fq.astype(np.float32) * fs)
    y = h.numpy().reshape(-1, FC_IN) @ wfc_dq
    s_o, z_o = act_params(y.min(), y.max())
    s_c, z_c = const("logits_scale", f32(s_o)), const("logits_zp", np.array(z_o, dtype=np.uint8))
    nodes.append(helper.make_node("QuantizeLinear", ["fc_y", s_c, z_c], ["logits_q"], name="logits_Q"))
    nodes.append(helper.make_node("DequantizeLinear", ["logits_q", s_c, z_c], ["logits"], name="logits_DQ"))
    yt = h_test.numpy().reshape(-1, FC_IN) @ wfc_dq
    torch_q = quantize(yt, s_o, z_o).astype(np.uint8)

    graph = helper.make_graph(
        nodes, "qdq_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", FC_OUT]),
         helper.make_tensor_value_info("logits_q", TensorProto.UINT8, ["N", FC_OUT])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="beamgpu export_qdq.py")
    model.ir_version = 7
    onnx.checker.check_model(model)
    path = os.path.join(OUT, "qdq-cnn.onnx")
    onnx.save(model, path)
    inp = os.path.join(OUT, "qdq-cnn.input.pb")
    with open(inp, "wb") as f:
        f.write(onnx.numpy_helper.from_array(x_test, "x").SerializeToString())
    outs = [os.path.join(OUT, "qdq-cnn.logits.pb"), os.path.join(OUT, "qdq-cnn.logits_q.pb")]
    ort = os.path.join(ROOT, "containers", "onnx", "ort.sh")
    js = os.path.join(ROOT, "containers", "onnx", "ort_run.js")
    subprocess.run([ort, "--quiet", "--", js, "run", path, "--in", inp, "--out", outs[0], "--out", outs[1]], check=True,
                   stdout=subprocess.DEVNULL)
    t = onnx.TensorProto()
    with open(outs[1], "rb") as f:
        t.ParseFromString(f.read())
    ort_q = onnx.numpy_helper.to_array(t)
    diff = np.abs(ort_q.astype(np.int32) - torch_q.astype(np.int32))
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")
    print(f"{os.path.relpath(path, ROOT)}: {len(nodes)} nodes; ONNX Runtime's logits_q vs the float graph in PyTorch: "
          f"{int((diff > 0).sum())} of {diff.size} differ, by at most {int(diff.max())} quanta")


if __name__ == "__main__":
    main()
