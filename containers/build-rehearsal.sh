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
#   --executor PKG  the executor's main package directory, relative to the current
#                   directory (default: this repository's ./pipelines/beamgpu-executor);
#                   one in a module of its own (./cmd/my-executor in yours) is built
#                   in that module (containers/executor-pkg.sh).
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
# shellcheck source=executor-pkg.sh
source "$here/executor-pkg.sh"
executor_pkg "${executor:-$root/pipelines/beamgpu-executor}"
mkdir -p "$out/opt/apache/beam" "$out/opt/beamgpu/bin"
out=$(cd "$out" && pwd)
export CGO_ENABLED=0

cd "$root"
echo "build-rehearsal: go build -o $out/opt/apache/beam/boot github.com/apache/beam/sdks/v2/go/container" >&2
go build -o "$out/opt/apache/beam/boot" github.com/apache/beam/sdks/v2/go/container
echo "build-rehearsal: go build -o $out/opt/beamgpu/bin/beamgpu-boot ./cmd/beamgpu-boot" >&2
go build -o "$out/opt/beamgpu/bin/beamgpu-boot" ./cmd/beamgpu-boot
cp containers/worker.env "$out/opt/beamgpu/worker.env"

echo "build-rehearsal: in $executor_mod: go build -o $out/opt/beamgpu/bin/beamgpu-executor $executor_rel (the CPU reference executor)" >&2
executor_go build -o "$out/opt/beamgpu/bin/beamgpu-executor" "$executor_rel"
# The ops it serves, as the image lists its CUDA executor's (containers/executor-ops.sh):
# the reference executor serves every GPU op of the steps it links.
"$out/opt/beamgpu/bin/beamgpu-executor" ops >"$out/opt/beamgpu/executor-ops.txt"
echo "build-rehearsal: ok: $out (run a pipeline with --rehearse=$out)" >&2
