/* SPDX-License-Identifier: MIT */
/*
 * ursa/waitq.h — a wait queue with directed (chosen) and batched wakeups.
 *
 * PostgreSQL's proclist plus per-backend semaphore, generalised. Waiters
 * are slots 0..nslots-1 (small integers, never pointers), so a queue in
 * shared memory works when mapped at different addresses. Each queued slot
 * has a 64-bit key (an LSN, a sequence number), so a waker can wake exactly
 * the waiters whose condition it made true.
 *
 * Protocol: ursa_waitq_prepare (enqueue) -> re-check the condition ->
 * ursa_waitq_wait, or ursa_waitq_cancel if the condition already holds.
 * A waker makes the condition true first, then calls a wake function; the
 * queue's lock orders the two, so either the waker sees the slot queued or
 * the waiter's re-check sees the condition: no wakeup is lost, and no extra
 * fence is needed on either side.
 * A slot counted by a wake is dequeued by the waker and its wait returns 0
 * (at once if the wake came first; never -ETIMEDOUT). A wait that times out
 * dequeues its slot. After a wait or cancel returns, the slot is free again.
 * Each slot has one waiter at a time (the caller owns its slot numbers); it
 * may wait blocking or in a ring (ursa_waitq_wait_async), and the two kinds
 * mix freely in one queue.
 *
 * ursa_waitq_wait spins briefly before it sleeps when spinning paid off
 * for its slot lately (ursa(7)).
 *
 * A URSA_SHARED queue works in MAP_SHARED memory (or a memfd/shm file)
 * mapped at different addresses in different processes, or twice in one
 * process. A process-private queue must be used through one mapping.
 * The queue must outlive every call on it.
 */
#ifndef URSA_WAITQ_H
#define URSA_WAITQ_H

#include <ursa/common.h>

URSA_EXTERN_C_BEGIN

/* The ring and the op: liburing's struct io_uring, ursa/async.h's struct
 * ursa_op (include <liburing.h> and <ursa/async.h> to start one). */
struct io_uring;
struct ursa_op;

typedef struct ursa_waitq ursa_waitq_t; /* variable size, 8-byte aligned */

/* Bytes needed for a queue of nslots slots: 32 + 24 * nslots. 0 if nslots
 * is 0 or above INT_MAX (counts must fit the wake functions' int). */
URSA_API size_t ursa_waitq_size(uint32_t nslots);

/* Initialise a queue in ursa_waitq_size(nslots) bytes at q (8-byte
 * aligned), every slot idle. An all-zero block is NOT a valid queue: every
 * call on one answers -EINVAL. flags: 0 or URSA_SHARED.
 * Returns 0 or -EINVAL (NULL q, nslots 0 or too big, unknown flags). */
URSA_API int ursa_waitq_init(ursa_waitq_t *q, uint32_t nslots, unsigned flags);

/* Enqueue slot with key, at the tail (FIFO). Returns 0, -EBUSY (slot already
 * queued, or woken and not yet reaped by its wait or cancel), -EINVAL (NULL
 * or uninitialised q, slot out of range). Takes the queue's lock briefly. */
URSA_API int ursa_waitq_prepare(ursa_waitq_t *q, uint32_t slot, uint64_t key);

/* Sleep until slot is woken, or until abs on clk (NULL: forever). Returns 0
 * (woken; the slot is free again), -ETIMEDOUT (no wake came: the slot was
 * dequeued and is free again), -EINVAL (NULL or uninitialised q, slot out
 * of range or not prepared, bad clock or timespec: nothing changed).
 * Blocks; not interrupted by signals. */
URSA_API int ursa_waitq_wait(ursa_waitq_t *q, uint32_t slot, clockid_t clk,
			     const struct timespec *abs);

/* Withdraw a prepared slot. Returns 0 (dequeued), 1 (a wake already took it;
 * the wakeup is consumed), -EINVAL (slot not prepared). Never blocks. */
URSA_API int ursa_waitq_cancel(ursa_waitq_t *q, uint32_t slot);

/* ursa_waitq_wait inside the ring r, for a prepared slot: op (zeroed, or
 * URSA_OP_INIT; optionally given ursa_op_set_deadline) finishes through
 * ursa_handle_cqe with res 0 (woken; the slot is free again), -ETIMEDOUT or
 * -ECANCELED (no wake came: the slot was dequeued and is free again; a
 * cancel that loses to a wake finishes with 0). Returns 1 (finished at
 * once: op->res set; nothing queued), 0 (in flight: SQEs queued, the caller
 * submits), -EBUSY (SQ ring full; nothing changed), -EOPNOTSUPP (no
 * io_uring futex ops), -EINVAL (NULL argument, op in flight, slot out of
 * range or not prepared) -- the starter contract of ursa/async.h. Never
 * blocks. */
URSA_API int ursa_waitq_wait_async(struct io_uring *r, ursa_waitq_t *q, uint32_t slot,
				   struct ursa_op *op);

/*
 * The wake functions dequeue the slots they choose (each is then counted by
 * exactly this call) and wake their waiters.
 * ring NULL: one futex wake system call per woken slot.
 * ring: one IORING_OP_FUTEX_WAKE SQE per woken slot, submitted by this call
 *   in one io_uring_enter (again only when the SQ ring fills); anything the
 *   application had queued on the ring is submitted with them. A call that
 *   wakes a single slot uses one futex syscall instead (also one kernel
 *   entry, and measured cheaper) and leaves the ring untouched. Successful
 *   wakes post no CQE; an error CQE (e.g. -EFAULT: a waiter unmapped the
 *   queue meanwhile) has ursa's tag and is consumed by ursa_handle_cqe.
 *   If the kernel lacks the io_uring futex ops, or refuses the submission
 *   (e.g. a SINGLE_ISSUER ring used from another thread), or the ring is
 *   an IORING_SETUP_IOPOLL one (which fails futex requests), the wakes are
 *   made by system calls instead: a slot the call counted is always woken.
 *   Waiters of a URSA_SHARED queue may be in other processes.
 * A call wakes at most as many slots as were queued when it began.
 * Never blocks (beyond the queue's lock).
 */

/* Wake the n oldest queued slots (FIFO). Returns how many were woken
 * (0 for n == 0 or an empty queue), or -EINVAL (NULL or uninitialised q). */
URSA_API int ursa_waitq_wake(ursa_waitq_t *q, uint32_t n, struct io_uring *ring);

/* Wake every queued slot whose key <= key (a group commit: "flushed up to
 * key"). Returns the count woken, or -EINVAL. */
URSA_API int ursa_waitq_wake_upto(ursa_waitq_t *q, uint64_t key, struct io_uring *ring);

/* Wake slot if it is queued. Returns 1 (woken), 0 (not queued: idle, or
 * already woken), -EINVAL (NULL or uninitialised q, slot out of range). */
URSA_API int ursa_waitq_wake_slot(ursa_waitq_t *q, uint32_t slot, struct io_uring *ring);

URSA_EXTERN_C_END

#endif
