#!/usr/bin/env bash
# make bench-onnx: the ONNX runtime of transforms/onnx against ONNX Runtime 1.30
# (npm's onnxruntime-node, CPU provider) on the models users bring, in one
# interleaved run, at one thread and at all cores.
#
# The models (containers/onnx/bench_models.py: torchvision's resnet50,
# mobilenet_v3_small, efficientnet_b0, convnext_tiny and vit_b_16, a
# BERT-style encoder with an attention mask, and single Resize and
# ConvTranspose operators) are exported once with Debian's PyTorch into a
# cache directory outside the repository; the four models of
# transforms/onnx/testdata/models and the QDQ CNN of transforms/onnx/testdata/quant
# run at batch 64 beside them. For each model
# and batch, in each round: ONNX Runtime at 1 intra-op thread, ours at
# GOMAXPROCS=1, ONNX Runtime at all cores, ours at all cores (each its median
# of RUNS runs after warm-ups). The table, one line per model, batch and
# thread count, is the median over the rounds of:
#
#   ours ms, ORT ms, ratio (ours / ORT: under 1 is faster than ONNX Runtime),
#   GFLOP/s of the products (Conv, MatMul, Gemm) and their share of the FMA
#   peak measured in the same process (internal/peak), bytes allocated by a run
#   after the first, and the largest difference from ONNX Runtime's output
#   relative to its largest magnitude.
#
# Usage: containers/onnx/bench_onnx.sh [NAME/LABEL ...]     (default: every entry)
# Environment:
#   ROUNDS (3), RUNS (5)         rounds, and timed runs per side and round
#   THREADS (every core)         the "all cores" thread count
#   BEAMGPU_BENCH_ONNX_DIR       the model cache (default ${XDG_CACHE_HOME:-~/.cache}/beamgpu/bench-onnx)
#   OUT (out/bench-onnx)         where the logs and table.md go
#   PYTHON (/usr/bin/python3), GO (go)
# Needs: Debian's python3-torch python3-torchvision python3-onnx (for the
# exports, once), Node.js and npm (containers/onnx/ort.sh installs ONNX Runtime).
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=${ROUNDS:-3}
runs=${RUNS:-5}
threads=${THREADS:-$(nproc)}
out=${OUT:-out/bench-onnx}
py=${PYTHON:-/usr/bin/python3}
go=${GO:-go}
cache=${BEAMGPU_BENCH_ONNX_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/beamgpu/bench-onnx}

die() {
	printf 'bench-onnx: %s\n' "$*" >&2
	exit 1
}

"$py" -c 'import torch, torchvision, onnx' 2>/dev/null ||
	die "$py cannot import torch, torchvision and onnx (apt-get install python3-torch python3-torchvision python3-onnx)"
mkdir -p "$out" "$cache"
out=$(cd "$out" && pwd)
"$py" containers/onnx/bench_models.py --out "$cache"

# The manifest of this run: the exports, then the test models at batch 64.
manifest=$out/manifest.tsv
cp "$cache/manifest.tsv" "$manifest"
models=$PWD/transforms/onnx/testdata/models
for m in resnet mobilenetv2 transformer unet; do
	printf '%s\tb64\t%s\t%s\n' "$m" "$models/$m-opset17.onnx" "$models/$m.input.pb@64" >>"$manifest"
done
# and the QDQ-quantized CNN (testdata/quant: its layers integer products,
# as ONNX Runtime's QDQ transformer makes them QLinearConv and QLinearMatMul).
quant=$PWD/transforms/onnx/testdata/quant
printf 'qdq-cnn\tb64\t%s\t%s\n' "$quant/qdq-cnn.onnx" "$quant/qdq-cnn.input.pb@64" >>"$manifest"
if [[ $# -gt 0 ]]; then
	want=" $* "
	awk -F'\t' -v want="$want" 'index(want, " " $1 "/" $2 " ")' "$manifest" >"$manifest.tmp"
	mv "$manifest.tmp" "$manifest"
	[[ -s $manifest ]] || die "no entry named $* (entries are NAME/LABEL: see $cache/manifest.tsv)"
fi

containers/onnx/ort.sh --quiet >/dev/null
"$go" test -c -o "$out/onnx.test" ./transforms/onnx
bin=$out/onnx.test
: >"$out/results.txt"
log=$out/bench.log
: >"$log"

# pattern is the benchmark's -test.bench for NAME/LABEL (each part anchored).
pattern() { printf 'BenchmarkZoo/^%s$/^%s$' "$1" "$2"; }

for round in $(seq "$rounds"); do
	while IFS=$'\t' read -r name label _; do
		for t in 1 "$threads"; do
			echo "bench-onnx: round $round: $name/$label at $t thread(s)" >&2
			containers/onnx/ort.sh --quiet -- containers/onnx/ort_run.js zoo --threads "$t" --runs "$runs" --ref "$out" "$manifest" "$name/$label" 2>>"$log" |
				tee -a "$log" | awk -v t="$t" '$1 == "ort" { sub(/^ms=/, "", $3); print "ort", $2, t, $3 }' >>"$out/results.txt" || true
			(cd transforms/onnx && GOMAXPROCS=$t "$bin" -test.run '^$' -test.bench "$(pattern "$name" "$label")" \
				-test.benchtime "${runs}x" -zoo "$manifest" 2>&1) | tee -a "$log" |
				awk -v t="$t" -v n="$name/$label" '/^BenchmarkZoo\// {
					line = "ours " n " " t
					for (i = 2; i < NF; i++) if ($(i+1) ~ /^(ms\/run|GFLOP\/s|peak_share|B\/run|max_rel_diff)$/) line = line " " $(i+1) "=" $i
					print line }' >>"$out/results.txt" || true
		done
	done <"$manifest"
done
(cd transforms/onnx && "$bin" -test.run '^TestZooPeak$' -test.v -zoo "$manifest" 2>&1 | grep -o 'peak: .*' | head -1) >"$out/peak-all.txt" || true
(cd transforms/onnx && GOMAXPROCS=1 "$bin" -test.run '^TestZooPeak$' -test.v -zoo "$manifest" 2>&1 | grep -o 'peak: .*' | head -1) >"$out/peak-1.txt" || true

# The table: medians over the rounds.
{
	echo "ONNX models on the CPU: beamgpu against ONNX Runtime $(grep -m1 -o 'ort=[0-9.]*' "$log" | cut -d= -f2), $(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, $rounds round(s) of $runs runs"
	echo "FMA peak: 1 thread $(cut -d' ' -f2- "$out/peak-1.txt"); $threads threads $(cut -d' ' -f2- "$out/peak-all.txt")"
	echo
	echo "| model | batch | threads | ours ms | ORT ms | ratio | GFLOP/s | peak share | B/run | max rel diff |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	awk '
	function median(list,   n, a, i, j, tmp) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { tmp = a[j]; a[j] = a[j-1]; a[j-1] = tmp }
		if (n == 0) return ""
		return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
	}
	{
		key = $2 " " $3
		if (!(key in seen)) { seen[key] = 1; order[++keys] = key }
		if ($1 == "ort") ort[key] = ort[key] " " $4
		else for (i = 4; i <= NF; i++) { split($i, kv, "="); v[key, kv[1]] = v[key, kv[1]] " " kv[2] }
	}
	END {
		for (k = 1; k <= keys; k++) {
			key = order[k]; split(key, p, " "); split(p[1], nl, "/")
			o = median(v[key, "ms/run"]); r = median(ort[key])
			ratio = (o != "" && r != "" && r > 0) ? sprintf("%.2f", o / r) : "n/a"
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", nl[1], nl[2], p[2],
				(o == "" ? "failed" : sprintf("%.1f", o)), (r == "" ? "failed" : sprintf("%.1f", r)), ratio,
				(median(v[key, "GFLOP/s"]) == "" ? "" : sprintf("%.1f", median(v[key, "GFLOP/s"]))),
				(median(v[key, "peak_share"]) == "" ? "" : sprintf("%.0f%%", 100 * median(v[key, "peak_share"]))),
				median(v[key, "B/run"]),
				(median(v[key, "max_rel_diff"]) == "" ? "" : sprintf("%.1e", median(v[key, "max_rel_diff"])))
		}
	}' "$out/results.txt"
} >"$out/table.md"
cat "$out/table.md"
if grep -q '| failed |' "$out/table.md"; then
	echo "bench-onnx: a side failed on some entry (see $log)" >&2
	exit 1
fi
