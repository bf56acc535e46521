#!/usr/bin/env bash
# build-cuda.sh: build, vet and compile the tests of the cuda-tagged packages
# (runtime/executor/cuda and its commands, the step families' launches and the
# executor, pipelines/beamgpu-executor) with cgo against a CUDA 11 or 12 toolkit's
# headers and link stubs, and run the tests that check every step's CUDA launch
# against its family's PTX (they need no GPU: gpu.Recorder). It needs no GPU and
# runs nothing on one. CI calls it on every change (through
# containers/build-worker.sh, which the Dockerfile's builder stage runs too).
#
# Which CUDA:
#   - a CUDA 11 or 12 toolkit where there is one: $CUDA_HOME, else /usr/local/cuda
#     (the nvidia/cuda devel image of the Dockerfile's builder stage): its include/
#     (and include/cccl/ where the toolkit keeps libcu++ there; 12.x cu/blas needs
#     libcu++'s nv/target), linked against lib64/stubs then lib64;
#   - else Debian's CUDA 11.8 headers and link stubs, which containers/cuda-headers.sh
#     fetches into its cache on the first run (no root needed; this is what a
#     development machine and CI use).
#   BEAMGPU_CUDA=debian forces Debian's 11.8 even where a toolkit is installed.
#   A toolkit of another major version (gorgonia.org/cu does not compile against
#   CUDA 13) is an error where $CUDA_HOME names it, and skipped (with a note) where
#   it is only the default /usr/local/cuda.
#
# Usage: containers/build-cuda.sh [--out DIR] [--executor PKG]
#   --out DIR       also write the commands' binaries (beamgpu-executor, cudaprobe) into DIR
#   --executor PKG  with --out: DIR/beamgpu-executor is the CUDA build of this executor main
#                   package (a directory relative to the current one; in a module of its own,
#                   built there: containers/executor-pkg.sh) instead of ./pipelines/beamgpu-executor
#
# The binaries need, where they run, the NVIDIA driver (libcuda.so.1, R520 or newer
# for the PTX) and the cuBLAS of the CUDA they were built with: libcublas.so.12 and
# libcublasLt.so.12 (an nvidia/cuda:12 runtime image) or CUDA 11's .so.11.
set -euo pipefail

out=
executor=
while [[ $# -gt 0 ]]; do
	case $1 in
	--out)
		[[ $# -ge 2 ]] || {
			echo "build-cuda: --out needs a directory" >&2
			exit 2
		}
		out=$2
		shift 2
		;;
	--executor)
		[[ $# -ge 2 && -n $2 ]] || {
			echo "build-cuda: --executor needs a package directory" >&2
			exit 2
		}
		executor=$2
		shift 2
		;;
	*)
		echo "build-cuda: unknown argument $1" >&2
		exit 2
		;;
	esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -n $executor ]]; then
	[[ -n $out ]] || {
		echo "build-cuda: --executor needs --out" >&2
		exit 2
	}
	# shellcheck source=executor-pkg.sh
	source "$here/executor-pkg.sh"
	executor_pkg "$executor"
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
fi
cd "$here/.."

# toolkit_version DIR: the CUDA_VERSION of DIR/include/cuda.h (12040 for 12.4), or nothing.
toolkit_version() {
	[[ -f $1/include/cuda.h ]] || return 0
	sed -n 's/^#define CUDA_VERSION[[:space:]]\{1,\}\([0-9]\{1,\}\).*/\1/p' "$1/include/cuda.h" | head -n 1
}

# Keep cgo's default optimisation flags (they apply only when CGO_CFLAGS is unset).
user_cflags=${CGO_CFLAGS:--O2 -g}
user_ldflags=${CGO_LDFLAGS:-}
source=${BEAMGPU_CUDA:-auto}
case $source in
auto | toolkit | debian) ;;
*)
	echo "build-cuda: BEAMGPU_CUDA=$source: want auto, toolkit or debian" >&2
	exit 2
	;;
esac
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [[ $source != debian ]]; then
	version=$(toolkit_version "$cuda_home")
	if [[ -z $version ]]; then
		if [[ -n ${CUDA_HOME:-} || $source == toolkit ]]; then
			echo "build-cuda: no CUDA toolkit in $cuda_home (no include/cuda.h with a CUDA_VERSION)" >&2
			exit 1
		fi
		source=debian
	elif ((version / 1000 != 11 && version / 1000 != 12)); then
		msg="the CUDA toolkit in $cuda_home is $((version / 1000)).$((version % 1000 / 10)); gorgonia.org/cu needs CUDA 11 or 12"
		if [[ -n ${CUDA_HOME:-} || $source == toolkit ]]; then
			echo "build-cuda: $msg" >&2
			exit 1
		fi
		echo "build-cuda: $msg: using Debian's CUDA 11.8 headers instead" >&2
		source=debian
	else
		source=toolkit
	fi
fi
if [[ $source == toolkit ]]; then
	[[ $cuda_home != *[[:space:]]* ]] || {
		echo "build-cuda: the CUDA toolkit path '$cuda_home' contains whitespace: cgo flags cannot carry it" >&2
		exit 1
	}
	CGO_CFLAGS="-I$cuda_home/include"
	if [[ -d $cuda_home/include/cccl ]]; then
		CGO_CFLAGS+=" -I$cuda_home/include/cccl"
	fi
	CGO_LDFLAGS="-L$cuda_home/lib64/stubs -L$cuda_home/lib64"
	echo "build-cuda: CUDA $((version / 1000)).$((version % 1000 / 10)) toolkit in $cuda_home" >&2
else
	eval "$("$here/cuda-headers.sh")"
	echo "build-cuda: Debian's CUDA 11.8 headers and stubs in $BEAMGPU_CUDA_DIR" >&2
fi
export CGO_ENABLED=1
export CGO_CFLAGS="$user_cflags $CGO_CFLAGS"
export CGO_LDFLAGS="$user_ldflags $CGO_LDFLAGS"

pkgs=(./runtime/executor/cuda/... ./transforms/... ./pipelines/beamgpu-executor)
if [[ -n $out ]]; then
	mkdir -p "$out"
	# With -o DIR/ the commands are linked into DIR and the libraries only compiled.
	echo "build-cuda: go build -tags cuda -o $out/ ${pkgs[*]}" >&2
	go build -tags cuda -o "$out/" "${pkgs[@]}"
else
	echo "build-cuda: go build -tags cuda ${pkgs[*]}" >&2
	go build -tags cuda "${pkgs[@]}"
fi
echo "build-cuda: go vet -tags cuda ${pkgs[*]}" >&2
go vet -tags cuda "${pkgs[@]}"
echo "build-cuda: go test -tags cuda -c ./runtime/executor/cuda/ (its tests need a GPU to run)" >&2
go test -tags cuda -c -o /dev/null ./runtime/executor/cuda/
# The launches are pure Go against gpu.Call: their tests run here, without a GPU
# (a package that links gorgonia.org/cu could not start: its init exits).
launch_tests=(./transforms/raster/ ./transforms/tensor/ ./transforms/onnx/onnxstep/)
echo "build-cuda: go test -tags cuda -run Launch ${launch_tests[*]} (no GPU needed)" >&2
go test -tags cuda -count=1 -run 'Launch' "${launch_tests[@]}"
# A step from another module: the example module (examples/clipstep, its own go.mod,
# whose replace directive points at this checkout) builds, vets and tests with -tags
# cuda against the same headers, as docs/writing-a-step.md's "The CUDA side" says
# (its launch's check runs; no GPU needed).
echo "build-cuda: the example module: go vet and test -tags cuda ./..., go build -tags cuda ./cmd/clip-executor" >&2
(
	cd examples/clipstep
	export GOWORK=off
	go vet -tags cuda ./...
	go test -tags cuda -count=1 ./...
	go build -tags cuda -o /dev/null ./cmd/clip-executor
)
if [[ -n $executor ]]; then
	echo "build-cuda: in $executor_mod: go build -tags cuda -o $out/beamgpu-executor $executor_rel" >&2
	executor_go build -tags cuda -o "$out/beamgpu-executor" "$executor_rel"
fi
if [[ -n $out ]]; then
	echo "build-cuda: binaries in $out" >&2
fi
echo "build-cuda: ok" >&2
