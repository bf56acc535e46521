# executor-pkg.sh, sourced by build-worker.sh, build-cuda.sh, build-rehearsal.sh and
# executor-ops.sh: where an executor's main package is built.
#
# executor_pkg PKG sets executor_mod (the directory of the module that holds PKG, a
# directory such as ./pipelines/beamgpu-executor or ./examples/clipstep/cmd/clip-executor,
# relative to the current directory) and executor_rel (PKG relative to it, ./...). An
# executor of another module (its own go.mod, as examples/clipstep has) is built in that
# module with GOWORK=off, as its own `go build` would build it.
executor_pkg() {
	local pkg=$1 dir mod
	dir=$(cd "$pkg" 2>/dev/null && pwd) || {
		echo "executor: $pkg is not a directory (want the executor's main package, e.g. ./cmd/my-executor)" >&2
		return 1
	}
	mod=$dir
	while [[ $mod != / && ! -f $mod/go.mod ]]; do
		mod=$(dirname "$mod")
	done
	[[ -f $mod/go.mod ]] || {
		echo "executor: $pkg is in no Go module (no go.mod above $dir)" >&2
		return 1
	}
	executor_mod=$mod
	executor_rel=.${dir#"$mod"}
	[[ $executor_rel == . ]] || executor_rel=./${executor_rel#./}
	executor_rel=${executor_rel/#.\/\//./}
}
