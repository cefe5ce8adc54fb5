/* SPDX-License-Identifier: MIT */
/*
 * ursa/wait_any.h — wait for the first of several mutexes, semaphores and
 * events (futex_waitv underneath; 128 objects at most).
 */
#ifndef URSA_WAIT_ANY_H
#define URSA_WAIT_ANY_H

#include <ursa/common.h>

URSA_EXTERN_C_BEGIN

enum {
	URSA_WAIT_MUTEX = 1, /* obj is ursa_mutex_t *: taking it locks it */
	URSA_WAIT_SEM = 2,   /* obj is ursa_sem_t *: taking it decrements it */
	URSA_WAIT_EVENT = 3  /* obj is ursa_event_t *: taking it sees it set
				(auto-reset: consumes it) */
};

#define URSA_WAIT_ANY_MAX 128

typedef struct ursa_waitable {
	unsigned kind;
	void *obj;
} ursa_waitable_t;

/* Wait until one of v[0..n-1] can be taken, take exactly that one, and
 * return its index. Objects are tried in index order, so of several free
 * at once the lowest index is taken. Returns the index, -ETIMEDOUT,
 * -EINVAL (n == 0, n > 128, NULL, unknown kind, bad clock), -ENOSYS
 * (kernel before 5.16, or futex_waitv refused by a seccomp filter; whether
 * or not an object is free, except that a filter installed after the
 * process first found the call present is met only when the call would
 * sleep: a free object is taken before that). Blocks. */
URSA_API int ursa_wait_any(const ursa_waitable_t *v, unsigned n, clockid_t clk,
			   const struct timespec *abs);

/* The ring and the op: liburing's struct io_uring, ursa/async.h's struct
 * ursa_op (include <liburing.h> and <ursa/async.h> to start one). */
struct io_uring;
struct ursa_op;

/* ursa_wait_any inside the ring r (IORING_OP_FUTEX_WAITV). v must stay
 * valid until op finishes. op (zeroed, or URSA_OP_INIT; optionally given
 * ursa_op_set_deadline) finishes through ursa_handle_cqe with res the
 * index of the one object taken (>= 0), -ETIMEDOUT or -ECANCELED (none
 * taken). Returns 1 (finished at once: op->res set; nothing queued), 0 (in
 * flight: SQEs queued, the caller submits), -EBUSY (SQ ring full; nothing
 * changed), -EOPNOTSUPP (no IORING_OP_FUTEX_WAITV), -ENOMEM, -EINVAL (as
 * ursa_wait_any's, NULL r or op, op in flight) -- the starter contract of
 * ursa/async.h. Never blocks. */
URSA_API int ursa_wait_any_async(struct io_uring *r, const ursa_waitable_t *v, unsigned n,
				 struct ursa_op *op);

URSA_EXTERN_C_END

#endif
