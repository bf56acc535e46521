# executor-pkg.sh, sourced by build-worker.sh, build-cuda.sh, build-rehearsal.sh and
# executor-ops.sh: where an executor's main package is built, and how.
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

# executor_go ARGS... runs `go ARGS...` in executor_mod (GOWORK=off). A module that
# replaces github.com/beamgpu/beamgpu with a directory that is not there (a path of the
# machine it was written on, such as `replace github.com/beamgpu/beamgpu =>
# /home/me/beamgpu`, inside the image's builder) is built against this checkout instead,
# through a copy of its go.mod (-modfile; its own go.mod is left as it is); a replace that
# resolves, or a required version without one, is the module's own choice and is kept.
executor_go() {
	local root target modfile=
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	target=$(cd "$executor_mod" && GOWORK=off go mod edit -print |
		sed -n 's#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}github\.com/beamgpu/beamgpu\([[:space:]]\{1,\}v[^[:space:]]*\)\{0,1\}[[:space:]]\{1,\}=>[[:space:]]\{1,\}\([^[:space:]]\{1,\}\)[[:space:]]*$#\3#p' | head -n 1)
	if [[ $target == .* || $target == /* ]]; then
		case $target in /*) ;; *) target=$executor_mod/$target ;; esac
		if [[ ! -f $target/go.mod ]]; then
			modfile=$(mktemp -d)/go.mod
			cp "$executor_mod/go.mod" "$modfile"
			[[ ! -f $executor_mod/go.sum ]] || cp "$executor_mod/go.sum" "${modfile%.mod}.sum"
			GOWORK=off go mod edit -replace "github.com/beamgpu/beamgpu=$root" "$modfile"
			echo "executor: $executor_mod/go.mod replaces github.com/beamgpu/beamgpu with $target, which is not here: building against $root" >&2
		fi
	fi
	local status=0
	(
		cd "$executor_mod"
		if [[ -n $modfile ]]; then
			GOWORK=off go "$1" -modfile="$modfile" "${@:2}"
		else
			GOWORK=off go "$@"
		fi
	) || status=$?
	[[ -z $modfile ]] || rm -rf "$(dirname "$modfile")"
	return $status
}
