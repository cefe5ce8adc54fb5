/* SPDX-License-Identifier: MIT */
/*
 * kernel/wake.h — waking many chosen futex words in one kernel entry.
 * Internal, not installed.
 *
 * A wake batch wakes one waiter on each of a list of futex words (the
 * wait queue's per-slot state words). Without a ring every word costs one
 * futex wake system call, made at once. With a ring every word becomes one
 * IORING_OP_FUTEX_WAKE SQE, and ursa_k_wake_flush() submits them all with
 * a single io_uring_enter; a batch is split only when the SQ ring fills.
 *
 * The SQEs carry IOSQE_CQE_SKIP_SUCCESS, so a wake that worked posts no
 * CQE at all. One that fails (-EFAULT: the word's memory was unmapped by a
 * waiter that had already returned) posts a CQE with the batch's user_data;
 * lib/ passes ursa's auxiliary "wake" tag (lib/internal.h, URSA_AUX_WAKE),
 * which ursa_handle_cqe recognises as ursa's and consumes (*done = NULL).
 *
 * A wake is never lost to the ring: if the submission fails or leaves any
 * of these SQEs unconsumed (a non-owner submitting to a SINGLE_ISSUER ring,
 * -EAGAIN, a disabled ring), each such word is woken by a system call
 * instead and its SQE is turned into a NOP, so nothing of it happens later.
 */
#ifndef URSA_KERNEL_WAKE_H
#define URSA_KERNEL_WAKE_H

#include "kernel/futex.h"

#include <stdbool.h>
#include <stdint.h>

struct io_uring;

struct ursa_k_wake_batch {
	struct io_uring *ring; /* NULL: one futex wake system call per word */
	bool shared;	       /* futex key privacy of every word in the batch */
	uint64_t user_data;    /* on every wake SQE: names no op, only a kind */
	unsigned queued;       /* wake SQEs queued since the last submission */
	unsigned entries;      /* kernel entries made so far (for measurement) */
};

/* Start a batch. ring may be NULL; a non-NULL ring must carry
 * IORING_OP_FUTEX_WAKE (the caller checks ursa_probe() and
 * ursa_k_ring_takes_waits(): an IOPOLL ring fails a wake SQE as it takes
 * it, and that wake would be lost behind an error CQE). user_data tags
 * the SQEs (and any error CQE) and must be unique to wake batches: it is
 * also how a refused submission's leftover wake SQEs are found. */
static inline void ursa_k_wake_init(struct ursa_k_wake_batch *b, struct io_uring *ring, bool shared,
				    uint64_t user_data)
{
	b->ring = ring;
	b->shared = shared;
	b->user_data = user_data;
	b->queued = 0;
	b->entries = 0;
}

/* Wake one waiter of *uaddr: at once with a system call (no ring), or by
 * queueing a FUTEX_WAKE SQE (ring; when the SQ ring is full, what is queued
 * is submitted first). Never fails: a word is woken one way or another. */
URSA_HIDDEN void ursa_k_wake_add(struct ursa_k_wake_batch *b, uint32_t *uaddr);

/* Submit the queued wake SQEs (and anything else queued on the ring) in one
 * io_uring_enter. Nothing to do without a ring or with nothing queued. */
URSA_HIDDEN void ursa_k_wake_flush(struct ursa_k_wake_batch *b);

#endif
