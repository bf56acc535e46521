#!/usr/bin/env bash
# onnx_bench.sh EXECUTOR [FASHION_DIR]: torch_peer.py (every peer it has), then the exported ONNX models (transforms/onnx/testdata/models, opset 17) at batch 256,
# host to host, through beamgpu's executor (beamgpu-executor bench --steps=onnx --phases, one run per model,
# BEAMGPU_BENCH_ONNX naming the model) and in PyTorch eager on the same GPU (torch_peer.py's 'peer onnx' lines),
# and ours over PyTorch's time: make gpu-bench-peer runs it. The issue's aim is at most 1.2.
set -euo pipefail
exe=${1:?usage: onnx_bench.sh EXECUTOR [FASHION_DIR]}
shift
here=$(cd "$(dirname "$0")" && pwd)
models=$here/../../transforms/onnx/testdata/models
peer=$(mktemp)
trap 'rm -f "$peer"' EXIT
python3 "$here/torch_peer.py" "$@" | tee /dev/stderr | grep '^peer onnx ' >"$peer" || true
printf '%-14s %12s %12s %8s\n' model ours PyTorch ratio
for name in resnet mobilenetv2 transformer; do
	out=$(BEAMGPU_BENCH_ONNX=$models/$name-opset17.onnx "$exe" bench --steps=onnx --size=${BENCH_SIZE:-full} --phases --echo_mib=0)
	echo "$out" >&2
	ours=$(echo "$out" | awk '/^onnx / { for (i = 1; i <= NF; i++) if ($(i+1) == "ms") { print $i; exit } }')
	torch=$(awk -v n="$name" '$3 == n { print $4 }' "$peer")
	ratio=$(awk -v a="${ours:-0}" -v b="${torch:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }')
	printf '%-14s %9s ms %9s ms %8s\n' "$name" "${ours:--}" "${torch:--}" "$ratio"
done
