/* SPDX-License-Identifier: MIT */
/*
 * kernel/uring.h — io_uring SQE preparation for the ops ursa issues.
 * Internal, not installed.
 *
 * liburing's shape: zero the whole SQE, fill the generic fields, then the
 * op-specific ones. No validation here; callers validate at the API edge.
 * Where the installed liburing has its own helper (2.6+), it is used.
 *
 * FUTEX_WAIT / FUTEX_WAKE (io_uring/futex.c, io_futex_prep):
 *   addr = futex word, addr2 = expected value (wait) or count (wake),
 *   addr3 = bitset mask (non-zero), fd = FUTEX2 flags, op flags = 0.
 * FUTEX_WAITV: addr = struct futex_waitv array, len = 1..128, rest 0.
 * WAITID (io_uring/waitid.c): len = idtype, fd = id, file_index = options,
 *   addr2 = siginfo_t *.
 */
#ifndef URSA_KERNEL_URING_H
#define URSA_KERNEL_URING_H

#include "kernel/futex.h"
#include "kernel/uapi.h"

#include <errno.h>
#include <liburing.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

static inline void ursa_k_prep(struct io_uring_sqe *sqe, uint8_t op, int fd, uint64_t addr,
			       uint32_t len, uint64_t off)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = op;
	sqe->fd = fd;
	sqe->addr = addr;
	sqe->len = len;
	sqe->off = off;
}

/* bits: the waiter's bitset (0: any; ursa_k_futex_wake_bits). */
static inline void ursa_k_prep_futex_wait(struct io_uring_sqe *sqe, uint32_t *uaddr, uint32_t val,
					  bool shared, uint32_t bits)
{
	ursa_k_prep(sqe, IORING_OP_FUTEX_WAIT, (int)ursa_k_futex2_flags(shared),
		    (uint64_t)(uintptr_t)uaddr, 0, val);
	sqe->addr3 = ursa_k_futex_bits(bits);
}

/* n is an int in the kernel: INT_MAX wakes all (UINT32_MAX would be -1). */
static inline void ursa_k_prep_futex_wake(struct io_uring_sqe *sqe, uint32_t *uaddr, int n,
					  bool shared)
{
	ursa_k_prep(sqe, IORING_OP_FUTEX_WAKE, (int)ursa_k_futex2_flags(shared),
		    (uint64_t)(uintptr_t)uaddr, 0, (uint64_t)(unsigned)n);
	sqe->addr3 = FUTEX_BITSET_MATCH_ANY;
}

static inline void ursa_k_prep_futex_waitv(struct io_uring_sqe *sqe, struct futex_waitv *v,
					   unsigned n)
{
	ursa_k_prep(sqe, IORING_OP_FUTEX_WAITV, 0, (uint64_t)(uintptr_t)v, n, 0);
}

static inline void ursa_k_prep_waitid(struct io_uring_sqe *sqe, idtype_t type, id_t id,
				      siginfo_t *info, int options)
{
	ursa_k_prep(sqe, IORING_OP_WAITID, (int)id, 0, (uint32_t)type, (uint64_t)(uintptr_t)info);
	sqe->file_index = (uint32_t)options;
}

/* Whether a time namespace shifts this process's CLOCK_MONOTONIC from the
 * host's (kernel/timens.c): io_uring's absolute timeouts read monotonic
 * deadlines in the host's time. Cached after the first call. */
__attribute__((visibility("hidden"))) bool ursa_k_monotonic_shifted(void);

/* Linked timeout with an absolute deadline on clk (CLOCK_MONOTONIC or
 * CLOCK_REALTIME). The kernel reads *ts when the SQE is submitted. A
 * monotonic deadline is read in the host's time, even inside a time
 * namespace (kernel/timens.c). */
static inline void ursa_k_prep_link_timeout_abs(struct io_uring_sqe *sqe,
						struct __kernel_timespec *ts, clockid_t clk)
{
	ursa_k_prep(sqe, IORING_OP_LINK_TIMEOUT, -1, (uint64_t)(uintptr_t)ts, 1, 0);
	sqe->timeout_flags = IORING_TIMEOUT_ABS | (clk == CLOCK_REALTIME ? IORING_TIMEOUT_REALTIME : 0);
}

/* Tag an SQE and optionally link it to the next one. */
static inline void ursa_k_sqe_finish(struct io_uring_sqe *sqe, uint64_t user_data, bool link)
{
	sqe->user_data = user_data;
	if (link)
		sqe->flags |= IOSQE_IO_LINK;
}

/* n SQEs from r (n <= 2), all or none: false when the SQ ring has less
 * room. Every SQE lib/ queues comes through here. */
static inline bool ursa_k_get_sqes(struct io_uring *r, struct io_uring_sqe **sqe, unsigned n)
{
	if (n == 1)
		return (sqe[0] = io_uring_get_sqe(r)) != NULL;
	if (io_uring_sq_space_left(r) < n)
		return false;
	for (unsigned i = 0; i < n; i++) {
		if (!(sqe[i] = io_uring_get_sqe(r)))
			return false; /* cannot happen after the space check */
	}
	return true;
}

/* Make room for n SQEs (n <= the ring's entries). Returns 0 with n
 * entries free, or -errno: the kernel's refusal of the submit (-EBUSY: a
 * full CQ ring, on older kernels; 6.18 takes the submit. -EBADFD: a
 * disabled ring. -EAGAIN: no memory for requests), or -EBUSY when the
 * kernel took nothing.
 *
 * A plain ring consumes SQEs inside io_uring_enter, but may stop early (an
 * application SQE that fails its set-up ends the batch without
 * IORING_SETUP_SUBMIT_ALL): submit again while it makes progress.
 *
 * An SQPOLL ring's submit only publishes the SQEs and wakes the poller,
 * which takes them after we return, so the room is looked at only after
 * waiting for it. The kernel's SQ_WAIT sleeps only while the SQ is full; so
 * with some but not n entries free, fill them with NOPs that post no CQE
 * (IOSQE_CQE_SKIP_SUCCESS, user_data fill_tag) and wait for the poller to
 * take the lot: no spinning, however long the poller takes to get a CPU.
 * Each wait ends with the poller having taken something, and it takes
 * everything queued in one batch unless an SQE fails its set-up (it goes on
 * from there in its next pass), so the loop ends. */
static inline int ursa_k_make_room_(struct io_uring *r, unsigned n, uint64_t fill_tag)
{
	int rc = io_uring_submit(r);
	if (rc < 0)
		return rc;
	if (!(r->flags & IORING_SETUP_SQPOLL)) {
		while (io_uring_sq_space_left(r) < n) {
			if ((rc = io_uring_submit(r)) <= 0)
				return rc < 0 ? rc : -EBUSY;
		}
		return 0;
	}
	for (;;) {
		unsigned space = io_uring_sq_space_left(r);
		if (space >= n)
			return 0;
		if (space) {
			for (; space; space--) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(r);
				if (!sqe)
					break; /* cannot happen: space was free */
				ursa_k_prep(sqe, IORING_OP_NOP, -1, 0, 0, 0);
				sqe->flags = IOSQE_CQE_SKIP_SUCCESS;
				sqe->user_data = fill_tag;
			}
			if ((rc = io_uring_submit(r)) < 0)
				return rc;
		}
		if ((rc = io_uring_sqring_wait(r)) < 0)
			return rc;
	}
}

/* liburing's system calls leave errno alone where it has syscall stubs of
 * its own (Debian 12's x86_64 build: checked) but go through syscall(3)
 * where it has none: keep errno for the caller (include/ursa/common.h)
 * either way. */
static inline int ursa_k_make_room(struct io_uring *r, unsigned n, uint64_t fill_tag)
{
	int saved = errno;
	int rc = ursa_k_make_room_(r, n, fill_tag);
	errno = saved;
	return rc;
}

/* Can r carry futex and waitid requests? Not an IORING_SETUP_IOPOLL ring:
 * the kernel polls only block I/O there and fails every other request as
 * it takes it (-EINVAL), which also ends that submission's batch. */
static inline bool ursa_k_ring_takes_waits(const struct io_uring *r)
{
	return !(r->flags & IORING_SETUP_IOPOLL);
}

/* The SQ ring's size. */
static inline unsigned ursa_k_sq_entries(const struct io_uring *r)
{
	return r->sq.ring_entries;
}

/* Free SQ entries on r. */
static inline unsigned ursa_k_sq_space(struct io_uring *r)
{
	return io_uring_sq_space_left(r);
}

/* Submit what is queued on r (one kernel entry). Returns count or -errno. */
static inline int ursa_k_submit(struct io_uring *r)
{
	int saved = errno; /* as ursa_k_make_room */
	int rc = io_uring_submit(r);
	errno = saved;
	return rc;
}

static inline void ursa_k_prep_cancel(struct io_uring_sqe *sqe, uint64_t target)
{
	ursa_k_prep(sqe, IORING_OP_ASYNC_CANCEL, -1, target, 0, 0);
}

#endif
