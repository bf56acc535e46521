#!/usr/bin/env bash
# The peer comparisons of `make bench`, each measured in the same run as its
# peer, interleaved (peer, ours, peer, ours) and the best of each kept:
#
#   - package gemm's float32 product against numpy's (OpenBLAS) at
#     8192x784x256 and 10000x784x60000 (MxKxN): ratio_to_numpy = our
#     GFLOP/s / numpy's (>= 1: faster);
#   - the fashion pipeline's kNN (10,000 test images against the 60,000
#     training images, k=5, distance weights, run as a process on prism)
#     against scikit-learn's brute-force KNeighborsClassifier (a python
#     process loading the same files): ratio_to_sklearn = our wall time /
#     theirs (<= 1: faster), and whether the predictions are identical;
#   - the ONNX runtime of transforms/onnx on the CPU (BenchmarkModels)
#     against ONNX Runtime (npm's onnxruntime-node, CPU provider, intra-op
#     threads = the machine's cores) on the opset-17 test models of
#     transforms/onnx/testdata/models at batch 64: the median time of a
#     batch after 3 warm-up runs, 10 runs each side, and ratio_to_ort = our
#     time / ONNX Runtime's (<= 1: faster).
#
# It installs what it needs with apt-get when run as root (Debian's
# python3-numpy, python3-sklearn, dataset-fashion-mnist, nodejs, npm; ONNX
# Runtime with npm into a cache directory, containers/onnx/ort.sh);
# otherwise it says what is missing, skips that comparison and exits 1 at
# the end. A side that fails (our runtime on a model with an operator it
# lacks) is reported on the model's line and also makes it exit 1. Outputs go
# to $OUT (default out/bench), the result lines also to $OUT/peers.txt.
# ROUNDS (default 3) sets the interleaved rounds. GEMM compares the fastest
# product of each side (numpy's best of --repeat, BenchmarkSgemm's
# best-GFLOP/s), both after a warm-up call.
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
OUT=${OUT:-out/bench}
ROUNDS=${ROUNDS:-3}
PY=/usr/bin/python3
DATA=/usr/share/datasets/fashion-mnist
mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/*.txt
: >"$OUT/peers.txt"
status=0

# result prints a result line and keeps it in $OUT/peers.txt.
result() { tee -a "$OUT/peers.txt"; }

# ensure PKG TEST...: the Debian package PKG is there if the test command
# succeeds; else install it (root) or report it missing.
ensure() {
	local pkg=$1
	shift
	if "$@" >/dev/null 2>&1; then return 0; fi
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "bench: installing $pkg" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >"$OUT/apt-$pkg.log" 2>&1 || { echo "bench: apt-get install $pkg failed (see $OUT/apt-$pkg.log)" >&2; }
		"$@" >/dev/null 2>&1 && return 0
	fi
	echo "bench: missing $pkg (apt-get install $pkg): comparison skipped" >&2
	status=1
	return 1
}

best_max() { sort -g | tail -1; }
best_min() { sort -g | head -1; }

echo "bench: load before: $(cut -d' ' -f1-3 /proc/loadavg)" | result

# GEMM against numpy.
if ensure python3-numpy "$PY" -c 'import numpy'; then
	"$GO" test -c -o "$OUT/gemm.test" ./transforms/gemm
	for shape in 8192x784x256 10000x784x60000; do
		IFS=x read -r m k n <<<"$shape"
		iters=20
		[ "$shape" = 10000x784x60000 ] && iters=2
		: >"$OUT/gemm-$shape-numpy.txt"
		: >"$OUT/gemm-$shape-go.txt"
		for _ in $(seq "$ROUNDS"); do
			"$PY" containers/bench/numpy_gemm.py "$shape" --repeat "$iters" | tee -a "$OUT/gemm-$shape.log" |
				sed -n 's/.* gflops=\([0-9.]*\).*/\1/p' >>"$OUT/gemm-$shape-numpy.txt"
			"$OUT/gemm.test" -test.run '^$' -test.bench "^BenchmarkSgemm/${m}x${k}x${n}\$" -test.benchtime "${iters}x" | tee -a "$OUT/gemm-$shape.log" |
				awk '/^BenchmarkSgemm/ { for (i = 2; i <= NF; i++) if ($i == "best-GFLOP/s") print $(i-1) }' >>"$OUT/gemm-$shape-go.txt"
		done
		ours=$(best_max <"$OUT/gemm-$shape-go.txt")
		peer=$(best_max <"$OUT/gemm-$shape-numpy.txt")
		kern=$("$OUT/gemm.test" -test.run '^TestKernelsAvailable$' -test.v | sed -n 's/.*Sgemm uses \([a-z0-9]*\).*/\1/p')
		awk -v s="$shape" -v o="$ours" -v p="$peer" -v k="$kern" 'BEGIN { printf "gemm %s (MxKxN): gemm (%s) %.1f GFLOP/s, numpy %.1f GFLOP/s  ratio_to_numpy=%.2f\n", s, k, o, p, o / p }' | result
	done
fi

# kNN through the pipeline against scikit-learn.
if ensure python3-sklearn "$PY" -c 'import sklearn' && ensure dataset-fashion-mnist test -s "$DATA/train-images-idx3-ubyte.gz"; then
	"$GO" build -o "$OUT/fashion" ./pipelines/fashion
	: >"$OUT/knn-sklearn.txt"
	: >"$OUT/knn-pipeline.txt"
	for _ in $(seq "$ROUNDS"); do
		"$PY" containers/bench/sklearn_knn.py --data_dir "$DATA" --k 5 --weights distance --predictions "$OUT/knn-sklearn.csv" | tee -a "$OUT/knn.log" |
			sed -n 's/.* total_s=\([0-9.]*\).*/\1/p' >>"$OUT/knn-sklearn.txt"
		/usr/bin/time -f 'pipeline_wall_s=%e max_rss_kb=%M' -o "$OUT/knn-time.txt" \
			"$OUT/fashion" --model=knn --k=5 --knn_weights=distance --data_dir="$DATA" --output="$OUT/knn" --progress=0 >"$OUT/knn-pipeline.log" 2>&1
		grep -h 'records:' "$OUT/knn-pipeline.log" | tee -a "$OUT/knn.log"
		tee -a "$OUT/knn.log" <"$OUT/knn-time.txt" | sed -n 's/pipeline_wall_s=\([0-9.]*\).*/\1/p' >>"$OUT/knn-pipeline.txt"
	done
	ours=$(best_min <"$OUT/knn-pipeline.txt")
	peer=$(best_min <"$OUT/knn-sklearn.txt")
	same=$(paste -d' ' <(tail -n +2 "$OUT/knn-sklearn.csv" | cut -d, -f3) <(tail -n +2 "$OUT/knn/predictions.csv" | cut -d, -f3) | awk '$1 == $2 { s++ } END { printf "%d/%d", s, NR }')
	awk -v o="$ours" -v p="$peer" -v s="$same" 'BEGIN { printf "knn fashion 10000 vs 60000, k=5 distance: pipeline %.1f s, scikit-learn %.1f s (processes, wall)  ratio_to_sklearn=%.2f  same predictions %s\n", o, p, o / p, s }' | result
fi

# ONNX models: our CPU runtime against ONNX Runtime, on the same files and inputs.
if ensure nodejs command -v node && ensure npm command -v npm; then
	if ! containers/onnx/ort.sh --quiet >/dev/null 2>"$OUT/ort-install.log"; then
		echo "bench: installing ONNX Runtime failed (see $OUT/ort-install.log): comparison skipped" >&2
		status=1
	else
		models=transforms/onnx/testdata/models
		pairs=()
		while read -r _ model input; do
			pairs+=("$models/$model" "$models/$input")
		done < <(awk '!/^#/ && $1 ~ /-opset17$/ { print $1, $2, $3 }' "$models/models.txt")
		"$GO" test -c -o "$OUT/onnx.test" ./transforms/onnx
		bin=$(cd "$OUT" && pwd)/onnx.test
		: >"$OUT/onnx-ort.txt"
		: >"$OUT/onnx-go.txt"
		for _ in $(seq "$ROUNDS"); do
			containers/onnx/ort.sh --quiet -- containers/onnx/ort_run.js bench --batch 64 --warmup 3 --runs 10 "${pairs[@]}" 2>>"$OUT/onnx-ort.err" |
				tee -a "$OUT/onnx.log" | awk '$1 == "ort" { sub(/^ms=/, "", $4); print $2, $4, $NF }' >>"$OUT/onnx-ort.txt" || status=1
			(cd transforms/onnx && "$bin" -test.run '^$' -test.bench '^BenchmarkModels$' -test.benchtime 10x 2>&1) | tee -a "$OUT/onnx.log" |
				awk '/^BenchmarkModels\// { n = $1; sub(/^BenchmarkModels\//, "", n); sub(/-[0-9]+$/, "", n); for (i = 2; i <= NF; i++) if ($i == "ms/batch") print n, $(i-1) }' >>"$OUT/onnx-go.txt" || true
		done
		for ((i = 0; i < ${#pairs[@]}; i += 2)); do
			name=$(basename "${pairs[i]}" .onnx)
			why=
			peer=$(awk -v n="$name" '$1 == n { print $2 }' "$OUT/onnx-ort.txt" | best_min)
			version=$(awk -v n="$name" '$1 == n { print $3 }' "$OUT/onnx-ort.txt" | head -1)
			ours=$(awk -v n="$name" '$1 == n { print $2 }' "$OUT/onnx-go.txt" | best_min)
			if [ -z "$ours" ]; then
				why=$(grep -m1 -E "model $name: " "$OUT/onnx.log" | sed 's/.*model [^:]*: //; s/^onnx: [^:]*: //; s/ (see Ops.*//' || true)
				echo "bench: our runtime failed on $name: ${why:-see $OUT/onnx.log}" >&2
				status=1
			fi
			if [ -z "$peer" ]; then
				echo "bench: ONNX Runtime failed on $name (see $OUT/onnx-ort.err)" >&2
				status=1
			fi
			awk -v n="$name" -v o="$ours" -v p="$peer" -v v="${version#ort=}" -v why="${why:-}" 'BEGIN {
				ourtxt = (o == "") ? "failed (" (why == "" ? "see onnx.log" : why) ")" : sprintf("%.2f ms (%.0f rows/s)", o, 64000 / o)
				peertxt = (p == "") ? "failed" : sprintf("%.2f ms (%.0f rows/s)", p, 64000 / p)
				ratio = (o == "" || p == "") ? "n/a" : sprintf("%.2f", o / p)
				printf "onnx %s batch 64 (CPU): beamgpu %s, onnxruntime %s %s  ratio_to_ort=%s\n", n, ourtxt, v, peertxt, ratio
			}' | result
		done
	fi
fi

echo "bench: load after: $(cut -d' ' -f1-3 /proc/loadavg)" | result
exit $status
