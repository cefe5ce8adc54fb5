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
 * A slot counted by a wake is dequeued by the waker and its wait returns 0
 * (at once if the wake came first; never -ETIMEDOUT). A wait that times out
 * dequeues its slot. After a wait or cancel returns, the slot is free again.
 * Each slot has one waiter at a time (the caller owns its slot numbers).
 */
#ifndef URSA_WAITQ_H
#define URSA_WAITQ_H

#include <ursa/common.h>

URSA_EXTERN_C_BEGIN

struct io_uring;

typedef struct ursa_waitq ursa_waitq_t; /* variable size, 8-byte aligned */

/* Bytes needed for a queue of nslots slots (0 if nslots is 0 or too big). */
URSA_API size_t ursa_waitq_size(uint32_t nslots);

/* Initialise a queue in ursa_waitq_size(nslots) bytes at q.
 * flags: 0 or URSA_SHARED. Returns 0 or -EINVAL. */
URSA_API int ursa_waitq_init(ursa_waitq_t *q, uint32_t nslots, unsigned flags);

/* Enqueue slot with key, at the tail (FIFO). Returns 0, -EBUSY (slot already
 * queued or not yet reaped by its wait), -EINVAL (slot out of range). */
URSA_API int ursa_waitq_prepare(ursa_waitq_t *q, uint32_t slot, uint64_t key);

/* Sleep until slot is woken. Returns 0 (woken), -ETIMEDOUT (slot dequeued),
 * -EINVAL (slot never prepared, bad clock or timespec). Blocks. */
URSA_API int ursa_waitq_wait(ursa_waitq_t *q, uint32_t slot, clockid_t clk,
			     const struct timespec *abs);

/* Withdraw a prepared slot. Returns 0 (dequeued), 1 (a wake already took it;
 * the wakeup is consumed), -EINVAL (slot not prepared). Never blocks. */
URSA_API int ursa_waitq_cancel(ursa_waitq_t *q, uint32_t slot);

/* Wake the n oldest queued slots. ring NULL: futex syscalls; else FUTEX_WAKE
 * SQEs on ring, submitted by this call in one kernel entry. Returns how many
 * were woken, or -errno (nothing dequeued). */
URSA_API int ursa_waitq_wake(ursa_waitq_t *q, uint32_t n, struct io_uring *ring);

/* Wake every queued slot whose key <= key. Returns the count woken. */
URSA_API int ursa_waitq_wake_upto(ursa_waitq_t *q, uint64_t key, struct io_uring *ring);

/* Wake slot if queued. Returns 1 (woken), 0 (not queued), -EINVAL. */
URSA_API int ursa_waitq_wake_slot(ursa_waitq_t *q, uint32_t slot, struct io_uring *ring);

URSA_EXTERN_C_END

#endif
