/* SPDX-License-Identifier: MIT */
/*
 * kernel/wake.c — batched futex wakes: syscalls, or FUTEX_WAKE SQEs in one
 * io_uring submission. See kernel/wake.h for the contract.
 *
 * Why a ring batch is cheaper than a loop of futex_wake(2): each syscall is
 * a kernel entry and exit, and each wake may make the woken thread
 * preempt the waker on the spot (an involuntary context switch), so the
 * waker finishes its loop only after the early wakees have run. A single
 * io_uring_enter issues every FUTEX_WAKE inline, in the kernel, before
 * returning to user space: one entry, and the scheduler sees the whole
 * runnable set at once.
 */
#include "config.h"

#include "kernel/wake.h"

#include "kernel/uring.h"
#include "lib/trace.h"

#include <string.h>

static struct io_uring_sqe *sqe_at(struct io_uring *ring, unsigned pos)
{
	struct io_uring_sq *sq = &ring->sq;
	unsigned shift = (ring->flags & IORING_SETUP_SQE128) ? 1 : 0;
	unsigned idx = pos & sq->ring_mask;
	/* liburing fills the SQ index array as the identity; rings set up
	 * without one (IORING_SETUP_NO_SQARRAY) leave sq->array NULL. */
	if (sq->array)
		idx = sq->array[idx];
	return &sq->sqes[idx << shift];
}

static void prep_wake(struct io_uring_sqe *sqe, uint32_t *uaddr, bool shared, uint64_t user_data)
{
	/* One waiter per word (a slot has one owner): count 1, never a
	 * UINT32_MAX that the kernel's int would read as -1. */
	ursa_k_prep_futex_wake(sqe, uaddr, 1, shared);
	sqe->flags = IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = user_data;
}

/*
 * After a submission of a non-SQPOLL ring, every SQE between the kernel's
 * head and our tail was left unconsumed (the kernel commits its head before
 * io_uring_enter returns). Do our wakes among them by system call and turn
 * those SQEs into skipped NOPs, so a later submission by the application
 * neither repeats the wake nor touches memory that may be gone by then.
 */
static void rescue_unconsumed(struct ursa_k_wake_batch *b)
{
	struct io_uring *ring = b->ring;
	unsigned head = io_uring_smp_load_acquire(ring->sq.khead);
	for (unsigned pos = head; pos != ring->sq.sqe_tail; pos++) {
		struct io_uring_sqe *sqe = sqe_at(ring, pos);
		if (sqe->user_data != b->user_data || sqe->opcode != IORING_OP_FUTEX_WAKE)
			continue;
		bool shared = !((uint32_t)sqe->fd & FUTEX2_PRIVATE);
		ursa_k_futex_wake((uint32_t *)(uintptr_t)sqe->addr, 1, shared);
		b->entries++;
		ursa_k_prep(sqe, IORING_OP_NOP, -1, 0, 0, 0);
		sqe->flags = IOSQE_CQE_SKIP_SUCCESS;
		sqe->user_data = b->user_data;
	}
}

static void submit(struct ursa_k_wake_batch *b)
{
	URSA_TRACE(wake_batch, b->ring, b->queued);
	ursa_k_submit(b->ring); /* errno kept: kernel/uring.h */
	b->entries++;
	b->queued = 0;
	/* An SQPOLL ring's thread consumes the SQEs after we return; its
	 * submission cannot be refused the way io_uring_enter's can. */
	if (!(b->ring->flags & IORING_SETUP_SQPOLL))
		rescue_unconsumed(b);
}

void ursa_k_wake_flush(struct ursa_k_wake_batch *b)
{
	if (b->ring && b->queued)
		submit(b);
}

void ursa_k_wake_add(struct ursa_k_wake_batch *b, uint32_t *uaddr)
{
	if (b->ring) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(b->ring);
		if (!sqe) {
			/* The batch is larger than the free SQ space: submit
			 * what is queued, then go on. */
			submit(b);
			sqe = io_uring_get_sqe(b->ring);
		}
		if (sqe) {
			prep_wake(sqe, uaddr, b->shared, b->user_data);
			b->queued++;
			return;
		}
		/* Still full (an SQPOLL thread has not caught up): do this one
		 * by system call rather than wait. */
	}
	ursa_k_futex_wake(uaddr, 1, b->shared);
	b->entries++;
}
