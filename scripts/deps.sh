#!/usr/bin/env bash
# Install the Debian packages ursa needs, if any is missing (idempotent).
set -euo pipefail
usage() {
	cat <<'USAGE'
Usage: scripts/deps.sh [-h|--help] [--oldkernel] [--perf] [--] [PACKAGE ...]

Installs (apt-get, as root or through sudo) what is missing of the packages
ursa's build, tests and benchmarks use: the toolchain, liburing, Criterion,
autoconf-archive, systemtap-sdt-dev, the bench baselines (jemalloc, nsync,
Concurrency Kit, Abseil), spin, gnuplot, pigz, zstd, groff and man-db (the
man page checks). Installs nothing when everything is there.

  --oldkernel  also what `make check-oldkernel` needs: qemu-system-x86,
               busybox-static, cpio, file, and apt lists that offer Debian
               12's linux-image-6.1.0-*-cloud-amd64 (run.sh downloads it)
  --perf       also linux-perf (to list and count ursa's USDT probes)
  PACKAGE      extra Debian packages to install as well
  -h, --help   this text
USAGE
}
pkgs=(build-essential autoconf automake libtool pkg-config autoconf-archive
      liburing-dev libcriterion-dev systemtap-sdt-dev
      libjemalloc-dev libnsync-dev libck-dev libabsl-dev g++
      gnuplot-nox spin pigz zstd groff-base man-db)
oldkernel=0
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--oldkernel) oldkernel=1; pkgs+=(qemu-system-x86 busybox-static cpio file) ;;
	--perf) pkgs+=(linux-perf) ;;
	--) shift; pkgs+=("$@"); break ;;
	-*) echo "deps.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) pkgs+=("$1") ;;
	esac
	shift
done
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
updated=0
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}" >&2
	$SUDO apt-get update -q
	updated=1
	$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# tests/oldkernel/run.sh downloads the newest 6.1 kernel package (not
# installed: only its vmlinuz is used); make sure apt's lists offer one.
if [ $oldkernel -eq 1 ] && [ $updated -eq 0 ] &&
	[ -z "$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' 2>/dev/null)" ]; then
	echo "deps: apt-get update (no linux-image-6.1.0-*-cloud-amd64 in apt's lists)" >&2
	$SUDO apt-get update -q
fi
exit 0
