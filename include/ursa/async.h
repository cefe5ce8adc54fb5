/* SPDX-License-Identifier: MIT */
/*
 * ursa/async.h — every ursa wait inside an io_uring.
 *
 * The application owns its struct io_uring (liburing). ursa borrows SQEs
 * from it and recognises its own CQEs by a tag in the top byte of
 * user_data; no application value whose top byte is zero (every user-space
 * pointer, every integer below 2^56) is ever taken for ursa's.
 *
 * Starters (ursa_*_async) return:
 *    1  finished at once (object free, or deadline already past): op->res
 *       is set, nothing was queued;
 *    0  in flight: SQEs are queued on the ring; the caller submits as usual
 *       and passes every CQE to ursa_handle_cqe;
 *   -EBUSY  the SQ ring had no room (nothing changed: submit, call again);
 *   -EOPNOTSUPP  the kernel lacks the io_uring futex operations;
 *   -EINVAL  bad arguments, or op already in flight.
 * An op finishes exactly once, whatever races between wake, timeout and
 * cancel. When an async lock finishes with res == 0 the caller holds it.
 *
 * Ring waiters and blocked threads interoperate on the same objects,
 * process-private or URSA_SHARED.
 */
#ifndef URSA_ASYNC_H
#define URSA_ASYNC_H

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <ursa/common.h>
#include <ursa/cond.h>
#include <ursa/event.h>
#include <ursa/mutex.h>
#include <ursa/rwlock.h>
#include <ursa/sem.h>
#include <ursa/wait_any.h>
#include <ursa/waitq.h>

URSA_EXTERN_C_BEGIN

struct io_uring;
struct io_uring_cqe;

/* A caller-allocated asynchronous operation. Zero it (or URSA_OP_INIT)
 * before ursa_op_set_deadline and its starter; once it has finished it may
 * be reused or freed: nothing of ursa's refers to it any more. */
struct ursa_op {
	void *user_data; /* the caller's; ursa never reads it */
	int res;	 /* final result: 0, -ETIMEDOUT, -ECANCELED, -errno */
	uint32_t __priv32;
	uint64_t __priv[12]; /* private */
};

#define URSA_OP_INIT {0}

/* Start taking a lock / waiting, in the ring. See the starter contract above. */
URSA_API int ursa_mutex_lock_async(struct io_uring *r, ursa_mutex_t *m, struct ursa_op *op);
URSA_API int ursa_rwlock_rdlock_async(struct io_uring *r, ursa_rwlock_t *l, struct ursa_op *op);
URSA_API int ursa_rwlock_wrlock_async(struct io_uring *r, ursa_rwlock_t *l, struct ursa_op *op);
/* Entered holding *m; finishes holding *m again (whatever res is, unless
 * the starter itself returned an error, in which case *m is still held). */
URSA_API int ursa_cond_wait_async(struct io_uring *r, ursa_cond_t *c, ursa_mutex_t *m,
				  struct ursa_op *op);
URSA_API int ursa_sem_wait_async(struct io_uring *r, ursa_sem_t *s, struct ursa_op *op);
URSA_API int ursa_event_wait_async(struct io_uring *r, ursa_event_t *e, struct ursa_op *op);
/* slot must have been prepared (ursa_waitq_prepare). */
URSA_API int ursa_waitq_wait_async(struct io_uring *r, ursa_waitq_t *q, uint32_t slot,
				   struct ursa_op *op);
/* v must stay valid until the op finishes. On success res is the index of
 * the one object taken (>= 0), as ursa_wait_any returns it. */
URSA_API int ursa_wait_any_async(struct io_uring *r, const ursa_waitable_t *v, unsigned n,
				 struct ursa_op *op);
/* IORING_OP_WAITID: res is 0 with *info filled, or -errno. */
URSA_API int ursa_waitid_async(struct io_uring *r, idtype_t type, id_t id, siginfo_t *info,
			       int options, struct ursa_op *op);

/* Give a not-yet-started op an absolute deadline on clk. Returns 0 or
 * -EINVAL (NULL op, bad clock, malformed abs, op in flight). */
URSA_API int ursa_op_set_deadline(struct ursa_op *op, clockid_t clk, const struct timespec *abs);

/* Pass every CQE here. Returns 0 (not ursa's: the application's) or 1
 * (ursa's, consumed). *done is the op this CQE finished (its res final), or
 * NULL (ursa re-armed a wait, or consumed an auxiliary CQE). May queue SQEs
 * (a re-arm) on r; the caller submits as usual. */
URSA_API int ursa_handle_cqe(struct io_uring *r, const struct io_uring_cqe *cqe,
			     struct ursa_op **done);

/* Ask an in-flight op to stop. It still finishes exactly once, through
 * ursa_handle_cqe: -ECANCELED, or acquired (res 0) if the wake won.
 * Returns 0 (cancel queued, or op already finishing), -EBUSY (SQ ring full),
 * -EINVAL. */
URSA_API int ursa_op_cancel(struct io_uring *r, struct ursa_op *op);

URSA_EXTERN_C_END

#endif
