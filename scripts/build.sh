#!/usr/bin/env bash
# Configure and build ursa in a build directory.
set -euo pipefail
usage() {
	cat <<'USAGE'
Usage: scripts/build.sh [-h|--help] [BUILDDIR [CONFIGURE-OPTION ...]]

Runs autoreconf -fi when configure is missing or older than configure.ac,
configures BUILDDIR (default: build/, relative to the source tree) with the
given options the first time (an existing BUILDDIR keeps its configuration:
remove it to reconfigure), then runs make -j$(nproc) there.

  BUILDDIR            the build directory (not an option: it may not start
                      with '-')
  CONFIGURE-OPTION    e.g. --enable-sanitizers=address,undefined,
                      --disable-bench, --with-absl=no (configure --help)
  -h, --help          this text
USAGE
}
case ${1:-} in
-h | --help) usage; exit 0 ;;
-*) echo "build.sh: the first argument is the build directory, not '$1' (see --help)" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
cd "$top"
[ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi >/dev/null
mkdir -p -- "$dir"
cd -- "$dir"
[ -f Makefile ] || "$top/configure" -q "$@"
make -j"$(nproc)" >/dev/null
