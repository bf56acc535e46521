#!/usr/bin/env bash
# executor-ops.sh: print the GPU ops that the CUDA build of an executor's main package
# serves, one a line, without a GPU, cgo or the CUDA libraries: it runs `ops` on the
# package built with -tags cuda,beamgpu_oplist (transforms/step/serve/oplist.go: every
# GPU op whose step has a CUDA launch; the probes echo and discard too).
#
# The worker image's build writes this list into the image, as the label
# org.beamgpu.executor.ops (make image) and the file /opt/beamgpu/executor-ops.txt
# (containers/build-worker.sh), and into out/image/executor-ops.txt, which the launcher
# reads (--executor_ops=FILE) to check that the image serves every step it plans on
# the GPU.
#
# Usage: containers/executor-ops.sh [PKG]
#   PKG  the executor's main package directory (default: this repository's
#        ./pipelines/beamgpu-executor); relative to the current directory.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=executor-pkg.sh
source "$here/executor-pkg.sh"
pkg=${1:-$here/../pipelines/beamgpu-executor}
executor_pkg "$pkg"
CGO_ENABLED=0 executor_go run -tags cuda,beamgpu_oplist "$executor_rel" ops
