/* SPDX-License-Identifier: MIT */
/*
 * ursa/cond.h — an 8-byte condition variable used with ursa_mutex_t.
 *
 * Waiters may be blocked threads or io_uring waiters (ursa_cond_wait_async).
 * Spurious wakeups are possible, as with pthreads: wait in a loop that
 * re-checks the predicate. Signal and broadcast make no system call when no
 * one waits, or when every waiter has been woken and not yet returned.
 */
#ifndef URSA_COND_H
#define URSA_COND_H

#include <ursa/common.h>
#include <ursa/mutex.h>

URSA_EXTERN_C_BEGIN

typedef struct ursa_cond {
	uint32_t __seq;     /* private: see lib/cond.c */
	uint32_t __waiters; /* private */
} ursa_cond_t;

#define URSA_COND_INIT {0, 0}

/* Initialise *c. flags: 0 or URSA_SHARED. Returns 0 or -EINVAL. */
URSA_API int ursa_cond_init(ursa_cond_t *c, unsigned flags);

/* Atomically unlock *m and wait for a signal or broadcast on *c, then lock
 * *m again. The caller must hold *m. Returns 0, -EINVAL (NULL, or c and m
 * of different privacy), -EPERM (m not locked; nothing waited), -EAGAIN
 * (65535 waiters already wait on *c; nothing waited, *m still held).
 * Blocks. On every return, including errors after the wait, *m is held. */
URSA_API int ursa_cond_wait(ursa_cond_t *c, ursa_mutex_t *m);

/* ursa_cond_wait with a deadline; -ETIMEDOUT when it passed (with *m held
 * again). Blocks. */
URSA_API int ursa_cond_timedwait(ursa_cond_t *c, ursa_mutex_t *m, clockid_t clk,
				 const struct timespec *abs);

/* Wake at least one waiter of *c, if any. Returns 0 or -EINVAL. Never blocks. */
URSA_API int ursa_cond_signal(ursa_cond_t *c);

/* Wake every waiter of *c. Returns 0 or -EINVAL. Never blocks. */
URSA_API int ursa_cond_broadcast(ursa_cond_t *c);

/* Check no one waits on *c. Returns 0, -EBUSY, -EINVAL. As glibc's
 * pthread_cond_destroy asks, no ursa_cond_signal or ursa_cond_broadcast on
 * *c may still be running when it is destroyed and freed: a signal counts
 * its wake and then bumps the sequence word, and a waiter woken by another
 * signal, or timed out, may return in between (a signal made while
 * holding the mutex the waiters use is always finished before they
 * return). Unlike a mutex's unlock, a semaphore's post and a latch's
 * count_down, which destroy waits for. */
URSA_API int ursa_cond_destroy(ursa_cond_t *c);

/* The ring and the op: liburing's struct io_uring, ursa/async.h's struct
 * ursa_op (include <liburing.h> and <ursa/async.h> to start one). */
struct io_uring;
struct ursa_op;

/* ursa_cond_wait inside the ring r. Entered holding *m: the starter
 * registers the wait and unlocks *m; op (zeroed, or URSA_OP_INIT; optionally
 * given ursa_op_set_deadline) then waits for a signal and re-takes *m in
 * the ring, and finishes through ursa_handle_cqe holding *m again whatever
 * its res: 0 (signalled, or a spurious wakeup), -ETIMEDOUT, -ECANCELED.
 * Returns 1 (finished at once: op->res set, *m held; nothing queued), 0 (in
 * flight: SQEs queued, the caller submits; *m is unlocked until op
 * finishes), -EBUSY (SQ ring full), -EOPNOTSUPP (no io_uring futex ops),
 * -EINVAL (NULL argument, op in flight, c and m of different privacy),
 * -EPERM (m not locked), -EAGAIN (65535 waiters already wait on *c) -- on
 * every error *m is still held and nothing
 * waits. The starter contract is in ursa/async.h. Never blocks: re-taking
 * *m is a ring wait too, and it neither stops for a cancel or deadline nor
 * gives up on an error CQE (the kernel's -ENOMEM: it waits again); when
 * the ring refuses submissions it waits for SQ room, re-armed by the next
 * ursa_handle_cqe on the ring (so keep the loop running). */
URSA_API int ursa_cond_wait_async(struct io_uring *r, ursa_cond_t *c, ursa_mutex_t *m,
				  struct ursa_op *op);

URSA_EXTERN_C_END

#endif
