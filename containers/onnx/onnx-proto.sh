#!/usr/bin/env bash
# Regenerates transforms/onnx/onnxpb/onnx.pb.go from onnx.proto beside it (make
# onnx-proto), or with --check fails when the committed file differs from what it
# generates (make onnx-proto-check, run by CI).
#
# The tools do not depend on what is installed: protoc is Debian bookworm's
# protobuf-compiler (3.21.12, with its libprotoc and libprotobuf, fetched without
# root by containers/debian-fetch.sh and run through LD_LIBRARY_PATH), and
# protoc-gen-go is built from the google.golang.org/protobuf version that go.mod
# requires. Both versions are written into the generated file's header.
#
# Usage: containers/onnx/onnx-proto.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
pkg=transforms/onnx/onnxpb
check=0
case ${1:-} in
--check) check=1 ;;
"") ;;
*)
	echo "onnx-proto: unknown argument $1 (usage: $0 [--check])" >&2
	exit 2
	;;
esac

root=$(containers/debian-fetch.sh --quiet protobuf-compiler libprotoc32 libprotobuf32)
lib=$(compgen -G "$root/usr/lib/*/libprotoc.so.32" | head -1) || {
	echo "onnx-proto: no libprotoc.so.32 in $root" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GO" build -o "$tmp/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$root/usr/bin/protoc" \
	--plugin=protoc-gen-go="$tmp/protoc-gen-go" \
	-I "$pkg" \
	--go_out="$tmp" \
	--go_opt=paths=source_relative \
	--go_opt=Monnx.proto=github.com/beamgpu/beamgpu/$pkg \
	onnx.proto

if [[ $check == 1 ]]; then
	if ! diff -u "$pkg/onnx.pb.go" "$tmp/onnx.pb.go" >"$tmp/diff"; then
		echo "onnx-proto-check: $pkg/onnx.pb.go is not what $pkg/onnx.proto generates: run make onnx-proto" >&2
		head -40 "$tmp/diff" >&2
		exit 1
	fi
	echo "onnx-proto-check: $pkg/onnx.pb.go ok ($(sed -n 's|^// \t\(protoc[^ ]*\) *\(v.*\)|\1 \2|p' "$pkg/onnx.pb.go" | paste -sd, | sed 's/,/, /'))"
else
	mv "$tmp/onnx.pb.go" "$pkg/onnx.pb.go"
	echo "onnx-proto: $pkg/onnx.proto -> $pkg/onnx.pb.go"
fi
