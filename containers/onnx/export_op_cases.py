#!/usr/bin/python3
"""Writes single-operator models and ONNX Runtime's outputs for the forms of the
newer operators that ONNX's conformance data (Debian's libonnx-testdata, ONNX 1.12)
does not hold: Resize at opsets 18 and 19 (antialias, axes, keep_aspect_ratio_policy,
half_pixel_symmetric), tf_crop_and_resize with extrapolation, Resize 10, Upsample; Mish
(18), Gelu (20), and Softplus, Celu and Round on wider inputs; ReduceLogSumExp of
float32; CumSum, TopK, ArgMax, ArgMin, Tile, Trilu and RoiAlign on float32 inputs with
ties and constant arguments.

Each case is a model of one node (its scales, sizes and roi initializers), a seeded
random input and ONNX Runtime's output for it, in transforms/onnx/testdata/ops/:

  CASE.onnx  CASE.input.pb  CASE.output.pb   (ONNX TensorProtos, as ONNX's test data)

and cases.txt lists them; TestOpCases runs each on the CPU and on the emulated device
and holds it to ONNX Runtime's output (1e-4 relative).

Run with Debian bookworm's Python (apt-get install python3-onnx python3-numpy; made
with onnx 1.12.0, numpy 1.24.2 and onnxruntime-node 1.30.0 through
containers/onnx/ort.sh), from the repository root:

  /usr/bin/python3 containers/onnx/export_op_cases.py
"""

import os
import subprocess

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "transforms", "onnx", "testdata", "ops")


def resize_case(opset, shape, attrs, scales=None, sizes=None, roi=None, op="Resize"):
    """A Resize (or Upsample) node on X of shape, with its constant inputs."""
    inits, inputs = [], ["X"]
    # Opsets 11 and 12 require roi and scales: empty tensors where not used.
    required = op == "Resize" and opset in (11, 12)
    if op == "Resize" and opset >= 11:
        inputs.append("roi" if roi is not None or required else "")
        if roi is not None or required:
            inits.append(onnx.numpy_helper.from_array(np.array(roi or [], np.float32), "roi"))
    if scales is not None or required:
        inputs.append("scales")
        inits.append(onnx.numpy_helper.from_array(np.array(scales or [], np.float32), "scales"))
    elif op == "Resize" and opset >= 11:
        inputs.append("")
    if sizes is not None:
        inputs.append("sizes")
        inits.append(onnx.numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
    while inputs and inputs[-1] == "":
        inputs.pop()
    node = helper.make_node(op, inputs, ["Y"], name="resize", **attrs)
    graph = helper.make_graph([node], "case", [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="export_op_cases")
    model.ir_version = 8
    return model


def unary_case(opset, op, shape, attrs=None, scale=1.0):
    """A one-input operator; the input is standard normal times scale."""
    node = helper.make_node(op, ["X"], ["Y"], name=op.lower(), **(attrs or {}))
    graph = helper.make_graph([node], "case", [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="export_op_cases")
    model.ir_version = 8
    model.doc_string = f"scale={scale}"
    return model


def node_case(opset, op, shape, attrs=None, inits=None, outputs=("Y",), scale=1.0, ties=False):
    """One node on X of shape and constant inputs inits (name: array, in order; "" leaves
    an optional input out); the model's output is the node's output Y. With ties the
    input is rounded to halves, so that equal values meet."""
    inits = inits or {}
    inputs = ["X"] + list(inits)
    out_type = TensorProto.INT64 if op in ("ArgMax", "ArgMin") or outputs.index("Y") == 1 else TensorProto.FLOAT
    node = helper.make_node(op, inputs, list(outputs), name=op.lower(), **(attrs or {}))
    graph = helper.make_graph([node], "case", [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("Y", out_type, None)],
                              [onnx.numpy_helper.from_array(np.array(v), k) for k, v in inits.items() if k])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="export_op_cases")
    model.ir_version = 8
    model.doc_string = f"scale={scale}" + (" ties" if ties else "")
    return model


CASES = {
    # opset 18: antialias, axes, keep_aspect_ratio_policy
    "resize18_linear_antialias_scales": resize_case(18, [1, 2, 9, 10], dict(mode="linear", antialias=1), scales=[1, 1, 0.6, 0.5]),
    "resize18_cubic_antialias_sizes": resize_case(18, [1, 1, 12, 9], dict(mode="cubic", antialias=1), sizes=[1, 1, 5, 4]),
    "resize18_linear_antialias_upsample": resize_case(18, [1, 1, 4, 5], dict(mode="linear", antialias=1), scales=[1, 1, 2, 0.5]),
    "resize18_axes_not_larger": resize_case(18, [1, 2, 8, 6], dict(mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_larger"), sizes=[5, 5]),
    "resize18_axes_not_smaller": resize_case(18, [1, 2, 8, 6], dict(mode="nearest", axes=[2, 3], keep_aspect_ratio_policy="not_smaller"), sizes=[5, 5]),
    "resize18_axes_reversed_scales": resize_case(18, [1, 2, 4, 6], dict(mode="cubic", axes=[3, 2]), scales=[0.5, 1.5]),
    "resize18_axes_negative_sizes": resize_case(18, [2, 3, 5], dict(mode="linear", axes=[-1]), sizes=[8]),
    # opset 19: half_pixel_symmetric
    "resize19_linear_half_pixel_symmetric": resize_case(19, [1, 1, 5, 7], dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"), scales=[1, 1, 1.7, 0.45]),
    "resize19_nearest_half_pixel_symmetric": resize_case(19, [1, 1, 4, 4], dict(mode="nearest", coordinate_transformation_mode="half_pixel_symmetric"), scales=[1, 1, 2.5, 0.7]),
    # tf_crop_and_resize: roi, extrapolation_value
    "resize13_tf_crop_extrapolate_linear": resize_case(13, [1, 1, 4, 4], dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=10.0),
                                                       sizes=[1, 1, 5, 6], roi=[0, 0, -0.2, 0.4, 1, 1, 0.6, 1.3]),
    "resize13_tf_crop_extrapolate_nearest": resize_case(13, [1, 1, 4, 4], dict(mode="nearest", coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0),
                                                        sizes=[1, 1, 3, 7], roi=[0, 0, 0.3, -0.5, 1, 1, 0.9, 0.8]),
    "resize13_tf_crop_cubic": resize_case(13, [1, 2, 6, 6], dict(mode="cubic", coordinate_transformation_mode="tf_crop_and_resize"),
                                          sizes=[1, 2, 4, 5], roi=[0, 0, 0.1, 0.2, 1, 1, 0.8, 0.9]),
    # the other modes where the conformance data has few forms
    "resize13_cubic_exclude_pytorch": resize_case(13, [1, 2, 7, 5], dict(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1, coordinate_transformation_mode="pytorch_half_pixel"), scales=[1, 1, 0.6, 1.8]),
    "resize13_nearest_ceil_align_3d": resize_case(13, [1, 1, 3, 4, 5], dict(mode="nearest", nearest_mode="ceil", coordinate_transformation_mode="align_corners"), sizes=[1, 1, 5, 7, 4]),
    "resize13_nearest_floor_half_pixel_down": resize_case(13, [1, 3, 9, 7], dict(mode="nearest", nearest_mode="floor"), scales=[1, 1, 0.5, 0.4]),
    "resize13_nearest_prefer_ceil_asym": resize_case(13, [2, 2, 3, 3], dict(mode="nearest", nearest_mode="round_prefer_ceil", coordinate_transformation_mode="asymmetric"), scales=[1, 1, 2.5, 1.5]),
    "resize13_linear_half_pixel_nhwc": resize_case(13, [1, 4, 5, 3], dict(mode="linear"), scales=[1, 2, 1.5, 1]),
    "resize13_linear_scales_07": resize_case(13, [1, 1, 10, 10], dict(mode="linear"), scales=[1, 1, 0.7, 0.3]),
    "resize13_linear_pytorch_to_one": resize_case(13, [1, 1, 3, 5], dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"), sizes=[1, 1, 1, 2]),
    "resize11_nearest_tf_half_pixel_for_nn": resize_case(11, [1, 1, 4, 4], dict(mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn"), sizes=[1, 1, 3, 6]),
    # Resize 10 and Upsample
    "resize10_nearest_down": resize_case(10, [1, 1, 6, 7], dict(mode="nearest"), scales=[1, 1, 0.5, 0.6]),
    "resize10_linear_up": resize_case(10, [1, 2, 3, 4], dict(mode="linear"), scales=[1, 1, 2, 1.5]),
    "upsample7_nearest": resize_case(7, [1, 2, 3, 3], dict(mode="nearest", scales=[1.0, 1.0, 2.0, 3.0]), op="Upsample"),
    "upsample9_linear": resize_case(9, [1, 1, 3, 4], dict(mode="linear"), scales=[1, 1, 2.5, 2], op="Upsample"),
    # the activations the conformance data lacks (Mish 18, Gelu 20) or
    # tests only near 0
    "mish18": unary_case(18, "Mish", [3, 50], scale=6.0),
    "gelu20": unary_case(20, "Gelu", [3, 50], scale=4.0),
    "gelu20_tanh": unary_case(20, "Gelu", [3, 50], dict(approximate="tanh"), scale=4.0),
    "softplus_wide": unary_case(13, "Softplus", [3, 50], scale=60.0),
    "celu_alpha": unary_case(12, "Celu", [3, 50], dict(alpha=0.5), scale=3.0),
    "round_halves": unary_case(11, "Round", [4, 25], scale=4.0),
    # ReduceLogSumExp of float32 (the conformance data's is float64, which
    # the device leaves to the host)
    "reducelogsumexp_axis1": unary_case(13, "ReduceLogSumExp", [3, 50, 2], dict(axes=[1], keepdims=0), scale=5.0),
    # the detection operators in float32, which the conformance data tests in
    # float64 (CumSum) or on few forms (TopK: ties, axes, k as input)
    "cumsum14_axis1": node_case(14, "CumSum", [3, 40], inits={"axis": np.array(1, np.int64)}),
    "cumsum11_axis0_exclusive_reverse": node_case(11, "CumSum", [5, 4, 3], dict(exclusive=1, reverse=1), inits={"axis": np.array(0, np.int32)}),
    "topk11_values_axis0": node_case(11, "TopK", [30, 4], dict(axis=0), inits={"K": np.array([7], np.int64)}, outputs=("Y", "I")),
    "topk11_indices_ties": node_case(11, "TopK", [3, 40], inits={"K": np.array([12], np.int64)}, outputs=("V", "Y"), ties=True),
    "topk11_indices_smallest_ties": node_case(11, "TopK", [4, 33], dict(largest=0), inits={"K": np.array([33], np.int64)}, outputs=("V", "Y"), ties=True),
    "topk10_indices": node_case(10, "TopK", [2, 3, 20], dict(axis=1), inits={"K": np.array([2], np.int64)}, outputs=("V", "Y")),
    "argmax13_last_ties": node_case(13, "ArgMax", [6, 20], dict(axis=1, select_last_index=1), ties=True),
    "argmin11_ties": node_case(11, "ArgMin", [6, 20], dict(axis=0, keepdims=0), ties=True),
    "tile13_rank4": node_case(13, "Tile", [2, 1, 3, 2], inits={"repeats": np.array([2, 3, 1, 2], np.int64)}),
    "roialign16_max_output_half_pixel": node_case(16, "RoiAlign", [2, 3, 10, 12], dict(mode="max", coordinate_transformation_mode="output_half_pixel", output_height=3, output_width=4, sampling_ratio=2, spatial_scale=0.5),
                                                  inits={"rois": np.array([[1, 2, 15, 18], [0, 0, 23, 19], [4.5, 3.2, 9.1, 7.7]], np.float32), "batch_indices": np.array([1, 0, 1], np.int64)}),
    "roialign16_avg_half_pixel": node_case(16, "RoiAlign", [1, 2, 8, 8], dict(output_height=2, output_width=3, spatial_scale=0.25),
                                           inits={"rois": np.array([[-2, 3, 30, 40], [5, 5, 6, 6]], np.float32), "batch_indices": np.array([0, 0], np.int64)}),
    "trilu14_lower_k": node_case(14, "Trilu", [2, 5, 7], dict(upper=0), inits={"k": np.array(-1, np.int64)}),
}


def save_tensor(path, arr, name):
    with open(path, "wb") as f:
        f.write(onnx.numpy_helper.from_array(arr, name).SerializeToString())


def main():
    os.makedirs(OUT, exist_ok=True)
    ort = os.path.join(ROOT, "containers", "onnx", "ort.sh")
    js = os.path.join(ROOT, "containers", "onnx", "ort_run.js")
    rng = np.random.default_rng(28)
    lines = ["# Single-operator cases (written by containers/onnx/export_op_cases.py): name  model  input  output (ONNX Runtime's)"]
    for name, model in CASES.items():
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        scale = float(model.doc_string.split("=")[1].split()[0]) if model.doc_string.startswith("scale=") else 1.0
        x = (rng.standard_normal(shape) * scale).astype(np.float32)
        if name == "round_halves" or model.doc_string.endswith(" ties"):  # ties, both parities and signs
            x = (np.round(x * 2) / 2).astype(np.float32)
        paths = [os.path.join(OUT, name + ext) for ext in (".onnx", ".input.pb", ".output.pb")]
        onnx.save(model, paths[0])
        save_tensor(paths[1], x, "X")
        subprocess.run([ort, "--quiet", "--", js, "run", paths[0], "--in", paths[1], "--out", paths[2]], check=True, stdout=subprocess.DEVNULL)
        lines.append("  ".join([name] + [os.path.basename(p) for p in paths]))
        print(name, onnx.numpy_helper.to_array(onnx.load_tensor(paths[2])).shape)
    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
