#!/usr/bin/env bash
# Fetches the files of Debian packages without root and without installing them:
# a private apt state (its own sources list, lists, cache and an empty dpkg status,
# so nothing under /etc/apt or /var/lib/apt changes), `apt-get download` (apt checks
# each .deb against the signed index) and `dpkg-deb -x` of each package into
#
#   <cache>/<name>/                 e.g. <cache>/libonnx-testdata/usr/share/...
#   <cache> = ${XDG_CACHE_HOME:-$HOME/.cache}/beamgpu/debian   (BEAMGPU_DEBIAN_CACHE overrides)
#   <name>  = the packages as given, joined with '+' (--name overrides)
#
# Only the named packages are fetched, not their dependencies: name every package
# whose files you need (e.g. protobuf-compiler libprotoc32 libprotobuf32, and run
# the program with LD_LIBRARY_PATH=<dir>/usr/lib/<multiarch>). Maintainer scripts
# are not run and no links are made into the system.
#
# A second run finds the stamp file and does nothing but print (well under a
# second). Concurrent runs are serialised with flock. containers/cuda-headers.sh
# does the same for the CUDA toolkit (with extraction of only what it needs).
#
# Usage: containers/debian-fetch.sh [--quiet] [--name NAME] [--path REL] PKG[=VERSION]...
#
# stdout: the directory the packages were extracted into, or with --path REL that
# directory's REL (which must exist), e.g.
#   containers/debian-fetch.sh --path usr/share/libonnx-testdata/data libonnx-testdata
#
# Environment:
#   BEAMGPU_DEBIAN_CACHE           the cache directory (default above)
#   BEAMGPU_DEBIAN_SUITE           default bookworm (with <suite>-updates and <suite>-security)
#   BEAMGPU_DEBIAN_COMPONENTS      default "main"
#   BEAMGPU_DEBIAN_MIRROR          default http://deb.debian.org/debian
#   BEAMGPU_DEBIAN_SECURITY_MIRROR default http://deb.debian.org/debian-security ("" for none)
#   BEAMGPU_DEBIAN_KEYRING         default /usr/share/keyrings/debian-archive-keyring.gpg
set -euo pipefail

# Bump layout when what is extracted or recorded changes, so that old caches are rebuilt.
readonly layout=1

quiet=0
name=
rel=
pkgs=()
log() {
	if [[ $quiet == 0 ]]; then
		printf 'debian-fetch: %s\n' "$*" >&2
	fi
}

die() {
	printf 'debian-fetch: error: %s\n' "$*" >&2
	exit 1
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--quiet | -q)
		quiet=1
		shift
		;;
	--name)
		[[ $# -ge 2 ]] || die "--name needs a value"
		name=$2
		shift 2
		;;
	--name=*)
		name=${1#--name=}
		shift
		;;
	--path)
		[[ $# -ge 2 ]] || die "--path needs a value"
		rel=$2
		shift 2
		;;
	--path=*)
		rel=${1#--path=}
		shift
		;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	-*)
		die "unknown option $1 (see --help)"
		;;
	*)
		# A package name (Debian policy: lower case letters, digits, + - .) and an
		# optional =VERSION (digits, letters, . + ~ - :).
		[[ $1 =~ ^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$ ]] || die "'$1' is not a Debian package name (PKG or PKG=VERSION)"
		pkgs+=("$1")
		shift
		;;
	esac
done
[[ ${#pkgs[@]} -gt 0 ]] || die "no package named (see --help)"
if [[ -z $name ]]; then
	name=$(IFS=+ && printf '%s' "${pkgs[*]}")
	name=${name//[:~]/_}
fi
[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9+._=-]*$ ]] || die "--name '$name' is not a plain directory name"

cache=${BEAMGPU_DEBIAN_CACHE:-}
if [[ -z $cache ]]; then
	cache_root=${XDG_CACHE_HOME:-}
	if [[ -z $cache_root ]]; then
		[[ -n ${HOME:-} ]] || die "neither BEAMGPU_DEBIAN_CACHE, XDG_CACHE_HOME nor HOME is set"
		cache_root=$HOME/.cache
	fi
	cache=$cache_root/beamgpu/debian
fi
[[ $cache == /* ]] || cache=$PWD/$cache
suite=${BEAMGPU_DEBIAN_SUITE:-bookworm}
components=${BEAMGPU_DEBIAN_COMPONENTS:-main}
mirror=${BEAMGPU_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${BEAMGPU_DEBIAN_SECURITY_MIRROR-http://deb.debian.org/debian-security}
keyring=${BEAMGPU_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}

command -v dpkg >/dev/null || die "dpkg not found: this script needs a Debian or Ubuntu system"
arch=$(dpkg --print-architecture)
dir=$cache/$name
stamp=$dir/.beamgpu-debian-stamp
want_stamp="layout=$layout suite=$suite arch=$arch packages=${pkgs[*]}"

emit() {
	if [[ -n $rel ]]; then
		[[ -e $dir/$rel ]] || die "$rel is not in the packages ${pkgs[*]} (extracted in $dir)"
		printf '%s\n' "$dir/$rel"
	else
		printf '%s\n' "$dir"
	fi
	exit 0
}

complete() {
	[[ -f $stamp && $(head -1 "$stamp") == "$want_stamp" ]]
}

if complete; then
	emit
fi

mkdir -p "$cache"
# One lock for the whole cache: the private apt state below is shared by every
# package set. The second of two concurrent runs finds the work done.
if command -v flock >/dev/null; then
	exec 9>"$cache/.lock"
	flock 9
	if complete; then
		emit
	fi
fi

for tool in apt-get dpkg-deb; do
	command -v "$tool" >/dev/null || die "$tool not found"
done
[[ -r $keyring ]] || die "no Debian archive keyring at $keyring (apt-get install debian-archive-keyring, or set BEAMGPU_DEBIAN_KEYRING)"

# The private apt state is kept in the cache (apt-get update then fetches only what
# changed), one per suite, components and architecture.
apt_dir=$cache/.apt-$suite-${components// /_}-$arch
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources.list.d" "$apt_dir/apt.conf.d" "$apt_dir/preferences.d"
: >"$apt_dir/status"
# Of the system's apt configuration only the Acquire settings (proxies, timeouts)
# apply: not its hooks (a container's docker-clean removing /var/cache/apt/*.deb,
# PackageKit's and AppStream's refreshes after an update) nor its pinning. APT_CONFIG
# is read before the configuration directories, so it can replace them.
apt-config dump Acquire >"$apt_dir/apt.conf.d/00system-acquire" 2>/dev/null || : >"$apt_dir/apt.conf.d/00system-acquire"
{
	printf 'Dir::Etc::Parts "%s";\n' "$apt_dir/apt.conf.d"
	printf 'Dir::Etc::Main "%s";\n' "$apt_dir/none.conf"
	printf 'Dir::Etc::PreferencesParts "%s";\n' "$apt_dir/preferences.d"
	printf 'Dir::Etc::Preferences "%s";\n' "$apt_dir/none.pref"
} >"$apt_dir/apt.conf"
export APT_CONFIG=$apt_dir/apt.conf
{
	printf 'deb [signed-by=%s] %s %s %s\n' "$keyring" "$mirror" "$suite" "$components"
	printf 'deb [signed-by=%s] %s %s-updates %s\n' "$keyring" "$mirror" "$suite" "$components"
	if [[ -n $security ]]; then
		printf 'deb [signed-by=%s] %s %s-security %s\n' "$keyring" "$security" "$suite" "$components"
	fi
} >"$apt_dir/sources.list"
apt_opts=(
	-o "Dir::State=$apt_dir"
	-o "Dir::State::Lists=$apt_dir/lists"
	-o "Dir::State::status=$apt_dir/status"
	-o "Dir::Cache=$apt_dir/cache"
	-o "Dir::Etc::SourceList=$apt_dir/sources.list"
	-o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
	-o "Debug::NoLocking=1"
	-o "Acquire::Languages=none"
	# As root apt would hand the download to user _apt, who cannot write a private
	# directory (and apt would warn); as another user this is a no-op.
	-o "APT::Sandbox::User=root"
)

work=$(mktemp -d "$dir.tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debs" "$work/root"

log "fetching the $suite ($components) package lists from $mirror"
apt-get "${apt_opts[@]}" -qq update >&2 || die "apt-get update of the private sources failed"

log "downloading ${pkgs[*]}"
(cd "$work/debs" && apt-get "${apt_opts[@]}" -qq download "${pkgs[@]}" >&2) ||
	die "apt-get download ${pkgs[*]} failed (a version no longer in $suite? see apt-cache policy)"

versions=()
for spec in "${pkgs[@]}"; do
	pkg=${spec%%=*}
	deb=$(compgen -G "$work/debs/${pkg}_*.deb" | head -1) || die "apt-get downloaded no .deb for $pkg"
	log "extracting $(basename "$deb")"
	dpkg-deb -x "$deb" "$work/root"
	versions+=("$pkg $(dpkg-deb -f "$deb" Version)")
done

# The stamp's first line is what complete() compares; the rest records the versions.
{
	printf '%s\n' "$want_stamp"
	printf '%s\n' "${versions[@]}"
	printf 'from %s (%s, %s)\n' "$mirror" "$suite" "$arch"
} >"$work/root/.beamgpu-debian-stamp.new"

rm -rf "$dir"
mv "$work/root" "$dir"
# The stamp last: an interrupted run leaves no stamp and the next run starts over.
mv "$dir/.beamgpu-debian-stamp.new" "$stamp"
log "$(IFS=, && printf '%s' "${versions[*]}") in $dir ($(du -sh "$dir" | cut -f1))"
emit
