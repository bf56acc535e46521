#!/usr/bin/env bash
# cuda-headers.sh: the CUDA 11.8 headers, link stubs and nvcc that the cuda build
# (go build -tags cuda ./runtime/executor/cuda/...) and cmd/beamgpu-ptx (`make ptx`) need, taken from
# Debian bookworm's non-free packages nvidia-cuda-dev (headers + stubs) and
# nvidia-cuda-toolkit (nvcc) WITHOUT installing them: the .debs are fetched with
# `apt-get download` through a private apt state (its own sources list for
# `bookworm non-free`, lists and cache in a temporary directory; /etc/apt and the
# system's package state are never touched, root is not needed), and only what a
# build needs is extracted into a cache directory (about 90 MB; the 860 MB of .debs
# are deleted):
#
#   ${BEAMGPU_CUDA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/beamgpu/cuda-11.8}
#     usr/include/                           cuda.h, cublas_v2.h, nvrtc.h, cuda_runtime.h, ...
#     usr/lib/<multiarch>/stubs/             libcuda.so, libcublas.so, libnvrtc.so link stubs
#     usr/lib/nvidia-cuda-toolkit/bin/nvcc   with an nvcc.profile repointed to relative paths
#     usr/bin/{ptxas,cudafe++,fatbinary}     (cicc and libdevice beside nvcc)
#
# A second run finds the stamp file and does nothing but print (well under a second).
# Concurrent runs are serialised with flock. CI runs it on every change (through
# containers/build-cuda.sh); the Dockerfile's builder stage does not need it, as it
# builds against its CUDA 12 toolkit.
#
# Usage: containers/cuda-headers.sh [--env-file FILE] [--quiet]
#
# stdout: NAME=VALUE lines (no quoting: the cache path may not contain whitespace):
#   CGO_CFLAGS=-I<dir>/usr/include
#   CGO_LDFLAGS=-L<dir>/usr/lib/<multiarch>/stubs
#   NVCC=<dir>/usr/lib/nvidia-cuda-toolkit/bin/nvcc
#   BEAMGPU_CUDA_DIR=<dir>
# so `eval "$(containers/cuda-headers.sh)"; export CGO_CFLAGS CGO_LDFLAGS` works, and
# --env-file FILE appends the same lines to FILE (the format of $GITHUB_ENV, of
# `docker run --env-file` and of a make include). <dir>/env.sh holds them as `export`
# lines, for `. <dir>/env.sh`.
#
# Environment:
#   BEAMGPU_CUDA_DIR          the cache directory (default above)
#   BEAMGPU_CUDA_DEB_VERSION  the Debian version of both packages (default
#                             11.8.89~11.8.0-5~deb12u1, the one the committed PTX was
#                             generated with; empty: the candidate of the sources)
#   BEAMGPU_DEBIAN_MIRROR     default http://deb.debian.org/debian
#   BEAMGPU_DEBIAN_KEYRING    default /usr/share/keyrings/debian-archive-keyring.gpg
#
# A binary built with these stubs needs, at run time, the NVIDIA driver's libcuda.so.1
# and CUDA 11's libcublas.so.11 / libcublasLt.so.11 (e.g. Debian's libcublas11 or an
# nvidia/cuda:11.8 runtime image).
set -euo pipefail

readonly default_version='11.8.89~11.8.0-5~deb12u1'
# Bump layout when what is extracted changes, so that old caches are rebuilt.
readonly layout=1

log() {
	if [[ $quiet == 0 ]]; then
		printf 'cuda-headers: %s\n' "$*" >&2
	fi
}

die() {
	printf 'cuda-headers: error: %s\n' "$*" >&2
	exit 1
}

quiet=0
env_file=
while [[ $# -gt 0 ]]; do
	case $1 in
	--env-file)
		[[ $# -ge 2 ]] || die "--env-file needs a file name"
		env_file=$2
		shift 2
		;;
	--env-file=*)
		env_file=${1#--env-file=}
		shift
		;;
	--quiet | -q)
		quiet=1
		shift
		;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		die "unknown argument $1 (see --help)"
		;;
	esac
done

if [[ -z ${BEAMGPU_CUDA_DIR:-} ]]; then
	cache_root=${XDG_CACHE_HOME:-}
	if [[ -z $cache_root ]]; then
		[[ -n ${HOME:-} ]] || die "neither BEAMGPU_CUDA_DIR, XDG_CACHE_HOME nor HOME is set"
		cache_root=$HOME/.cache
	fi
	BEAMGPU_CUDA_DIR=$cache_root/beamgpu/cuda-11.8
fi
dir=$BEAMGPU_CUDA_DIR
[[ $dir != *[[:space:]]* ]] || die "the cache directory '$dir' contains whitespace: cgo flags cannot carry it; set BEAMGPU_CUDA_DIR"
[[ $dir == /* ]] || dir=$PWD/$dir
version=${BEAMGPU_CUDA_DEB_VERSION-$default_version}
mirror=${BEAMGPU_DEBIAN_MIRROR:-http://deb.debian.org/debian}
keyring=${BEAMGPU_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}

command -v dpkg >/dev/null || die "dpkg not found: this script needs a Debian or Ubuntu system"
arch=$(dpkg --print-architecture)
case $arch in
amd64) multiarch=x86_64-linux-gnu ;;
arm64) multiarch=aarch64-linux-gnu ;;
ppc64el) multiarch=powerpc64le-linux-gnu ;;
*) die "architecture $arch: Debian has no nvidia-cuda-dev for it" ;;
esac

include_dir=$dir/usr/include
stub_dir=$dir/usr/lib/$multiarch/stubs
nvcc=$dir/usr/lib/nvidia-cuda-toolkit/bin/nvcc
stamp=$dir/.beamgpu-cuda-stamp
want_stamp="layout=$layout version=${version:-candidate} arch=$arch"

emit() {
	local lines
	lines=$(printf '%s\n' \
		"CGO_CFLAGS=-I$include_dir" \
		"CGO_LDFLAGS=-L$stub_dir" \
		"NVCC=$nvcc" \
		"BEAMGPU_CUDA_DIR=$dir")
	printf '%s\n' "$lines"
	if [[ -n $env_file ]]; then
		printf '%s\n' "$lines" >>"$env_file"
	fi
}

complete() {
	[[ -f $stamp && $(<"$stamp") == "$want_stamp" && -f $include_dir/cuda.h &&
		-f $include_dir/cublas_v2.h && -f $stub_dir/libcuda.so && -f $stub_dir/libcublas.so &&
		-x $nvcc && -f ${nvcc%/*}/nvcc.profile ]]
}

if complete; then
	emit
	exit 0
fi

mkdir -p "${dir%/*}"
# Serialise concurrent runs (two CI jobs on one cache); the second finds the work done.
if command -v flock >/dev/null; then
	exec 9>"$dir.lock"
	flock 9
	if complete; then
		emit
		exit 0
	fi
fi

for tool in apt-get dpkg-deb tar; do
	command -v "$tool" >/dev/null || die "$tool not found"
done
[[ -r $keyring ]] || die "no Debian archive keyring at $keyring (apt-get install debian-archive-keyring, or set BEAMGPU_DEBIAN_KEYRING)"

work=$(mktemp -d "$dir.tmp.XXXXXX")
cleanup() { rm -rf "$work"; }
trap cleanup EXIT

# A private apt: its own sources list, lists, cache and (empty) dpkg status, so
# nothing under /etc/apt or /var/lib/apt changes and no root is needed. Proxy
# settings of /etc/apt/apt.conf.d still apply.
apt_dir=$work/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources.list.d" "$work/debs" "$work/root"
: >"$apt_dir/status"
printf 'deb [signed-by=%s] %s bookworm contrib non-free\n' "$keyring" "$mirror" >"$apt_dir/sources.list"
apt_opts=(
	-o "Dir::State=$apt_dir"
	-o "Dir::State::Lists=$apt_dir/lists"
	-o "Dir::State::status=$apt_dir/status"
	-o "Dir::Cache=$apt_dir/cache"
	-o "Dir::Etc::SourceList=$apt_dir/sources.list"
	-o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
	-o "Debug::NoLocking=1"
	# As root apt would hand the download to user _apt, who cannot write the
	# private 0700 directory (and apt would warn); as another user this is a no-op.
	-o "APT::Sandbox::User=root"
)
log "fetching the bookworm contrib/non-free package lists from $mirror"
apt-get "${apt_opts[@]}" -qq update >&2 || die "apt-get update of the private sources failed"

pkgs=(nvidia-cuda-dev nvidia-cuda-toolkit)
if [[ -n $version ]]; then
	pkgs=("nvidia-cuda-dev=$version" "nvidia-cuda-toolkit=$version")
fi
log "downloading ${pkgs[*]} (about 860 MB; apt checks them against the signed index)"
(cd "$work/debs" && apt-get "${apt_opts[@]}" -qq download "${pkgs[@]}" >&2) ||
	die "apt-get download ${pkgs[*]} failed (a newer point release? set BEAMGPU_CUDA_DEB_VERSION to the version apt-cache policy shows, or to empty for the candidate)"

dev_deb=$(compgen -G "$work/debs/nvidia-cuda-dev_*.deb")
tk_deb=$(compgen -G "$work/debs/nvidia-cuda-toolkit_*.deb")

log "extracting headers and link stubs"
dpkg-deb --fsys-tarfile "$dev_deb" |
	tar -x -C "$work/root" --wildcards './usr/include/*' "./usr/lib/$multiarch/stubs/*"

log "extracting nvcc"
tk=./usr/lib/nvidia-cuda-toolkit
dpkg-deb --fsys-tarfile "$tk_deb" |
	tar -x -C "$work/root" "$tk/bin/nvcc" "$tk/bin/cicc" "$tk/bin/crt" "$tk/libdevice" \
		./usr/bin/cudafe++ ./usr/bin/ptxas ./usr/bin/fatbinary ./usr/include/nvvm.h

# The packaged nvcc.profile is a link to /etc/nvcc.profile with absolute /usr paths;
# replace it with one relative to nvcc itself ($(_HERE_) is nvcc's directory), with
# the include directory that the installed package would find in /usr/include.
cat >"$work/root/usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile" <<EOF
# Written by beamgpu's containers/cuda-headers.sh: paths relative to nvcc.
NVVMIR_LIBRARY_DIR = \$(_HERE_)/../libdevice

PATH		+= \$(_HERE_):\$(_HERE_)/../../../bin:

INCLUDES	+= "-I\$(_HERE_)/../../../include" \$(_SPACE_)

LIBRARIES	=+ \$(_SPACE_) "-L\$(_HERE_)/../../$multiarch/stubs"
EOF

# Debian's version of both packages, for the record.
deb_version=$(dpkg-deb -f "$tk_deb" Version)
printf '%s\n' "$want_stamp" >"$work/root/.beamgpu-cuda-stamp.new"
printf 'nvidia-cuda-dev and nvidia-cuda-toolkit %s from %s\n' "$deb_version" "$mirror" >"$work/root/SOURCE"
{
	printf 'export CGO_CFLAGS=-I%s\n' "$include_dir"
	printf 'export CGO_LDFLAGS=-L%s\n' "$stub_dir"
	printf 'export NVCC=%s\n' "$nvcc"
	printf 'export BEAMGPU_CUDA_DIR=%s\n' "$dir"
} >"$work/root/env.sh"

rm -rf "$dir"
mv "$work/root" "$dir"
# The stamp last: an interrupted run leaves no stamp and the next run starts over.
mv "$dir/.beamgpu-cuda-stamp.new" "$stamp"
log "CUDA $deb_version headers, stubs and nvcc in $dir ($(du -sh "$dir" | cut -f1))"
emit
