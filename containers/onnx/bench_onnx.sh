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
#   then each side's fastest run over every round and their ratio (on a
#   shared or virtual machine, whose other load only adds time, the runs
#   least disturbed: the medians of this project's two-core VM moved by up
#   to 30% within an hour, on both sides),
#   GFLOP/s of the products (Conv, MatMul, Gemm) and their share of the FMA
#   peak measured in the same process (internal/peak), bytes allocated by a run
#   after the first, and the largest difference from ONNX Runtime's output
#   relative to its largest magnitude.
#
# The operators set (containers/onnx/bench_ops.py: one node each, written with
# onnx.helper, at the sizes the models users bring give them) runs at one
# thread only, and has a table of its own, out/bench-onnx/ops-table.md: per
# operator entry, the median over the rounds of the CPU time of a run (the
# process's user and system time: what a loaded machine disturbs least at one
# thread) on each side and their ratio, then the same of wall time.
#
# Usage: containers/onnx/bench_onnx.sh [models|ops|NAME/LABEL ...]   (default: every entry)
#   models: the models above; ops: the operators (NAME/op, e.g. lstm/op)
# Environment:
#   ROUNDS (3), RUNS (5)         rounds, and timed runs per side and round
#   WARMUP (5), WARMUP_MS (1000) untimed runs per side before them: WARMUP, then
#                                more while the warm-up took under WARMUP_MS (at
#                                most 100 in all). The Go heap grows over a
#                                process's first runs of a model with large
#                                outputs, each new output on pages faulted in;
#                                a pipeline's thousands of calls reuse them.
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
warmup=${WARMUP:-5}
warmup_ms=${WARMUP_MS:-1000}
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
sets=" models ops "
names=()
if [[ $# -gt 0 ]]; then
	sets=" "
	for a in "$@"; do
		case $a in
		models | ops) sets="$sets$a " ;;
		*) names+=("$a") ;;
		esac
	done
	[[ ${#names[@]} -eq 0 ]] || sets=" models ops "
fi

# The manifest of this run: the exports, then the test models at batch 64,
# then the operators.
manifest=$out/manifest.tsv
: >"$manifest"
if [[ $sets == *" models "* ]]; then
	"$py" containers/onnx/bench_models.py --out "$cache"
	cat "$cache/manifest.tsv" >>"$manifest"
	models=$PWD/transforms/onnx/testdata/models
	for m in resnet mobilenetv2 transformer unet; do
		printf '%s\tb64\t%s\t%s\n' "$m" "$models/$m-opset17.onnx" "$models/$m.input.pb@64" >>"$manifest"
	done
	# and the QDQ-quantized CNN (testdata/quant: its layers integer products,
	# as ONNX Runtime's QDQ transformer makes them QLinearConv and QLinearMatMul).
	quant=$PWD/transforms/onnx/testdata/quant
	printf 'qdq-cnn\tb64\t%s\t%s\n' "$quant/qdq-cnn.onnx" "$quant/qdq-cnn.input.pb@64" >>"$manifest"
fi
if [[ $sets == *" ops "* ]]; then
	"$py" containers/onnx/bench_ops.py --out "$cache/ops"
	cat "$cache/ops/manifest.tsv" >>"$manifest"
fi
if [[ ${#names[@]} -gt 0 ]]; then
	want=" ${names[*]} "
	awk -F'\t' -v want="$want" 'index(want, " " $1 "/" $2 " ")' "$manifest" >"$manifest.tmp"
	mv "$manifest.tmp" "$manifest"
	[[ -s $manifest ]] || die "no entry named ${names[*]} (entries are NAME/LABEL: see $cache/manifest.tsv and $cache/ops/manifest.tsv)"
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
		ts="1 $threads"
		[[ $label != op ]] || ts=1 # the operators: at one thread
		for t in $ts; do
			echo "bench-onnx: round $round: $name/$label at $t thread(s)" >&2
			containers/onnx/ort.sh --quiet -- containers/onnx/ort_run.js zoo --threads "$t" --warmup "$warmup" --warmup-ms "$warmup_ms" --runs "$runs" --ref "$out" "$manifest" "$name/$label" 2>>"$log" |
				tee -a "$log" | awk -v t="$t" '$1 == "ort" { line = "ort " $2 " " t
					for (i = 3; i <= NF; i++) if ($i ~ /^(ms|min_ms|cpu_ms)=/) line = line " " $i
					print line }' >>"$out/results.txt" || true
			(cd transforms/onnx && GOMAXPROCS=$t "$bin" -test.run '^$' -test.bench "$(pattern "$name" "$label")" \
				-test.benchtime "${runs}x" -zoo-warmup "$warmup" -zoo-warmup-ms "$warmup_ms" -zoo "$manifest" 2>&1) | tee -a "$log" |
				awk -v t="$t" -v n="$name/$label" '/^BenchmarkZoo\// {
					line = "ours " n " " t
					for (i = 2; i < NF; i++) if ($(i+1) ~ /^(ms\/run|min_ms\/run|cpu_ms\/run|GFLOP\/s|peak_share|B\/run|max_rel_diff)$/) line = line " " $(i+1) "=" $i
					print line }' >>"$out/results.txt" || true
		done
	done <"$manifest"
done
(cd transforms/onnx && "$bin" -test.run '^TestZooPeak$' -test.v -zoo "$manifest" 2>&1 | grep -o 'peak: .*' | head -1) >"$out/peak-all.txt" || true
(cd transforms/onnx && GOMAXPROCS=1 "$bin" -test.run '^TestZooPeak$' -test.v -zoo "$manifest" 2>&1 | grep -o 'peak: .*' | head -1) >"$out/peak-1.txt" || true

# The tables: medians over the rounds. medians.awk reads results.txt (lines
# "ort|ours NAME/LABEL THREADS KEY=VALUE...") into v[side, key, metric], the
# median of the values of the rounds (median(side, key, metric)).
cat >"$out/medians.awk" <<'AWK'
function median(list,   n, a, i, j, tmp) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { tmp = a[j]; a[j] = a[j-1]; a[j-1] = tmp }
	if (n == 0) return ""
	return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
function med(side, key, metric) { return median(v[side, key, metric]) }
function least(list,   n, a, i, m) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) if (i == 1 || a[i] + 0 < m + 0) m = a[i]
	return n ? m : ""
}
function fastest(side, key) { return least(v[side, key, "min_ms"]) }
function ratio(a, b) { return (a != "" && b != "" && b > 0) ? sprintf("%.2f", a / b) : "n/a" }
function ms(x) { return x == "" ? "failed" : sprintf(x < 10 ? "%.2f" : "%.1f", x) }
{
	key = $2 " " $3
	if (!(key in seen)) { seen[key] = 1; order[++keys] = key }
	for (i = 4; i <= NF; i++) { split($i, kv, "="); sub(/\/run$/, "", kv[1]); v[$1, key, kv[1]] = v[$1, key, kv[1]] " " kv[2] }
}
AWK
ortv=$(grep -m1 -o 'ort=[0-9.]*' "$log" | cut -d= -f2 || true)
machine="$(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $rounds round(s) of $runs runs after $warmup to 100 warm-ups (${warmup_ms} ms)"
{
	echo "ONNX models on the CPU: beamgpu against ONNX Runtime $ortv, $machine"
	echo "FMA peak: 1 thread $(cut -d' ' -f2- "$out/peak-1.txt"); $threads threads $(cut -d' ' -f2- "$out/peak-all.txt")"
	echo
	echo "| model | batch | threads | ours ms | ORT ms | ratio | ours fastest | ORT fastest | ratio (fastest) | GFLOP/s | peak share | B/run | max rel diff |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	awk -f "$out/medians.awk" -f /dev/stdin "$out/results.txt" <<'AWK'
	END {
		for (k = 1; k <= keys; k++) {
			key = order[k]; split(key, p, " "); split(p[1], nl, "/")
			if (nl[2] == "op") continue
			o = med("ours", key, "ms"); r = med("ort", key, "ms")
			fo = fastest("ours", key); fr = fastest("ort", key)
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", nl[1], nl[2], p[2],
				(o == "" ? "failed" : sprintf("%.1f", o)), (r == "" ? "failed" : sprintf("%.1f", r)), ratio(o, r),
				(fo == "" ? "" : sprintf("%.1f", fo)), (fr == "" ? "" : sprintf("%.1f", fr)), ratio(fo, fr),
				(med("ours", key, "GFLOP/s") == "" ? "" : sprintf("%.1f", med("ours", key, "GFLOP/s"))),
				(med("ours", key, "peak_share") == "" ? "" : sprintf("%.0f%%", 100 * med("ours", key, "peak_share"))),
				med("ours", key, "B"),
				(med("ours", key, "max_rel_diff") == "" ? "" : sprintf("%.1e", med("ours", key, "max_rel_diff")))
		}
	}
AWK
} >"$out/table.md"
{
	echo "ONNX operators on the CPU at one thread: beamgpu against ONNX Runtime $ortv, $machine"
	echo
	echo "| operator entry | ours CPU ms | ORT CPU ms | ratio (CPU) | ours wall ms | ORT wall ms | ratio (wall) | B/run | max diff |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	awk -f "$out/medians.awk" -f /dev/stdin "$out/results.txt" <<'AWK'
	END {
		for (k = 1; k <= keys; k++) {
			key = order[k]; split(key, p, " "); split(p[1], nl, "/")
			if (nl[2] != "op") continue
			oc = med("ours", key, "cpu_ms"); rc = med("ort", key, "cpu_ms")
			o = med("ours", key, "ms"); r = med("ort", key, "ms")
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", nl[1], ms(oc), ms(rc), ratio(oc, rc), ms(o), ms(r), ratio(o, r),
				med("ours", key, "B"),
				(med("ours", key, "max_rel_diff") == "" ? "" : sprintf("%.1e", med("ours", key, "max_rel_diff")))
		}
	}
AWK
} >"$out/ops-table.md"
tables=()
for t in table ops-table; do # the tables with rows
	if [[ $(grep -c '^| [^-]' "$out/$t.md") -gt 1 ]]; then
		tables+=("$out/$t.md")
	else
		rm "$out/$t.md"
	fi
done
cat "${tables[@]}"
if grep -q '| failed |' "${tables[@]}"; then
	echo "bench-onnx: a side failed on some entry (see $log)" >&2
	exit 1
fi
