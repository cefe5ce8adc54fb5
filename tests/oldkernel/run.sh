#!/bin/sh
# tests/oldkernel/run.sh — run ursa's tests on Debian 12's own 6.1 kernel.
#
# Linux 6.1 has io_uring but no io_uring futex operations (6.7) and no
# futex2 futex_wait/futex_wake system calls (6.7); futex_waitv (5.16) is
# there. On it the blocking API must pass (futex(2) fallback) and the async
# tests must skip, saying why (the probe's reason).
#
# How: `apt-get download` the newest linux-image-6.1.0-*-cloud-amd64 (the
# signed package; only its vmlinuz is used: dpkg-deb -x, nothing installed),
# build an initramfs (cpio) holding busybox-static, the contended suite
# statically linked on the plain-C runner (tests/harness) and the
# Criterion suites with every shared library they need (ldd) and the dynamic
# loader, boot it with qemu-system-x86_64 -accel tcg -cpu max (software
# emulation; KVM is not used), and read the results from the serial
# console. An init script runs every program and prints one line per
# program and a summary.
#
# Usage: run.sh BUILDDIR [PROGRAM...]
#   PROGRAM: Criterion suites to run (paths in BUILDDIR; libtool wrappers are
#   followed to .libs/). The static contended suite is always run first.
# Environment: URSA_OLDKERNEL_CACHE (default BUILDDIR/oldkernel: the kernel
#   package, extracted), URSA_OLDKERNEL_TIMEOUT (qemu wall-clock bound,
#   default 1500 s), QEMU (qemu-system-x86_64), CC (cc).
# Exit: 0 everything passed (async skipped), 1 a failure, 77 cannot run here
#   (no qemu, busybox-static, cpio, network/apt for the kernel).
set -u

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
builddir=${1:?usage: run.sh BUILDDIR [PROGRAM...]}
shift
builddir=$(cd "$builddir" && pwd)
cache=${URSA_OLDKERNEL_CACHE:-$builddir/oldkernel}
QEMU=${QEMU:-qemu-system-x86_64}
CC=${CC:-cc}
limit=${URSA_OLDKERNEL_TIMEOUT:-1500}

skip() { echo "SKIP: $*"; exit 77; }
command -v "$QEMU" >/dev/null 2>&1 || skip "$QEMU missing (apt-get install qemu-system-x86)"
busybox=$(command -v busybox) || skip "busybox missing (apt-get install busybox-static)"
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
	{ [ -x /bin/busybox ] && file -L /bin/busybox | grep -q 'statically linked' && busybox=/bin/busybox; } ||
	skip "busybox is not statically linked (apt-get install busybox-static)"
command -v cpio >/dev/null 2>&1 || skip "cpio missing (apt-get install cpio)"
[ "$(uname -m)" = x86_64 ] || skip "x86_64 only"

mkdir -p "$cache"
# ---- the kernel ------------------------------------------------------------
kernel=$(ls "$cache"/x/boot/vmlinuz-6.1.0-* 2>/dev/null | sort -V | tail -1)
if [ -z "$kernel" ]; then
	pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' 2>/dev/null |
		awk '{print $1}' | sort -V | tail -1)
	[ -n "$pkg" ] || skip "apt offers no linux-image-6.1.0-*-cloud-amd64 (a Debian 12 apt source is needed)"
	echo "oldkernel: downloading $pkg"
	(cd "$cache" && apt-get download -q "$pkg" >/dev/null 2>&1) || skip "apt-get download $pkg failed"
	dpkg-deb -x "$cache/${pkg}"_*.deb "$cache/x" || skip "dpkg-deb -x failed"
	kernel=$(ls "$cache"/x/boot/vmlinuz-6.1.0-* | sort -V | tail -1)
fi
echo "oldkernel: kernel $kernel"

# ---- the initramfs -----------------------------------------------------------
root=$cache/root
rm -rf "$root"
mkdir -p "$root/bin" "$root/tests" "$root/lib" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for a in sh mount mkdir cat echo poweroff uname sleep date; do ln -s busybox "$root/bin/$a"; done

# The contended suite (every primitive's contended paths, blocking and
# async), statically linked against the library just built, on the plain-C
# runner (tests/harness): a second opinion that needs no shared library.
liba=$builddir/lib/.libs/libursa.a
[ -f "$liba" ] || { echo "oldkernel: $liba missing (build the library first)"; exit 1; }
uring_libs=$(pkg-config --libs liburing 2>/dev/null || echo -luring)
if ! "$CC" -std=gnu11 -O2 -static -pthread -DURSA_TEST_PLAIN -I"$srcdir/tests/harness" \
	-I"$srcdir/include" -I"$builddir/include" -I"$srcdir" -I"$builddir" -o "$root/tests/driver" \
	"$srcdir/tests/integration/contended.c" "$srcdir/tests/helpers.c" "$liba" \
	$uring_libs 2>"$cache/driver.log"; then
	cat "$cache/driver.log"
	echo "oldkernel: static link of the contended suite failed"
	exit 1
fi

# Criterion suites: the real binaries plus their shared libraries.
add_libs() {
	ldd "$1" 2>/dev/null | awk '/=> \// {print $3} /^\s*\/lib/ {print $1}' | while read -r l; do
		[ -f "$root$l" ] && continue
		mkdir -p "$root$(dirname "$l")"
		cp -L "$l" "$root$l"
	done
}
suites=
for p in "$@"; do
	f=$builddir/$p
	[ -f "$f" ] || continue
	if head -c 2 "$f" | grep -q '#!'; then # a libtool wrapper
		real=$(dirname "$f")/.libs/$(basename "$f")
		[ -f "$real" ] || real=$(dirname "$f")/.libs/lt-$(basename "$f")
		f=$real
	fi
	[ -f "$f" ] || continue
	name=$(echo "$p" | tr / _)
	cp "$f" "$root/tests/$name"
	LD_LIBRARY_PATH=$builddir/lib/.libs:$builddir/lib/shim/.libs add_libs "$f"
	suites="$suites $name"
done
# The project's own shared libraries (libursa, the pthread shim...), from
# the build tree.
find "$builddir" -path "$builddir/tsan-build" -prune -o -path "$cache" -prune -o \
	-path '*/.libs/*.so*' -print | while read -r so; do cp -P "$so" "$root/lib/"; done
# Loaded with dlopen, so ldd does not list it: glibc needs libgcc_s for
# pthread_cancel (the shim's cancellation tests).
for l in /lib/x86_64-linux-gnu/libgcc_s.so.1; do
	[ -f "$l" ] && mkdir -p "$root$(dirname "$l")" && cp -L "$l" "$root$l"
done
mkdir -p "$root/lib64"
[ -f "$root/lib64/ld-linux-x86-64.so.2" ] || cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"

cat >"$root/init" <<EOF
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm
mount -t tmpfs tmp /dev/shm
mount -t tmpfs tmp /tmp
export LD_LIBRARY_PATH=/lib:/lib/x86_64-linux-gnu
export CRITERION_NO_EARLY_EXIT=1
cd /tmp
echo "OLDKERNEL: uname \$(uname -r)"
pass=0; fail=0
echo "OLDKERNEL: BEGIN driver"
/tests/driver --timeout 240 -j2
rc=\$?
echo "OLDKERNEL: END driver rc=\$rc"
if [ \$rc = 0 ] || [ \$rc = 77 ]; then pass=\$((pass+1)); else fail=\$((fail+1)); fi
for t in $suites; do
	echo "OLDKERNEL: BEGIN \$t"
	/tests/\$t --timeout 120 -j2 --short-filename --verbose=0
	rc=\$?
	echo "OLDKERNEL: END \$t rc=\$rc"
	if [ \$rc = 0 ] || [ \$rc = 77 ]; then pass=\$((pass+1)); else fail=\$((fail+1)); fi
done
echo "OLDKERNEL: RESULT pass=\$pass fail=\$fail"
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$cache/initrd.gz"
echo "oldkernel: initramfs $(du -h "$cache/initrd.gz" | cut -f1), programs: driver$suites"

# ---- boot ----------------------------------------------------------------------
log=$cache/console.log
start=$(date +%s)
timeout -k 10 "$limit" "$QEMU" -accel tcg -cpu max -smp 2 -m 1G -nographic -no-reboot \
	-kernel "$kernel" -initrd "$cache/initrd.gz" \
	-append 'console=ttyS0 panic=-1 quiet loglevel=3' </dev/null >"$log" 2>&1
qrc=$?
secs=$(($(date +%s) - start))
tr -d '\r' <"$log" >"$log.txt"
grep -E '^(OLDKERNEL|\[====\]|\[SKIP\]|\[FAIL\]|\[----\].*(skip|Skip|kernel|lacks))' "$log.txt" |
	grep -v '^\[----\] Criterion' | head -400
echo "oldkernel: qemu exit $qrc after ${secs}s (console log: $log.txt)"
result=$(grep '^OLDKERNEL: RESULT' "$log.txt" | tail -1)
[ -n "$result" ] || { echo "oldkernel: no result (timed out or crashed)"; exit 1; }
case $result in
*" fail=0") exit 0 ;;
*) exit 1 ;;
esac
