#!/usr/bin/env bash
# stage-executor.sh: put an executor's main package where the worker image's build
# (the root Dockerfile, whose build context is this checkout) can build it, and print
# its path in the build context, for the Dockerfile's EXECUTOR argument (make image
# runs it).
#
# A package inside this checkout is printed as it is (./examples/clipstep/cmd/clip-executor).
# A package of a module elsewhere (your own module, ~/clipstep/cmd/clip-executor) has its
# module copied to .executor/MODULE in the checkout (without .git and out/; ignored by git;
# replaced on every run), and that copy's package is printed. Inside the image's builder
# the module's `replace github.com/beamgpu/beamgpu => /your/path` names a directory that
# is not there, so the build uses the checkout's beamgpu instead (containers/executor-pkg.sh).
#
# Usage: containers/stage-executor.sh PKG
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
[[ $# -eq 1 && -n $1 ]] || {
	echo "stage-executor: usage: $0 PKG (the executor's main package directory)" >&2
	exit 2
}
# shellcheck source=executor-pkg.sh
source "$here/executor-pkg.sh"
executor_pkg "$1"
pkg=$executor_mod/${executor_rel#./}
pkg=${pkg%/.}
case $pkg/ in
"$root"/*)
	rel=${pkg#"$root"}
	echo ".${rel:-/}"
	exit 0
	;;
esac
name=$(basename "$executor_mod")
stage=$root/.executor
rm -rf "${stage:?}/$name"
mkdir -p "$stage/$name"
# The module's files, without its git metadata and build outputs.
tar -C "$executor_mod" --exclude=./.git --exclude=./out -cf - . | tar -C "$stage/$name" -xf -
echo "stage-executor: copied the module $executor_mod into $stage/$name (the image's build context)" >&2
rel=${executor_rel#.}
echo "./.executor/$name$rel"
