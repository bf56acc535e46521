#!/usr/bin/env bash
# build-cuda.sh: build, vet and compile the tests of the cuda-tagged packages
# (runtime/executor/cuda and its commands) against CUDA 11.8's headers and link stubs,
# which containers/cuda-headers.sh fetches into its cache on the first run. It needs
# no GPU and runs nothing on one: CI calls it on every change (with `make ptx-check`),
# and the Dockerfile's builder stage can call it with --out to get the binaries.
#
# Usage: containers/build-cuda.sh [--out DIR]
#   --out DIR  also write the commands' binaries (cudaprobe) into DIR
#
# The binaries need, where they run, the NVIDIA driver (libcuda.so.1, R520 or newer
# for the PTX) and CUDA 11's libcublas.so.11 and libcublasLt.so.11.
set -euo pipefail

out=
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
	*)
		echo "build-cuda: unknown argument $1" >&2
		exit 2
		;;
	esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
# Keep cgo's default optimisation flags (they apply only when CGO_CFLAGS is unset).
user_cflags=${CGO_CFLAGS:--O2 -g}
user_ldflags=${CGO_LDFLAGS:-}
eval "$("$here/cuda-headers.sh")"
export CGO_ENABLED=1
export CGO_CFLAGS="$user_cflags $CGO_CFLAGS"
export CGO_LDFLAGS="$user_ldflags $CGO_LDFLAGS"

pkgs=(./runtime/executor/cuda/... ./runtime/executor/cmd/beamgpu-executor)
echo "build-cuda: go build -tags cuda ${pkgs[*]}" >&2
go build -tags cuda "${pkgs[@]}"
echo "build-cuda: go vet -tags cuda ${pkgs[*]}" >&2
go vet -tags cuda "${pkgs[@]}"
echo "build-cuda: go test -tags cuda -c (the tests need a GPU to run)" >&2
go test -tags cuda -c -o /dev/null ./runtime/executor/cuda/
if [[ -n $out ]]; then
	mkdir -p "$out"
	go build -tags cuda -o "$out/" ./runtime/executor/cuda/cmd/... ./runtime/executor/cmd/beamgpu-executor
	echo "build-cuda: binaries in $out" >&2
fi
echo "build-cuda: ok" >&2
