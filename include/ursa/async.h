/* SPDX-License-Identifier: MIT */
/*
 * ursa/async.h — every ursa wait inside an io_uring.
 *
 * The application owns its struct io_uring (liburing). ursa borrows SQEs
 * from it and recognises its own CQEs by a tag in the top byte of
 * user_data; no application value whose top byte is zero (every user-space
 * pointer, every integer below 2^56) is ever taken for ursa's.
 *
 * The starters are declared beside their objects (ursa_mutex_lock_async in
 * ursa/mutex.h, the rwlock's in ursa/rwlock.h, and so on; this header
 * includes them all), each with its own results. Every starter
 * (ursa_*_async) returns:
 *    1  finished at once (object free, or deadline already past): op->res
 *       is set, nothing was queued;
 *    0  in flight: SQEs are queued on the ring; the caller submits as usual
 *       and passes every CQE to ursa_handle_cqe;
 *   -EBUSY  the SQ ring had no room (nothing changed: submit, call again);
 *   -EOPNOTSUPP  the kernel lacks the io_uring futex operations;
 *   -EAGAIN  (Linux 6.17+) the first private ring wait of a single-threaded
 *            process starts and joins a thread, so that its private futex
 *            hash exists before the wait is armed (kernel/futex.c), and no
 *            thread could be started (nothing changed); or (the rwlock's
 *            starters) a limit of the rwlock was reached: the reader count
 *            or the registered waiters (nothing changed; ursa/rwlock.h);
 *   -EINVAL  bad arguments, or op already in flight, or op has a deadline
 *            and r's SQ ring has a single entry (the wait and its linked
 *            timeout are queued together), or r is an IORING_SETUP_IOPOLL
 *            ring (the kernel fails every request there but block I/O).
 * An op finishes exactly once, whatever races between wake, timeout and
 * cancel. When an async lock finishes with res == 0 the caller holds it.
 * A wait that the kernel refuses (an error CQE: -ENOMEM, -EFAULT) finishes
 * with that error, and one that cannot be re-armed because the ring
 * refuses submissions (no SQ room even after a submit: a full CQ ring, a
 * disabled ring) with -EBUSY; either way nothing is held or registered
 * (ursa_cond_wait_async, which must finish holding its mutex, says what it
 * does instead). A deadline lasts for one op: a finished op that is started
 * again has none unless ursa_op_set_deadline gives it a new one.
 * Stop an op with ursa_op_cancel: a wait of ursa's cancelled by other
 * means (IORING_OP_ASYNC_CANCEL of the application's own, with
 * IORING_ASYNC_CANCEL_ANY) is taken for a spurious wake and re-armed.
 *
 * Ring waiters and blocked threads interoperate on the same objects,
 * process-private or URSA_SHARED. An unlock or post that wakes a ring
 * waiter leaves the object to it until its event loop handles the CQE
 * (later unlocks and posts do not wake a second waiter meanwhile; blocked
 * threads bound such a sleep at 10 ms only where they went to sleep after
 * the wake). So a thread must not block on an object (ursa_mutex_lock,
 * ursa_sem_wait, ...) while an op of its own on that object is in flight
 * in an IORING_SETUP_DEFER_TASKRUN ring that only it can run: the wake may
 * go to the op, which cannot complete until the thread returns to its loop
 * (with other rings the kernel runs the completion's task work as soon as
 * the thread sleeps, and its wait ends). Use the ring for that object, or
 * a trylock, there.
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

/*
 * ursa_waitid_async takes waitid(2)'s idtype_t, id_t and siginfo_t. glibc's
 * <sys/wait.h> and <signal.h> hide them in strict ISO C (-std=c99/c11 with
 * no feature macro), and a header must not define _GNU_SOURCE for its
 * user; glibc's own headers that always define them serve there (id_t is
 * its __id_t).
 */
#if defined(__GLIBC__) && !defined(__USE_XOPEN_EXTENDED) && !defined(__USE_XOPEN2K8)
#include <bits/types/idtype_t.h>
#include <bits/types/siginfo_t.h>
#define URSA__ID_T __id_t
#else
#define URSA__ID_T id_t
#endif

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

/* A zeroed op. C++ spells it {} so that -Wextra does not warn about the
 * members {0} leaves out (C exempts {0} from that warning). */
#ifdef __cplusplus
#define URSA_OP_INIT {}
#else
#define URSA_OP_INIT {0}
#endif

/* Wait for a child process inside the ring r (IORING_OP_WAITID): type, id,
 * info and options as for waitid(2). op finishes through ursa_handle_cqe
 * with res 0 (*info filled), -ETIMEDOUT, -ECANCELED or waitid's -errno.
 * Returns 1 (deadline already past: op->res is -ETIMEDOUT; nothing
 * queued), 0 (in flight), -EBUSY (SQ ring full), -EOPNOTSUPP (kernel
 * lacks IORING_OP_WAITID), -EINVAL (NULL r, op or info; op in flight).
 * Never blocks. */
URSA_API int ursa_waitid_async(struct io_uring *r, idtype_t type, URSA__ID_T id, siginfo_t *info,
			       int options, struct ursa_op *op);

/* Give a not-yet-started op an absolute deadline on clk. Returns 0 or
 * -EINVAL (NULL op, bad clock, malformed abs, op in flight). In a time
 * namespace that shifts CLOCK_MONOTONIC (a container restored by CRIU,
 * `unshare --time`), where io_uring would read a monotonic deadline in the
 * host's time, the deadline is turned into the same point on
 * CLOCK_REALTIME here, so a step of the wall clock while the op waits
 * moves it. */
URSA_API int ursa_op_set_deadline(struct ursa_op *op, clockid_t clk, const struct timespec *abs);

/* Pass every CQE here. Returns 0 (not ursa's: the application's) or 1
 * (ursa's, consumed), -EINVAL (NULL r, cqe or done). *done is the op this
 * CQE finished (its res final), or NULL (ursa re-armed a wait, or consumed
 * an auxiliary CQE). May queue SQEs (a re-arm) on r; the caller submits as
 * usual. A re-arm that finds the SQ ring full submits what is queued to
 * make room, the application's SQEs too (so finish a chain of linked SQEs
 * before calling); on an SQPOLL ring it then waits for the kernel's poller
 * to take those SQEs (never for another thread). It never blocks
 * otherwise.
 * A CQE tagged as an ursa op's that names no op in flight on r (one that
 * finished, was never started, was freed, or is not an op at all) is
 * undefined behaviour, as a stale pointer is; what can be caught cheaply
 * (a NULL or misaligned pointer, an op not in flight, not started on r, or
 * whose private part holds no started op) returns -EINVAL with *done NULL
 * and touches nothing. */
URSA_API int ursa_handle_cqe(struct io_uring *r, const struct io_uring_cqe *cqe,
			     struct ursa_op **done);

/* Ask an in-flight op to stop. It still finishes exactly once, through
 * ursa_handle_cqe: -ECANCELED, or acquired (res 0) if the wake won.
 * Returns 0 (cancel queued, op already finishing, or op not in flight),
 * -EBUSY (SQ ring full: nothing changed), -EINVAL (NULL r or op, or op in
 * flight on another ring: nothing changed). A condvar op that is re-taking
 * its mutex ignores the cancel (it finishes holding the mutex). Never
 * blocks. */
URSA_API int ursa_op_cancel(struct io_uring *r, struct ursa_op *op);

URSA_EXTERN_C_END

#undef URSA__ID_T

#endif
