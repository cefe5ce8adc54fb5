/* SPDX-License-Identifier: MIT */
/*
 * ursa/latch.h — an 8-byte countdown latch.
 *
 * A latch opens once its count reaches zero and stays open: count_down
 * subtracts, waiters wait until the count is zero (a one-shot barrier:
 * "all N workers have finished their part"). Counting down makes no system
 * call unless it opens the latch while someone waits; waiting on an open
 * latch makes none. Waiters may be blocked threads or io_uring waiters
 * (ursa_latch_wait_async), on the same latch.
 */
#ifndef URSA_LATCH_H
#define URSA_LATCH_H

#include <ursa/common.h>

URSA_EXTERN_C_BEGIN

typedef struct ursa_latch {
	uint32_t __count;   /* private: see lib/latch.c */
	uint32_t __waiters; /* private */
} ursa_latch_t;

/* An open latch (count zero). */
#define URSA_LATCH_INIT {0, 0}

/* Largest count a latch starts with. */
#define URSA_LATCH_COUNT_MAX 0x7fffffffu

/* Initialise *l with count (0: already open). flags: 0 or URSA_SHARED.
 * Returns 0, -EINVAL (NULL or misaligned l, unknown flags, count >
 * URSA_LATCH_COUNT_MAX). Never blocks. */
URSA_API int ursa_latch_init(ursa_latch_t *l, unsigned count, unsigned flags);

/* Subtract n from the count; if that opens the latch, wake every waiter.
 * Returns 0, -EINVAL (NULL l, or n larger than the count left: unchanged).
 * n == 0 changes nothing. Never blocks on a waiter (one that would open the
 * latch while another count_down is opening it waits for that one's pin,
 * microseconds: ursa_latch_destroy). */
URSA_API int ursa_latch_count_down(ursa_latch_t *l, unsigned n);

/* 0 if the latch is open, -EBUSY if not, -EINVAL. Never blocks. */
URSA_API int ursa_latch_trywait(ursa_latch_t *l);

/* Wait until the latch is open. Returns 0 or -EINVAL. Blocks. Not
 * interrupted by signals. */
URSA_API int ursa_latch_wait(ursa_latch_t *l);

/* ursa_latch_wait with a deadline. Returns 0, -ETIMEDOUT, -EINVAL (bad
 * clock or abs). Blocks. */
URSA_API int ursa_latch_timedwait(ursa_latch_t *l, clockid_t clk, const struct timespec *abs);

/* Check no one waits on *l (thread or ring op). Returns 0, -EBUSY,
 * -EINVAL. Once it returned 0 the memory may be freed, even while the
 * count_down that opened the latch is still running (the usual end of a
 * latch: the waiter frees it when its wait returns): that count_down
 * holds a pin until its last access, and destroy waits for it, yielding
 * the CPU, then in 1 ms sleeps (microseconds: a futex wake); -EBUSY if it
 * is still held after a second (a process killed inside the count_down of
 * a URSA_SHARED latch). */
URSA_API int ursa_latch_destroy(ursa_latch_t *l);

/* The ring and the op: liburing's struct io_uring, ursa/async.h's struct
 * ursa_op (include <liburing.h> and <ursa/async.h> to start one). */
struct io_uring;
struct ursa_op;

/* ursa_latch_wait inside the ring r: op (zeroed, or URSA_OP_INIT; optionally
 * given ursa_op_set_deadline) finishes through ursa_handle_cqe with res 0
 * once the latch is open, -ETIMEDOUT or -ECANCELED. Returns 1 (finished at
 * once: op->res set; nothing queued), 0 (in flight), -EBUSY (SQ ring full;
 * nothing changed), -EOPNOTSUPP (no io_uring futex ops), -EINVAL (NULL
 * argument, op in flight) -- the starter contract of ursa/async.h. Never
 * blocks. */
URSA_API int ursa_latch_wait_async(struct io_uring *r, ursa_latch_t *l, struct ursa_op *op);

URSA_EXTERN_C_END

#endif
