/* SPDX-License-Identifier: MIT */
/*
 * kernel/probe.c — ursa_probe(): what the running kernel offers.
 *
 * Computed once (the first caller wins; racing callers compute the same
 * answer) and cached. io_uring support is asked of the kernel itself with
 * IORING_REGISTER_PROBE on a throwaway ring, so a kernel with io_uring
 * disabled (sysctl kernel.io_uring_disabled, a seccomp filter) reads as
 * "no ring" and the async API answers -EOPNOTSUPP.
 */
#include "config.h"

#include "kernel/arch.h"
#include "kernel/futex.h"
#include "kernel/uapi.h"
#include "ursa/probe.h"

#include <errno.h>
#include <liburing.h>
#include <string.h>

static struct ursa_features cached;
static int cached_state; /* 0 unknown, 2 being written, 1 valid */

static void probe_uring(struct ursa_features *f)
{
	struct io_uring ring;
	if (io_uring_queue_init(2, &ring, 0) < 0)
		return;
	f->uring = true;
	struct io_uring_probe *p = io_uring_get_probe_ring(&ring);
	if (p) {
		f->uring_futex = io_uring_opcode_supported(p, IORING_OP_FUTEX_WAIT) &&
				 io_uring_opcode_supported(p, IORING_OP_FUTEX_WAKE);
		f->uring_futexv = io_uring_opcode_supported(p, IORING_OP_FUTEX_WAITV);
		f->uring_waitid = io_uring_opcode_supported(p, IORING_OP_WAITID);
		io_uring_free_probe(p);
	}
	io_uring_queue_exit(&ring);
}

__attribute__((visibility("default"))) int ursa_probe(struct ursa_features *f)
{
	if (!f)
		return -EINVAL;
	if (!__atomic_load_n(&cached_state, __ATOMIC_ACQUIRE)) {
		struct ursa_features t;
		memset(&t, 0, sizeof(t));
		t.futex2 = ursa_k_have_futex2();
		t.futex_waitv = ursa_k_have_futex_waitv();
		probe_uring(&t);
		int unknown = 0;
		if (__atomic_compare_exchange_n(&cached_state, &unknown, 2, false, __ATOMIC_ACQUIRE,
						__ATOMIC_ACQUIRE)) {
			cached = t;
			__atomic_store_n(&cached_state, 1, __ATOMIC_RELEASE);
		} else {
			/* Another thread is publishing the same answer. */
			while (__atomic_load_n(&cached_state, __ATOMIC_ACQUIRE) != 1)
				ursa_cpu_relax();
		}
	}
	*f = cached;
	return 0;
}
