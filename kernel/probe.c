/* SPDX-License-Identifier: MIT */
/*
 * kernel/probe.c — ursa_probe(): what the running kernel offers.
 *
 * Computed and cached by the first caller; callers that come before the
 * answer is published compute their own (the same) answer rather than wait
 * or read a half-written cache. io_uring support is asked of the kernel itself with
 * IORING_REGISTER_PROBE on a throwaway ring, so a kernel with io_uring
 * disabled (sysctl kernel.io_uring_disabled, a seccomp filter) reads as
 * "no ring" and the async API answers -EOPNOTSUPP. Only a lasting answer is
 * cached: a ring set-up refused for a passing reason (out of file
 * descriptors or locked memory, -EAGAIN, -EINTR) reads as "no ring" for
 * that call alone, and the next caller asks again.
 *
 * Where the ring comes up but IORING_REGISTER_PROBE is refused (a seccomp
 * filter that allows io_uring_setup and io_uring_enter only; a sandbox
 * that lacks the probe), the operations are tried on the ring instead
 * (try_ops). Before, no answer counted as a passing one, so every async
 * starter made and tore down a ring, to answer -EOPNOTSUPP each time.
 *
 * futex2 and futex_waitv are read from kernel/futex.c's flags at every
 * call, cached answer or not: a filter installed after the first use turns
 * them to "absent" when a call meets it, and the probe says so from then on
 * (before, it kept the answer of its first call).
 */
#include "config.h"

#include "kernel/arch.h"
#include "kernel/futex.h"
#include "kernel/uapi.h"
#include "kernel/uring.h"
#include "ursa/probe.h"

#include <errno.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct ursa_features cached;
/* 0 unknown, 1 valid, -pid: being written by a thread of process pid (the
 * claimer). A child forked while its parent's claimer was writing sees the
 * parent's pid there, which no thread of its own will ever publish: it
 * takes the claim back (before, such a child probed the kernel, a ring set
 * up and torn down, at every call for good). */
static int cached_state;

/* Test hook: URSA_TEST_PROBE_DELAY_US=N (1..999999) holds the first
 * publisher for N microseconds between claiming the cache and publishing
 * it, so tests/unit/probe.c can make callers arrive in that window. Read
 * once per process, on the publishing path only (secure_getenv: not in a
 * setuid or setgid program). */
static void publish_delay(void)
{
	const char *s = secure_getenv("URSA_TEST_PROBE_DELAY_US");
	long us = s ? strtol(s, NULL, 10) : 0;
	if (us > 0 && us < 1000000) {
		struct timespec ts = {0, us * 1000};
		nanosleep(&ts, NULL);
	}
}

static bool passing(int err)
{
	return err == -EMFILE || err == -ENFILE || err == -ENOMEM || err == -EAGAIN ||
	       err == -EINTR;
}

/* No IORING_REGISTER_PROBE: try the operations themselves on the ring.
 * None can block: a FUTEX_WAIT and a FUTEX_WAITV whose word differs from
 * the value given (-EAGAIN; never queued, so a single-threaded process's
 * private futex hash does not matter), a FUTEX_WAKE of nobody (0), a
 * WNOHANG WAITID for a child that cannot exist (this process: -ECHILD). A
 * kernel without an op fails it with -EINVAL. Returns false when the
 * kernel could not be asked for a passing reason. */
static bool try_ops(struct io_uring *ring, struct ursa_features *f)
{
	uint32_t word = 1;
	struct futex_waitv v;
	memset(&v, 0, sizeof(v));
	v.uaddr = (uint64_t)(uintptr_t)&word;
	v.flags = ursa_k_futex2_flags(false);
	siginfo_t si;
	struct io_uring_sqe *sqe[4];
	for (int i = 0; i < 4; i++)
		if (!(sqe[i] = io_uring_get_sqe(ring)))
			return false;
	ursa_k_prep_futex_wait(sqe[0], &word, 0, false, 0);
	ursa_k_prep_futex_wake(sqe[1], &word, 1, false);
	ursa_k_prep_futex_waitv(sqe[2], &v, 1);
	ursa_k_prep_waitid(sqe[3], P_PID, (id_t)getpid(), &si, WEXITED | WNOHANG);
	for (int i = 0; i < 4; i++)
		sqe[i]->user_data = (uint64_t)i;
	int n = io_uring_submit(ring);
	if (n < 0) {
		if (passing(n))
			return false;
		f->uring = false; /* io_uring_enter refused: no ring after all */
		return true;
	}
	int res[4] = {-EINVAL, -EINVAL, -EINVAL, -EINVAL};
	for (int seen = 0; seen < n; seen++) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {1, 0};
		if (io_uring_wait_cqe_timeout(ring, &cqe, &ts) != 0)
			return false; /* no answer in a second: ask again later */
		if (cqe->user_data < 4)
			res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	f->uring_futex = res[0] == -EAGAIN && res[1] >= 0;
	f->uring_futexv = res[2] == -EAGAIN;
	f->uring_waitid = res[3] == -ECHILD;
	return true;
}

/* Fills f's ring fields; returns false when the kernel's answer may change
 * (the set-up failed for want of a resource), true when it is lasting. */
static bool probe_uring(struct ursa_features *f)
{
	struct io_uring ring;
	int r = io_uring_queue_init(4, &ring, 0);
	if (r < 0)
		return !passing(r);
	f->uring = true;
	bool known = false;
	size_t len = sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op);
	struct io_uring_probe *p = calloc(1, len);
	if (p) {
		r = io_uring_register_probe(&ring, p, 256);
		if (r == 0) {
			f->uring_futex = io_uring_opcode_supported(p, IORING_OP_FUTEX_WAIT) &&
					 io_uring_opcode_supported(p, IORING_OP_FUTEX_WAKE);
			f->uring_futexv = io_uring_opcode_supported(p, IORING_OP_FUTEX_WAITV);
			f->uring_waitid = io_uring_opcode_supported(p, IORING_OP_WAITID);
			known = true;
		} else if (!passing(r)) {
			known = try_ops(&ring, f); /* no probe here */
		}
		free(p);
	}
	io_uring_queue_exit(&ring);
	/* No answer (the probe's buffer could not be allocated): the opcodes
	 * are not known yet. */
	return known;
}

__attribute__((visibility("default"))) int ursa_probe(struct ursa_features *f)
{
	if (!f)
		return -EINVAL;
	/* Acquire pairs with the publisher's release: state 1 means `cached`
	 * is complete. */
	if (__atomic_load_n(&cached_state, __ATOMIC_ACQUIRE) == 1) {
		*f = cached;
		/* The futex calls' own flags (kernel/futex.c) turn to
		 * "absent" when a filter installed since refuses a call: say
		 * what the blocking calls now use (a relaxed load each). */
		f->futex2 = f->futex2 && ursa_k_have_futex2();
		f->futex_waitv = f->futex_waitv && ursa_k_have_futex_waitv();
		return 0;
	}
	/* Not published yet (unknown, or another caller is between claiming
	 * and publishing): ask the kernel ourselves and answer with that. A
	 * caller never copies `cached` before it is published, so no one sees
	 * the all-false struct. The first to claim publishes; the others'
	 * answers are the same and are dropped. */
	struct ursa_features t;
	memset(&t, 0, sizeof(t));
	t.futex2 = ursa_k_have_futex2();
	t.futex_waitv = ursa_k_have_futex_waitv();
	int saved_errno = errno; /* calloc, the probe's ring, the test hook's */
	bool lasting = probe_uring(&t);
	if (lasting) {
		int me = -(int)getpid();
		int st = __atomic_load_n(&cached_state, __ATOMIC_RELAXED);
		if (st < 0 && st != me)
			__atomic_compare_exchange_n(&cached_state, &st, 0, false, __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED); /* our parent's claim */
		int unknown = 0;
		if (__atomic_compare_exchange_n(&cached_state, &unknown, me, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			publish_delay();
			cached = t;
			__atomic_store_n(&cached_state, 1, __ATOMIC_RELEASE);
		}
	}
	errno = saved_errno;
	*f = t;
	return 0;
}
