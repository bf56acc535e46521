#!/usr/bin/env bash
# ONNX Runtime for Node.js (npm's onnxruntime-node), the peer that beamgpu's ONNX
# runtime is held to: installed on first use into a cache directory (never into the
# repository) and reused after.
#
#   <cache>/onnxruntime-node-<version>/node_modules/onnxruntime-node
#   <cache> = ${XDG_CACHE_HOME:-$HOME/.cache}/beamgpu   (BEAMGPU_ORT_DIR overrides the whole path)
#
# npm install --ignore-scripts: the package's install script downloads a CUDA
# add-on from GitHub, which fails offline and is not needed on the CPU; the CPU
# runtime (libonnxruntime.so and the N-API binding, about 290 MB unpacked for
# every platform) is in the package itself. A second run finds the stamp and only
# prints (well under a second); concurrent runs are serialised with flock.
#
# Usage: containers/onnx/ort.sh [--quiet]           print the directory to put in NODE_PATH
#        containers/onnx/ort.sh [--quiet] -- ARGS   run `node ARGS` with it in NODE_PATH
#
# Environment:
#   BEAMGPU_ORT_VERSION  the onnxruntime-node version (default 1.30.0)
#   BEAMGPU_ORT_DIR      the install directory (default above)
#   NODE, NPM            the node and npm commands (default node, npm)
set -euo pipefail

readonly default_version=1.30.0

quiet=0
run=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--quiet | -q)
		quiet=1
		shift
		;;
	--)
		run=1
		shift
		break
		;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		printf 'ort: error: unknown argument %s (see --help)\n' "$1" >&2
		exit 2
		;;
	esac
done

log() {
	if [[ $quiet == 0 ]]; then
		printf 'ort: %s\n' "$*" >&2
	fi
}

die() {
	printf 'ort: error: %s\n' "$*" >&2
	exit 1
}

version=${BEAMGPU_ORT_VERSION:-$default_version}
node=${NODE:-node}
npm=${NPM:-npm}
dir=${BEAMGPU_ORT_DIR:-}
if [[ -z $dir ]]; then
	cache_root=${XDG_CACHE_HOME:-}
	if [[ -z $cache_root ]]; then
		[[ -n ${HOME:-} ]] || die "neither BEAMGPU_ORT_DIR, XDG_CACHE_HOME nor HOME is set"
		cache_root=$HOME/.cache
	fi
	dir=$cache_root/beamgpu/onnxruntime-node-$version
fi
[[ $dir == /* ]] || dir=$PWD/$dir
modules=$dir/node_modules
stamp=$dir/.beamgpu-ort-stamp
want_stamp="onnxruntime-node@$version"

complete() {
	[[ -f $stamp && $(<"$stamp") == "$want_stamp" && -f $modules/onnxruntime-node/package.json ]]
}

finish() {
	if [[ $run == 1 ]]; then
		NODE_PATH=$modules${NODE_PATH:+:$NODE_PATH} exec "$node" "$@"
	fi
	printf '%s\n' "$modules"
	exit 0
}

if complete; then
	finish "$@"
fi

command -v "$node" >/dev/null || die "$node not found (apt-get install nodejs)"
command -v "$npm" >/dev/null || die "$npm not found (apt-get install npm)"
mkdir -p "${dir%/*}"
if command -v flock >/dev/null; then
	exec 9>"$dir.lock"
	flock 9
	if complete; then
		finish "$@"
	fi
fi

work=$(mktemp -d "$dir.tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "installing onnxruntime-node@$version into $dir (about 290 MB; npm install --ignore-scripts)"
printf '{"name": "beamgpu-ort-peer", "private": true}\n' >"$work/package.json"
if ! (cd "$work" && "$npm" install --ignore-scripts --no-audit --no-fund --loglevel=error "onnxruntime-node@$version") >"$work.log" 2>&1; then
	cat "$work.log" >&2
	rm -f "$work.log"
	die "npm install onnxruntime-node@$version failed"
fi
if [[ $quiet == 0 ]]; then
	cat "$work.log" >&2
fi
rm -f "$work.log"
(cd "$work" && NODE_PATH=$work/node_modules "$node" -e 'require("onnxruntime-node")') ||
	die "onnxruntime-node@$version was installed but does not load on this machine"
printf '%s\n' "$want_stamp" >"$work/.beamgpu-ort-stamp.new"
rm -rf "$dir"
mv "$work" "$dir"
trap - EXIT
# The stamp last: an interrupted run leaves no stamp and the next one starts over.
mv "$dir/.beamgpu-ort-stamp.new" "$stamp"
log "onnxruntime-node $version in $dir ($(du -sh "$dir" | cut -f1))"
finish "$@"
