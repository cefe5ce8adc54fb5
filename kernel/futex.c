/* SPDX-License-Identifier: MIT */
/*
 * kernel/futex.c — raw futex system calls.
 *
 * futex2 (futex_wait/futex_wake, Linux 6.7) is used where the kernel has it;
 * otherwise futex(2) with FUTEX_WAIT_BITSET/FUTEX_WAKE_BITSET, which takes an
 * absolute deadline on either clock. Detection is lazy and one-shot: the
 * first call that is refused flips a cached flag and retries the old call
 * (musl's habit). Both calls hash to the same futex keys, so a futex2 waiter
 * and a futex(2) or io_uring waker of the same word see each other.
 *
 * Refused means ENOSYS (a kernel before 6.7, or a seccomp filter that says
 * so) or EPERM, what a seccomp filter answers for calls it denies unless
 * told otherwise: podman's default profile denied futex_wait, futex_wake
 * and futex_waitv with EPERM until Podman 6 (2026), and Wine met the same
 * for futex_waitv. None of these calls returns EPERM itself (no PI, no
 * permission check), so EPERM means the call was filtered. It may come
 * after the flag said "present": a program may install its filter after
 * its first lock (sandboxes do), and a fork child inherits the flag. A
 * refused wake falls back the same way, so no wake is lost to a filter;
 * futex_waitv has no older form, so wait-any then says -ENOSYS
 * (ursa/wait_any.h). tests/fault/seccomp.c refuses each with ENOSYS and
 * with EPERM, before and after first use.
 *
 * On the 64-bit targets ursa supports, struct timespec and the kernel's
 * struct __kernel_timespec have the same layout.
 */
#include "config.h"

#include "kernel/futex.h"
#include "kernel/uapi.h"

#include <errno.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(sizeof(struct timespec) == 16, "64-bit timespec expected (kernel ABI)");

/* 0: unknown, 1: present, -1: absent (refused). Relaxed is enough: every
 * thread may race to the same answer. */
static int have_futex2;
static int have_waitv;

static inline long sys_ret(long r)
{
	return r == -1 ? -errno : r;
}

/* errno after a futex2 call that failed: the call is not there for us
 * (above). */
static inline bool refused(int e)
{
	return e == ENOSYS || e == EPERM;
}

/* syscall() reports through errno; ursa's callers never see errno change
 * (include/ursa/common.h), so every entry point saves and restores it.
 * The restore is a function so that r, the call that may set errno, is
 * evaluated before errno is put back: written as the comma expression
 * (errno = saved, r) it put errno back first and let the call's errno
 * through (ETIMEDOUT after every wait that timed out, EAGAIN, ENOSYS
 * where the futex2 calls are missing; tests/unit/deadline.c's
 * errno_untouched_by_waits_that_time_out). */
#define SAVE_ERRNO int saved_errno_ = errno
static inline int restore_errno(int saved, int r)
{
	errno = saved;
	return r;
}
#define RESTORE_ERRNO(r) restore_errno(saved_errno_, (r))

static int legacy_wait(uint32_t *uaddr, uint32_t val, bool shared, clockid_t clk,
		       const struct timespec *abs, uint32_t bits)
{
	int op = FUTEX_WAIT_BITSET | (shared ? 0 : FUTEX_PRIVATE_FLAG);
	if (abs && clk == CLOCK_REALTIME)
		op |= FUTEX_CLOCK_REALTIME;
	return (int)sys_ret(syscall(SYS_futex, uaddr, op, val, abs, NULL, bits));
}

static int futex_wait_raw(uint32_t *uaddr, uint32_t val, bool shared, clockid_t clk,
			  const struct timespec *abs, uint32_t bits)
{
	if (__atomic_load_n(&have_futex2, __ATOMIC_RELAXED) >= 0) {
		long r = syscall(SYS_futex_wait, uaddr, (unsigned long)val, (unsigned long)bits,
				 ursa_k_futex2_flags(shared), abs, abs ? clk : CLOCK_MONOTONIC);
		if (r == 0)
			return 0;
		if (!refused(errno))
			return -errno;
		__atomic_store_n(&have_futex2, -1, __ATOMIC_RELAXED);
	}
	return legacy_wait(uaddr, val, shared, clk, abs, bits);
}

static int futex_wake_raw(uint32_t *uaddr, int n, bool shared, uint32_t bits)
{
	if (__atomic_load_n(&have_futex2, __ATOMIC_RELAXED) >= 0) {
		long r = syscall(SYS_futex_wake, uaddr, (unsigned long)bits, n,
				 ursa_k_futex2_flags(shared));
		if (r >= 0)
			return (int)r;
		if (!refused(errno))
			return -errno;
		__atomic_store_n(&have_futex2, -1, __ATOMIC_RELAXED);
	}
	int op = FUTEX_WAKE_BITSET | (shared ? 0 : FUTEX_PRIVATE_FLAG);
	return (int)sys_ret(syscall(SYS_futex, uaddr, op, n, NULL, NULL, bits));
}

static int futex_waitv_raw(struct futex_waitv *v, unsigned n, clockid_t clk,
			   const struct timespec *abs)
{
	if (__atomic_load_n(&have_waitv, __ATOMIC_RELAXED) < 0)
		return -ENOSYS;
	long r = syscall(SYS_futex_waitv, v, n, 0, abs, abs ? clk : CLOCK_MONOTONIC);
	if (r >= 0)
		return (int)r;
	if (!refused(errno))
		return -errno;
	__atomic_store_n(&have_waitv, -1, __ATOMIC_RELAXED);
	return -ENOSYS;
}

int ursa_k_futex_wait_bits(uint32_t *uaddr, uint32_t val, bool shared, clockid_t clk,
			   const struct timespec *abs, uint32_t bits)
{
	SAVE_ERRNO;
	return RESTORE_ERRNO(futex_wait_raw(uaddr, val, shared, clk, abs, ursa_k_futex_bits(bits)));
}

int ursa_k_futex_wait_eintr(uint32_t *uaddr, uint32_t val, bool shared, clockid_t clk,
			    const struct timespec *abs, uint32_t bits)
{
	SAVE_ERRNO;
	return RESTORE_ERRNO(legacy_wait(uaddr, val, shared, clk, abs, ursa_k_futex_bits(bits)));
}

int ursa_k_futex_wake_bits(uint32_t *uaddr, int n, bool shared, uint32_t bits)
{
	SAVE_ERRNO;
	return RESTORE_ERRNO(futex_wake_raw(uaddr, n, shared, ursa_k_futex_bits(bits)));
}

int ursa_k_futex_waitv(struct futex_waitv *v, unsigned n, clockid_t clk,
		       const struct timespec *abs)
{
	SAVE_ERRNO;
	return RESTORE_ERRNO(futex_waitv_raw(v, n, clk, abs));
}

bool ursa_k_have_futex2(void)
{
	int h = __atomic_load_n(&have_futex2, __ATOMIC_RELAXED);
	if (h == 0) {
		SAVE_ERRNO;
		uint32_t dummy = 0;
		/* Waking nobody on a private dummy word is harmless. */
		long r = syscall(SYS_futex_wake, &dummy, (unsigned long)FUTEX_BITSET_MATCH_ANY, 0,
				 ursa_k_futex2_flags(false));
		h = r >= 0 || !refused(errno) ? 1 : -1;
		__atomic_store_n(&have_futex2, h, __ATOMIC_RELAXED);
		errno = saved_errno_;
	}
	return h > 0;
}

bool ursa_k_have_futex_waitv(void)
{
	int h = __atomic_load_n(&have_waitv, __ATOMIC_RELAXED);
	if (h == 0) {
		/* An empty vector: -EINVAL where the call exists, refused where not. */
		SAVE_ERRNO;
		long r = syscall(SYS_futex_waitv, NULL, 0, 0, NULL, 0);
		h = r >= 0 || !refused(errno) ? 1 : -1;
		__atomic_store_n(&have_waitv, h, __ATOMIC_RELAXED);
		errno = saved_errno_;
	}
	return h > 0;
}

/*
 * The per-process private futex hash (Linux 6.17+; built but disabled in
 * 6.16). A process-private futex key hashes to the global table while the
 * process has no private hash, and to the private one after its first
 * thread is created (copy_process -> futex_hash_allocate_default). When the
 * private hash is first installed, waiters already queued in the global
 * table are not moved (__futex_pivot_hash only rehashes private -> private),
 * so a wake sent after that misses them forever. A blocked thread cannot
 * create threads, so futex(2) never meets this; an io_uring FUTEX_WAIT armed
 * by a single-threaded process can. Before ursa arms a private ring wait it
 * makes sure the process already has its private hash (or never will):
 * PR_FUTEX_HASH/GET_SLOTS > 0 (a hash exists; later resizes rehash queued
 * waiters correctly) or EINVAL (a kernel before 6.16 does not know the
 * option: no private hash at all) is safe; 0 means "none yet" (or global
 * mode, or the feature not built), and creating and joining one thread
 * then installs it synchronously, harmless in the other cases. Any other
 * failure (a seccomp filter's EPERM or ENOSYS: the kernel was not asked)
 * is taken as "none yet" too. The answer holds for the life of the address
 * space; a fork() child starts without a private hash, so it is forgotten
 * there (pthread_atfork).
 */
#ifndef PR_FUTEX_HASH
#define PR_FUTEX_HASH 78
#define PR_FUTEX_HASH_GET_SLOTS 2
#endif

static int phash_ready;
static int phash_atfork;

static void phash_forget(void)
{
	__atomic_store_n(&phash_ready, 0, __ATOMIC_RELAXED);
}

static void *phash_nop(void *arg)
{
	return arg;
}

int ursa_k_private_ring_wait_prepare(void)
{
	if (__atomic_load_n(&phash_ready, __ATOMIC_ACQUIRE))
		return 0;
	int zero = 0;
	if (__atomic_compare_exchange_n(&phash_atfork, &zero, 1, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		pthread_atfork(NULL, NULL, phash_forget);
	SAVE_ERRNO;
	int slots = prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0);
	bool unknown = slots == 0 || (slots < 0 && errno != EINVAL);
	errno = saved_errno_;
	if (unknown) {
		pthread_t t;
		/* No thread (RLIMIT_NPROC, memory, a filter refusing clone):
		 * -EAGAIN, whatever pthread_create said, as the starters'
		 * contract has it (ursa/async.h). */
		if (pthread_create(&t, NULL, phash_nop, NULL))
			return RESTORE_ERRNO(-EAGAIN); /* its own calls may set errno */
		pthread_join(t, NULL);
		errno = saved_errno_;
	}
	__atomic_store_n(&phash_ready, 1, __ATOMIC_RELEASE);
	return 0;
}
