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
 */
#include "config.h"

#include "kernel/arch.h"
#include "kernel/futex.h"
#include "kernel/uapi.h"
#include "ursa/probe.h"

#include <errno.h>
#include <stdbool.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct ursa_features cached;
static int cached_state; /* 0 unknown, 2 being written (claimed), 1 valid */

/* Test hook: URSA_TEST_PROBE_DELAY_US=N (1..999999) holds the first
 * publisher for N microseconds between claiming the cache and publishing
 * it, so tests/unit/probe.c can make callers arrive in that window. Read
 * once per process, on the publishing path only. */
static void publish_delay(void)
{
	const char *s = getenv("URSA_TEST_PROBE_DELAY_US");
	long us = s ? strtol(s, NULL, 10) : 0;
	if (us > 0 && us < 1000000) {
		struct timespec ts = {0, us * 1000};
		nanosleep(&ts, NULL);
	}
}

/* Fills f's ring fields; returns false when the kernel's answer may change
 * (the set-up failed for want of a resource), true when it is lasting. */
static bool probe_uring(struct ursa_features *f)
{
	struct io_uring ring;
	int r = io_uring_queue_init(2, &ring, 0);
	if (r < 0)
		return !(r == -EMFILE || r == -ENFILE || r == -ENOMEM || r == -EAGAIN ||
			 r == -EINTR);
	f->uring = true;
	struct io_uring_probe *p = io_uring_get_probe_ring(&ring);
	bool known = p != NULL;
	if (p) {
		f->uring_futex = io_uring_opcode_supported(p, IORING_OP_FUTEX_WAIT) &&
				 io_uring_opcode_supported(p, IORING_OP_FUTEX_WAKE);
		f->uring_futexv = io_uring_opcode_supported(p, IORING_OP_FUTEX_WAITV);
		f->uring_waitid = io_uring_opcode_supported(p, IORING_OP_WAITID);
		io_uring_free_probe(p);
	}
	io_uring_queue_exit(&ring);
	/* No probe (its buffer could not be allocated): the opcodes are not
	 * known yet. */
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
	bool lasting = probe_uring(&t);
	int unknown = 0;
	if (lasting && __atomic_compare_exchange_n(&cached_state, &unknown, 2, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED)) {
		publish_delay();
		cached = t;
		__atomic_store_n(&cached_state, 1, __ATOMIC_RELEASE);
	}
	*f = t;
	return 0;
}
