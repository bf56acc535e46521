#!/usr/bin/env bash
# build-worker.sh: build every binary of the worker image (the root Dockerfile)
# into one directory; the image copies them to /opt/beamgpu/bin:
#
#   beamgpu-executor  the CUDA executor (-tags cuda, cgo), at client.DefaultPath: the
#                     CUDA build of --executor PKG (default ./pipelines/beamgpu-executor)
#   executor-ops.txt  the GPU ops it serves, one a line (containers/executor-ops.sh):
#                     the image's /opt/beamgpu/executor-ops.txt; make image puts the
#                     same list in the label org.beamgpu.executor.ops
#   beamgpu-boot      the image's entrypoint (cmd/beamgpu-boot): applies worker.env,
#                     then starts Beam's boot loader
#   cudaprobe         what the GPU and driver are, from inside the container
#   landsat           ./pipelines/landsat       \
#   fashion           ./pipelines/fashion        > pure Go (CGO_ENABLED=0)
#   fashion-train     ./pipelines/fashion/train /
#
# The CUDA half is containers/build-cuda.sh (which also vets the cuda packages and
# compiles their tests): against the CUDA 12 toolkit of the Dockerfile's builder
# stage, or Debian's CUDA 11.8 headers on a machine without a toolkit. The
# Dockerfile runs this script and CI runs it on every change, so the image's build
# steps are proven without a Docker engine.
#
# Usage: containers/build-worker.sh --out DIR [--executor PKG]
#   --executor PKG  the executor's main package directory, relative to the current
#                   directory: a module's own executor (./examples/clipstep/cmd/clip-executor,
#                   a module of its own, is built in that module), so that the image serves
#                   that module's ops. Default: ./pipelines/beamgpu-executor.
set -euo pipefail

out=
executor=
while [[ $# -gt 0 ]]; do
	case $1 in
	--executor)
		[[ $# -ge 2 && -n $2 ]] || {
			echo "build-worker: --executor needs a package directory" >&2
			exit 2
		}
		executor=$2
		shift 2
		;;
	--executor=*)
		executor=${1#--executor=}
		shift
		;;
	--out)
		[[ $# -ge 2 && -n $2 ]] || {
			echo "build-worker: --out needs a directory" >&2
			exit 2
		}
		out=$2
		shift 2
		;;
	--out=*)
		out=${1#--out=}
		shift
		;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "build-worker: unknown argument $1 (see --help)" >&2
		exit 2
		;;
	esac
done
[[ -n $out ]] || {
	echo "build-worker: usage: $0 --out DIR" >&2
	exit 2
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
executor=${executor:-$here/../pipelines/beamgpu-executor}
executor=$(cd "$executor" 2>/dev/null && pwd) || {
	echo "build-worker: --executor: not a directory" >&2
	exit 2
}
cd "$here/.."

start=$SECONDS
"$here/build-cuda.sh" --out "$out" --executor "$executor"
echo "build-worker: containers/executor-ops.sh $executor > $out/executor-ops.txt" >&2
"$here/executor-ops.sh" "$executor" >"$out/executor-ops.txt"
echo "build-worker: CGO_ENABLED=0 go build -o $out/beamgpu-boot ./cmd/beamgpu-boot" >&2
CGO_ENABLED=0 go build -o "$out/beamgpu-boot" ./cmd/beamgpu-boot

# The pipelines and the trainer stay pure Go: a Dataflow launch cross-compiles the
# worker with CGO_ENABLED=0 anyway, and none of them may import gorgonia.org/cu.
declare -A pure=(
	[landsat]=./pipelines/landsat
	[fashion]=./pipelines/fashion
	[fashion-train]=./pipelines/fashion/train
)
for name in landsat fashion fashion-train; do
	echo "build-worker: CGO_ENABLED=0 go build -o $out/$name ${pure[$name]}" >&2
	CGO_ENABLED=0 go build -o "$out/$name" "${pure[$name]}"
done

[[ -s $out/executor-ops.txt ]] || {
	echo "build-worker: $out/executor-ops.txt is empty" >&2
	exit 1
}
for name in beamgpu-executor beamgpu-boot cudaprobe landsat fashion fashion-train; do
	[[ -x $out/$name ]] || {
		echo "build-worker: $out/$name was not built" >&2
		exit 1
	}
done
echo "build-worker: ok in $((SECONDS - start)) s: beamgpu-executor (of $executor; ops in executor-ops.txt) beamgpu-boot cudaprobe landsat fashion fashion-train in $out" >&2
