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
#     theirs (<= 1: faster), and whether the predictions are identical.
#
# It installs what it needs with apt-get when run as root (Debian's
# python3-numpy, python3-sklearn, dataset-fashion-mnist); otherwise it says
# what is missing, skips that comparison and exits 1 at the end. Outputs go
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
	"$GO" test -c -o "$OUT/gemm.test" ./transforms/tensor/gemm
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

echo "bench: load after: $(cut -d' ' -f1-3 /proc/loadavg)" | result
exit $status
