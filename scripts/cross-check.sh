#!/usr/bin/env bash
# Build ursa for aarch64 with Debian's cross compiler and run make check's
# suites there under qemu-user: a portability check of what differs by
# architecture (kernel/arch.h's spin hint, the syscall numbers, the pthread
# types whose fields the shim keeps, the exported symbols) without an
# aarch64 machine.
#
# What it cannot check: memory ordering. qemu runs the guest's loads and
# stores in the x86 host's (TSO) order, so a missing barrier that a real
# ARM core would expose passes here; the spin models and ThreadSanitizer
# (make check-tsan) are the checks for that. qemu-user also lacks the
# futex2 calls, futex_waitv and io_uring, so the blocking API runs on its
# futex(2) fallback and the wait-any and async tests skip (as on a kernel
# before 5.16).
#
# Left out, as qemu-user cannot run them (measured with qemu 7.2): the
# robust mutexes (it refuses set_robust_list, so glibc's robust mutexes,
# which the shim bridges to, never see an owner die), threads started in
# a forked child of a threaded process (qemu aborts:
# "qemu_plugin_vcpu_init_hook: assertion failed"), and seccomp filters
# (it refuses to install them).
#
# Needs root and Debian's archive: adds the dpkg architecture arm64,
# installs gcc-aarch64-linux-gnu, qemu-user and liburing-dev:arm64, and
# registers qemu's binfmt handler. Criterion's arm64 package cannot be
# installed beside the native one (not Multi-Arch: same): it is unpacked
# into BUILDDIR/arm64root instead.
#
# Usage: scripts/cross-check.sh [BUILDDIR]   (default: build-aarch64/)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build-aarch64}
case $dir in /*) ;; *) dir=$top/$dir ;; esac
triplet=aarch64-linux-gnu

export DEBIAN_FRONTEND=noninteractive
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	dpkg --add-architecture arm64
	apt-get update -q
fi
apt-get install -y -q gcc-$triplet qemu-user liburing-dev:arm64 libc6-dev:arm64 >/dev/null

# Criterion and what it links (boxfort is static in it).
root=$dir/arm64root
lib=$root/usr/lib/$triplet
if [ ! -e "$lib/libcriterion.so" ]; then
	mkdir -p "$root/debs"
	(cd "$root/debs" && apt-get download -q libcriterion-dev:arm64 libcriterion3:arm64 \
		libnanomsg5:arm64 libgit2-1.5:arm64 libffi8:arm64 2>&1 | { grep -v '^W: Download is performed unsandboxed' || true; })
	for d in "$root"/debs/*.deb; do dpkg -x "$d" "$root"; done
fi

# Run aarch64 programs through qemu (binfmt_misc; no systemd to do it).
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
	mountpoint -q /proc/sys/fs/binfmt_misc ||
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
	cat /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register
fi

[ -x "$top/configure" ] && [ "$top/configure" -nt "$top/configure.ac" ] ||
	(cd "$top" && autoreconf -fi >/dev/null)
mkdir -p "$dir"
cd "$dir"
[ -f Makefile ] || PKG_CONFIG_LIBDIR=/usr/lib/$triplet/pkgconfig "$top/configure" -q \
	--host=$triplet --disable-bench LDFLAGS="-L$lib -Wl,-rpath-link,$lib" \
	CRITERION_CFLAGS=" " CRITERION_LIBS=-lcriterion 2>&1 | { grep -v 'not prefixed with host' || true; }
make -j"$(nproc)" >/dev/null
file -L lib/.libs/libursa.so.0 | grep -q 'ARM aarch64' || {
	echo "cross-check: lib/.libs/libursa.so.0 is not an aarch64 object" >&2
	exit 1
}
# Criterion's own filter leaves out what qemu cannot run (above).
LD_LIBRARY_PATH=$lib \
	CRITERION_TEST_PATTERN='!(*/robust*|rwlock_cond/threads_in_processes|fault_seccomp/*)' \
	make -j"$(nproc)" check
