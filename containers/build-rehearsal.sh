#!/usr/bin/env bash
# build-rehearsal.sh: lay out the worker image's paths under a directory, for a
# local rehearsal of the Dataflow workers (the launcher's --rehearse=DIR; make
# rehearse runs this, then the pipeline):
#
#   DIR/opt/apache/beam/boot              Beam's Go boot loader, built from the Beam
#                                         module of go.mod (sdks/go/container), as
#                                         the image's comes from apache/beam_go_sdk
#   DIR/opt/beamgpu/bin/beamgpu-boot      the image's entrypoint (cmd/beamgpu-boot)
#   DIR/opt/beamgpu/bin/beamgpu-executor  the executor: the CPU reference build of
#                                         EXECUTOR (no GPU needed; the image has
#                                         the CUDA build of the same package)
#   DIR/opt/beamgpu/executor-ops.txt      the ops it serves (as the image's label)
#   DIR/opt/beamgpu/worker.env            containers/worker.env, the image's
#                                         environment (the same file, copied)
#
# Usage: containers/build-rehearsal.sh --out DIR [--executor PKG]
#   --executor PKG  the executor's main package (default: this repository's
#                   ./pipelines/beamgpu-executor); a path such as ./cmd/my-executor
#                   is built in the module of the current directory.
# Everything builds offline from the module cache; nothing needs root or Docker.
set -euo pipefail

out=
executor=
while [[ $# -gt 0 ]]; do
	case $1 in
	--out | --executor)
		[[ $# -ge 2 && -n $2 ]] || {
			echo "build-rehearsal: $1 needs a value" >&2
			exit 2
		}
		declare "${1#--}=$2"
		shift 2
		;;
	--out=* | --executor=*)
		v=${1#*=}
		k=${1%%=*}
		declare "${k#--}=$v"
		shift
		;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "build-rehearsal: unknown argument $1 (see --help)" >&2
		exit 2
		;;
	esac
done
[[ -n $out ]] || {
	echo "build-rehearsal: usage: $0 --out DIR [--executor PKG]" >&2
	exit 2
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
caller=$PWD
mkdir -p "$out/opt/apache/beam" "$out/opt/beamgpu/bin"
out=$(cd "$out" && pwd)
export CGO_ENABLED=0

cd "$root"
echo "build-rehearsal: go build -o $out/opt/apache/beam/boot github.com/apache/beam/sdks/v2/go/container" >&2
go build -o "$out/opt/apache/beam/boot" github.com/apache/beam/sdks/v2/go/container
echo "build-rehearsal: go build -o $out/opt/beamgpu/bin/beamgpu-boot ./cmd/beamgpu-boot" >&2
go build -o "$out/opt/beamgpu/bin/beamgpu-boot" ./cmd/beamgpu-boot
cp containers/worker.env "$out/opt/beamgpu/worker.env"

if [[ -z $executor ]]; then
	executor=./pipelines/beamgpu-executor
else
	cd "$caller"
fi
echo "build-rehearsal: go build -o $out/opt/beamgpu/bin/beamgpu-executor $executor (the CPU reference executor)" >&2
go build -o "$out/opt/beamgpu/bin/beamgpu-executor" "$executor"
"$out/opt/beamgpu/bin/beamgpu-executor" ops >"$out/opt/beamgpu/executor-ops.txt"
echo "build-rehearsal: ok: $out (run a pipeline with --rehearse=$out)" >&2
