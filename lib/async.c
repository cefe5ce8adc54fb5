/* SPDX-License-Identifier: MIT */
/*
 * lib/async.c — every ursa wait inside an io_uring.
 *
 * A ring waiter runs the same step as a blocked thread (lib/internal.h):
 * step -> DONE, or WAIT on (addr, val). Where a thread would call
 * futex_wait(addr, val), the op queues IORING_OP_FUTEX_WAIT(addr, val) on
 * the application's ring, with the same futex key (same word, same
 * privacy), so a wake from either side — a thread's futex_wake syscall or a
 * ring FUTEX_WAKE — finds both kinds of waiter in the same hash bucket.
 * When the wait's CQE comes back (0 woken, -EAGAIN the word had changed),
 * ursa_handle_cqe runs the step again: DONE finishes the op; WAIT re-arms
 * (a lost race; the op stays in flight).
 *
 * user_data. Only the wait's own SQE carries the op: top byte URSA_TAG_OP,
 * low 56 bits the pointer. Linked timeouts and cancels are tagged
 * URSA_TAG_AUX with a kind and no pointer: their CQEs may arrive after the
 * op finished and was freed, and ursa only consumes them.
 *
 * Exactly-once. An op is in flight (F_INFLIGHT) from a starter returning 0
 * until the handle_cqe call that sets *done to it. At any moment at most
 * one wait SQE of the op is in the kernel, and the op only finishes in
 * handle_cqe on that wait's CQE (or in the starter, before anything was
 * queued). The kernel posts exactly one CQE per wait SQE whatever races
 * between its wake, its linked timeout and an async cancel (a cancel that
 * loses gets -ENOENT/-EALREADY on its own, auxiliary CQE; the wait then
 * completes normally), so each op finishes exactly once.
 *
 * Deadlines. ursa_op_set_deadline stores an absolute time on MONOTONIC or
 * REALTIME; each wait SQE is linked (IOSQE_IO_LINK) to an
 * IORING_OP_LINK_TIMEOUT with IORING_TIMEOUT_ABS (and _REALTIME): the kernel
 * reads the timespec, which lives in the op, when the SQE is submitted. When
 * it fires, the wait completes with -ECANCELED; ursa runs one last step (the
 * object may have become free at that very moment) and otherwise abandons
 * the wait: -ETIMEDOUT. A deadline already past when a starter runs, or when
 * a re-arm is due, finishes the op after one try, without queueing anything.
 *
 * Cancel. ursa_op_cancel sets F_CANCEL and queues IORING_OP_ASYNC_CANCEL on
 * the op's user_data. Whatever the wait's CQE then says, handle_cqe steps
 * once more: taken -> res 0 (the wake won), otherwise abandon -> -ECANCELED.
 * A cancelled op is never re-armed, so a cancel that raced with a re-arm
 * cannot be lost.
 *
 * The condition variable is two waits in sequence: on the condvar's
 * sequence word, then on the mutex. A timeout or cancel of the first still
 * goes through the second (the op finishes holding the mutex, as
 * ursa_cond_timedwait does); the second ignores cancel and deadline.
 *
 * Starvation. A ring waiter's wake reaches it late (CQE, task_work, the
 * loop's turn), so running threads can win every race. The mutex step
 * counts lost races in the op's waiter state and, after a few, asks the
 * unlocker for a direct hand-off (see lib/mutex.c): the lock then goes to
 * the oldest sleeper, ring or thread.
 *
 * Private futex hash (Linux 6.17+): a private ring wait armed while the
 * process is single-threaded would sit in the global futex table and miss
 * every wake sent once the process has threads. Every starter first calls
 * ursa_k_private_ring_wait_prepare() (kernel/futex.c), which makes sure the
 * process already has its private hash. Syscall waits cannot hit this (a
 * blocked thread creates no threads).
 *
 * Threading: like liburing, a ring is used by one thread at a time; call
 * the starters, ursa_handle_cqe and ursa_op_cancel from the thread that
 * owns the ring.
 */
#include "lib/internal.h"
#include "lib/wait_any_internal.h"
#include "lib/waitq_internal.h"

#include "kernel/uring.h"

#include <liburing.h>
#include <stdlib.h>
#include <string.h>

enum op_kind {
	K_NONE = 0,
	K_MUTEX,
	K_RDLOCK,
	K_WRLOCK,
	K_COND,
	K_SEM,
	K_EVENT,
	K_WAITQ,
	K_ANY,
	K_WAITID,
};

/* op->__priv32 flags */
#define F_INFLIGHT 0x1u
#define F_CANCEL 0x2u
#define F_DEADLINE 0x4u
#define F_REALTIME 0x8u

/* The op's private state, laid over op->__priv. */
struct op_priv {
	uint8_t kind;
	uint8_t stage;	 /* cond: 0 waiting on the condvar, 1 on the mutex */
	uint16_t pad;
	int32_t pending; /* cond: the result to report once the mutex is held */
	void *obj;
	void *obj2;	 /* cond: the mutex; wait-any: its struct any_state */
	uint32_t aux;	 /* waitq: slot; wait-any: n */
	uint32_t pad2;
	struct ursa_waiter w;
	struct __kernel_timespec ts; /* deadline, read by the kernel at submit */
} __attribute__((may_alias));

_Static_assert(sizeof(struct op_priv) <= sizeof(((struct ursa_op *)0)->__priv),
	       "struct ursa_op private area too small");

static inline struct op_priv *P(struct ursa_op *op)
{
	return (struct op_priv *)(void *)op->__priv;
}

static inline uint64_t op_tag(struct ursa_op *op)
{
	return ((uint64_t)URSA_TAG_OP << 56) | ((uint64_t)(uintptr_t)op & URSA_PTR_MASK);
}

/* Asked on every start: keep the probe's answer in one word (0 unknown,
 * 1 yes, -1 no) instead of copying the feature struct each time. */
static bool have_uring_futex(void)
{
	static int have;
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
	if (unlikely(h == 0)) {
		struct ursa_features f;
		h = ursa_probe(&f) == 0 && f.uring_futex ? 1 : -1;
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h > 0;
}

/* ---- per-kind dispatch --------------------------------------------- */

/* Wait-any keeps one waiter state per object and the futex_waitv vector the
 * kernel reads while the WAITV is in flight: n * 40 bytes, allocated when
 * the op first has to wait (never on the path that finds an object free). */
static inline struct ursa_waiter *any_ws(struct op_priv *p)
{
	return p->obj2;
}

static inline struct futex_waitv *any_fv(struct op_priv *p)
{
	return (struct futex_waitv *)(any_ws(p) + p->aux);
}

/* After any return of a wait: the waiter has now slept. */
static void op_woke(struct op_priv *p)
{
	if (p->kind == K_ANY)
		ursa__wait_any_woke(any_ws(p), p->aux);
	else
		p->w.slept = 1;
}

static int op_step(struct op_priv *p, struct ursa_wait *out)
{
	switch (p->kind) {
	case K_MUTEX:
		return ursa__mutex_step(p->obj, &p->w, out);
	case K_RDLOCK:
		return ursa__rwlock_rd_step(p->obj, &p->w, out);
	case K_WRLOCK:
		return ursa__rwlock_wr_step(p->obj, &p->w, out);
	case K_COND:
		return p->stage == 0 ? ursa__cond_step(p->obj, &p->w, out)
				     : ursa__mutex_step(p->obj2, &p->w, out);
	case K_SEM:
		return ursa__sem_step(p->obj, &p->w, out);
	case K_EVENT:
		return ursa__event_step(p->obj, &p->w, out);
	case K_WAITQ:
		return ursa__waitq_step(p->obj, p->aux, &p->w, out);
	default:
		return -EINVAL;
	}
}

static int op_abandon(struct op_priv *p)
{
	switch (p->kind) {
	case K_MUTEX:
		return ursa__mutex_abandon(p->obj, &p->w);
	case K_RDLOCK:
		return ursa__rwlock_rd_abandon(p->obj, &p->w);
	case K_WRLOCK:
		return ursa__rwlock_wr_abandon(p->obj, &p->w);
	case K_COND:
		return p->stage == 0 ? ursa__cond_abandon(p->obj, &p->w)
				     : ursa__mutex_abandon(p->obj2, &p->w);
	case K_SEM:
		return ursa__sem_abandon(p->obj, &p->w);
	case K_EVENT:
		return ursa__event_abandon(p->obj, &p->w);
	case K_WAITQ:
		return ursa__waitq_abandon(p->obj, p->aux) == 1;
	case K_ANY:
		ursa__wait_any_abandon(p->obj, p->aux, any_ws(p));
		return 0;
	default:
		return 0;
	}
}

/* ---- arming and finishing -------------------------------------------- */

static bool op_deadline_applies(struct ursa_op *op)
{
	struct op_priv *p = P(op);
	return (op->__priv32 & F_DEADLINE) && !(p->kind == K_COND && p->stage == 1);
}

static bool op_deadline_passed(struct ursa_op *op)
{
	struct op_priv *p = P(op);
	struct timespec ts = {(time_t)p->ts.tv_sec, (long)p->ts.tv_nsec};
	return op_deadline_applies(op) &&
	       ursa__deadline_passed((op->__priv32 & F_REALTIME) ? CLOCK_REALTIME : CLOCK_MONOTONIC,
				     &ts);
}

static unsigned op_sqes_needed(struct ursa_op *op)
{
	return op_deadline_applies(op) ? 2 : 1;
}

static void op_prep_timeout(struct ursa_op *op, struct io_uring_sqe *sqe)
{
	ursa_k_prep_link_timeout_abs(sqe, &P(op)->ts,
				     (op->__priv32 & F_REALTIME) ? CLOCK_REALTIME : CLOCK_MONOTONIC);
	ursa_k_sqe_finish(sqe, ursa__aux_tag(URSA_AUX_TIMEOUT), false);
}

/* Reserve the SQEs a wait needs: the wait's, and its linked timeout's when
 * a deadline applies (*tsqe, else NULL). NULL when the SQ ring is short. */
static struct io_uring_sqe *op_reserve(struct io_uring *r, struct ursa_op *op,
				       struct io_uring_sqe **tsqe)
{
	bool dl = op_deadline_applies(op);
	struct io_uring_sqe *sqe;
	*tsqe = NULL;
	if (ursa_k_sq_space(r) < (dl ? 2u : 1u) || !(sqe = io_uring_get_sqe(r)) ||
	    (dl && !(*tsqe = io_uring_get_sqe(r))))
		return NULL; /* the second cannot fail after the space check */
	return sqe;
}

/* Tag a prepared wait SQE with its op and link its timeout, if any. */
static void op_commit(struct ursa_op *op, struct io_uring_sqe *sqe, struct io_uring_sqe *tsqe)
{
	ursa_k_sqe_finish(sqe, op_tag(op), tsqe != NULL);
	if (tsqe)
		op_prep_timeout(op, tsqe);
}

/* Queue a futex wait (and its linked timeout). -EBUSY: no SQ room. */
static int op_arm(struct io_uring *r, struct ursa_op *op, const struct ursa_wait *wt)
{
	struct io_uring_sqe *tsqe, *sqe = op_reserve(r, op, &tsqe);
	if (!sqe)
		return -EBUSY;
	ursa_k_prep_futex_wait(sqe, wt->addr, wt->val, wt->shared);
	op_commit(op, sqe, tsqe);
	return 0;
}

static int op_finish(struct ursa_op *op, int res)
{
	struct op_priv *p = P(op);
	if (p->kind == K_ANY && p->obj2) {
		free(p->obj2);
		p->obj2 = NULL;
	}
	op->res = res;
	op->__priv32 &= ~(F_INFLIGHT | F_CANCEL);
	return 1;
}

/* cond: the condvar part is over (result `res`); now re-take the mutex. */
static void cond_to_mutex(struct op_priv *p, int res)
{
	p->stage = 1;
	p->pending = res;
	memset(&p->w, 0, sizeof(p->w));
	p->w.slept = 1; /* a ring locker: see op_start */
	p->w.aux = URSA_W_RING;
}

/* op_advance for wait-any (lib/wait_any_internal.h gives the loop). */
static int any_advance(struct io_uring *r, struct ursa_op *op)
{
	struct op_priv *p = P(op);
	const ursa_waitable_t *v = p->obj;
	unsigned n = p->aux;
	int rc = ursa__wait_any_try(v, n, any_ws(p));
	if (rc >= 0)
		return op_finish(op, rc);
	int why = (op->__priv32 & F_CANCEL) ? -ECANCELED : op_deadline_passed(op) ? -ETIMEDOUT : 0;
	if (!why) {
		rc = ursa__wait_any_prepare(v, n, any_ws(p), any_fv(p));
		if (rc >= 0)
			return op_finish(op, rc);
		why = rc == -EAGAIN ? 0 : rc;
	}
	if (why) {
		ursa__wait_any_abandon(v, n, any_ws(p));
		return op_finish(op, why);
	}
	struct io_uring_sqe *tsqe, *sqe = op_reserve(r, op, &tsqe);
	if (!sqe && ursa_k_submit(r) >= 0)
		sqe = op_reserve(r, op, &tsqe);
	if (!sqe)
		return -EBUSY;
	ursa_k_prep_futex_waitv(sqe, any_fv(p), n);
	op_commit(op, sqe, tsqe);
	return 0;
}

/*
 * Run the op forward after a start or a wait CQE: returns 1 finished
 * (op->res set), 0 a wait is armed, -EBUSY no SQ room to arm (nothing
 * armed, the op's registration still in place).
 */
static int op_advance(struct io_uring *r, struct ursa_op *op)
{
	struct op_priv *p = P(op);
	if (p->kind == K_ANY)
		return any_advance(r, op);
	for (;;) {
		struct ursa_wait wt = {0};
		int rc = op_step(p, &wt);
		if (rc == URSA_STEP_DONE) {
			if (p->kind == K_COND && p->stage == 0) {
				cond_to_mutex(p, 0);
				continue;
			}
			return op_finish(op, p->kind == K_COND ? p->pending : 0);
		}
		if (rc < 0) {
			if (p->kind == K_COND && p->stage == 0) {
				cond_to_mutex(p, rc);
				continue;
			}
			return op_finish(op, rc);
		}
		bool stoppable = !(p->kind == K_COND && p->stage == 1);
		int why = 0;
		if (stoppable && (op->__priv32 & F_CANCEL))
			why = -ECANCELED;
		else if (stoppable && op_deadline_passed(op))
			why = -ETIMEDOUT;
		if (why) {
			int res = op_abandon(p) == 1 ? 0 : why;
			if (p->kind == K_COND) {
				cond_to_mutex(p, res);
				continue;
			}
			return op_finish(op, res);
		}
		rc = op_arm(r, op, &wt);
		if (rc == -EBUSY && ursa_k_submit(r) >= 0)
			rc = op_arm(r, op, &wt); /* the SQ ring is empty after a submit */
		return rc;
	}
}

/* ---- starters -------------------------------------------------------- */

static int op_start(struct io_uring *r, struct ursa_op *op, enum op_kind kind, void *obj,
		    void *obj2, uint32_t aux)
{
	if (!r || !op || !obj)
		return -EINVAL;
	if (op->__priv32 & F_INFLIGHT)
		return -EINVAL;
	if (!have_uring_futex())
		return -EOPNOTSUPP;
	int rc = ursa_k_private_ring_wait_prepare();
	if (rc)
		return rc;
	struct op_priv *p = P(op);
	p->kind = (uint8_t)kind;
	p->stage = 0;
	p->pending = 0;
	p->obj = obj;
	p->obj2 = obj2;
	p->aux = aux;
	memset(&p->w, 0, sizeof(p->w));
	/* A ring locker's wake reaches it late: it may claim a hand-off from
	 * its first step, and never sleeps on a HANDED mutex (lib/mutex.c). */
	if (kind == K_MUTEX) {
		p->w.slept = 1;
		p->w.aux = URSA_W_RING;
	}
	op->__priv32 &= ~F_CANCEL;
	op->res = 0;
	/* Room first, so -EBUSY changes nothing. */
	if (ursa_k_sq_space(r) < op_sqes_needed(op))
		return -EBUSY;
	return 0;
}

/* Second half of a starter: run the step machine; 1 done, 0 in flight. */
static int op_launch(struct io_uring *r, struct ursa_op *op)
{
	int rc = op_advance(r, op);
	if (rc == 0)
		op->__priv32 |= F_INFLIGHT;
	/* -EBUSY cannot happen: room was checked and nothing else used it. */
	return rc;
}

int ursa_mutex_lock_async(struct io_uring *r, ursa_mutex_t *m, struct ursa_op *op)
{
	int rc = op_start(r, op, K_MUTEX, m, NULL, 0);
	return rc ? rc : op_launch(r, op);
}

int ursa_rwlock_rdlock_async(struct io_uring *r, ursa_rwlock_t *l, struct ursa_op *op)
{
	int rc = op_start(r, op, K_RDLOCK, l, NULL, 0);
	return rc ? rc : op_launch(r, op);
}

int ursa_rwlock_wrlock_async(struct io_uring *r, ursa_rwlock_t *l, struct ursa_op *op)
{
	int rc = op_start(r, op, K_WRLOCK, l, NULL, 0);
	return rc ? rc : op_launch(r, op);
}

int ursa_sem_wait_async(struct io_uring *r, ursa_sem_t *s, struct ursa_op *op)
{
	int rc = op_start(r, op, K_SEM, s, NULL, 0);
	return rc ? rc : op_launch(r, op);
}

int ursa_event_wait_async(struct io_uring *r, ursa_event_t *e, struct ursa_op *op)
{
	int rc = op_start(r, op, K_EVENT, e, NULL, 0);
	return rc ? rc : op_launch(r, op);
}

int ursa_cond_wait_async(struct io_uring *r, ursa_cond_t *c, ursa_mutex_t *m, struct ursa_op *op)
{
	if (!m)
		return -EINVAL;
	int rc = op_start(r, op, K_COND, c, m, 0);
	if (rc)
		return rc;
	rc = ursa__cond_begin(c, m, &P(op)->w);
	if (rc)
		return rc; /* m still held, nothing registered */
	ursa__mutex_unlock_fast(m);
	return op_launch(r, op);
}

int ursa_waitq_wait_async(struct io_uring *r, ursa_waitq_t *q, uint32_t slot, struct ursa_op *op)
{
	int rc = op_start(r, op, K_WAITQ, q, NULL, slot);
	return rc ? rc : op_launch(r, op);
}

int ursa_wait_any_async(struct io_uring *r, const ursa_waitable_t *v, unsigned n,
			struct ursa_op *op)
{
	int rc = ursa__wait_any_check(v, n);
	if (rc)
		return rc;
	struct ursa_features f;
	if (r && op && !(op->__priv32 & F_INFLIGHT) && (ursa_probe(&f) || !f.uring_futexv))
		return -EOPNOTSUPP;
	rc = op_start(r, op, K_ANY, (void *)v, NULL, n);
	if (rc)
		return rc;
	/* First try without allocating anything: try() touches only the
	 * object it takes, so zeroed states on the stack do. */
	struct ursa_waiter ws0[URSA_WAIT_ANY_MAX];
	memset(ws0, 0, n * sizeof(ws0[0]));
	rc = ursa__wait_any_try(v, n, ws0);
	if (rc >= 0 || op_deadline_passed(op))
		return op_finish(op, rc >= 0 ? rc : -ETIMEDOUT);
	struct op_priv *p = P(op);
	p->obj2 = calloc(n, sizeof(struct ursa_waiter) + sizeof(struct futex_waitv));
	if (!p->obj2)
		return -ENOMEM;
	return op_launch(r, op);
}

int ursa_waitid_async(struct io_uring *r, idtype_t type, id_t id, siginfo_t *info, int options,
		      struct ursa_op *op)
{
	if (!r || !op || !info)
		return -EINVAL;
	if (op->__priv32 & F_INFLIGHT)
		return -EINVAL;
	struct ursa_features f;
	if (ursa_probe(&f) || !f.uring_waitid)
		return -EOPNOTSUPP;
	struct op_priv *p = P(op);
	p->kind = K_WAITID;
	p->stage = 0;
	op->__priv32 &= ~F_CANCEL;
	op->res = 0;
	if (op_deadline_passed(op))
		return op_finish(op, -ETIMEDOUT);
	struct io_uring_sqe *tsqe, *sqe = op_reserve(r, op, &tsqe);
	if (!sqe)
		return -EBUSY;
	ursa_k_prep_waitid(sqe, type, id, info, options);
	op_commit(op, sqe, tsqe);
	op->__priv32 |= F_INFLIGHT;
	return 0;
}

/* ---- deadline, cancel, completion ------------------------------------- */

int ursa_op_set_deadline(struct ursa_op *op, clockid_t clk, const struct timespec *abs)
{
	if (!op || (op->__priv32 & F_INFLIGHT))
		return -EINVAL;
	int rc = ursa__check_deadline(clk, abs);
	if (rc)
		return rc;
	if (!abs) {
		op->__priv32 &= ~(F_DEADLINE | F_REALTIME);
		return 0;
	}
	struct op_priv *p = P(op);
	p->ts.tv_sec = abs->tv_sec;
	p->ts.tv_nsec = abs->tv_nsec;
	op->__priv32 = (op->__priv32 & ~F_REALTIME) | F_DEADLINE |
		       (clk == CLOCK_REALTIME ? F_REALTIME : 0);
	return 0;
}

int ursa_op_cancel(struct io_uring *r, struct ursa_op *op)
{
	if (!r || !op)
		return -EINVAL;
	if (!(op->__priv32 & F_INFLIGHT) || (op->__priv32 & F_CANCEL))
		return 0; /* finished, or a cancel is already on its way */
	if (ursa_k_sq_space(r) < 1)
		return -EBUSY;
	struct io_uring_sqe *sqe = io_uring_get_sqe(r);
	if (!sqe)
		return -EBUSY;
	ursa_k_prep_cancel(sqe, op_tag(op));
	ursa_k_sqe_finish(sqe, ursa__aux_tag(URSA_AUX_CANCEL), false);
	op->__priv32 |= F_CANCEL;
	return 0;
}

static int waitid_cqe(struct ursa_op *op, int res)
{
	if (res == -ECANCELED && !(op->__priv32 & F_CANCEL) && (op->__priv32 & F_DEADLINE))
		res = -ETIMEDOUT;
	return op_finish(op, res);
}

int ursa_handle_cqe(struct io_uring *r, const struct io_uring_cqe *cqe, struct ursa_op **done)
{
	if (done)
		*done = NULL;
	if (!r || !cqe || !done)
		return -EINVAL;
	uint64_t ud = cqe->user_data;
	unsigned top = (unsigned)(ud >> 56);
	if (top == URSA_TAG_AUX)
		return 1; /* a linked timeout's, a cancel's or a batched wake's CQE */
	if (top != URSA_TAG_OP)
		return 0;
	struct ursa_op *op = (struct ursa_op *)(uintptr_t)(ud & URSA_PTR_MASK);
	struct op_priv *p = P(op);
	if (!(op->__priv32 & F_INFLIGHT))
		return 1; /* cannot happen: one CQE per armed wait */
	int res = cqe->res, rc;

	if (p->kind == K_WAITID) {
		*done = op;
		return waitid_cqe(op, res);
	}
	op_woke(p);
	if (res >= 0 || res == -EAGAIN) {
		/* woken (WAITV: the index), or the word moved on: step again */
	} else if (res == -ECANCELED) {
		/* Our cancel, our linked timeout, or someone else's cancel of
		 * everything (treated as a cancel). One more step either way. */
		if (!(op->__priv32 & F_CANCEL) && !op_deadline_passed(op))
			op->__priv32 |= F_CANCEL;
	} else {
		/* The kernel refused the wait (-EFAULT, -EINVAL, -ENOMEM...). */
		int a = op_abandon(p);
		if (p->kind == K_COND && p->stage == 0) {
			cond_to_mutex(p, a == 1 ? 0 : res);
		} else {
			*done = op;
			return op_finish(op, a == 1 ? 0 : res);
		}
	}
	rc = op_advance(r, op);
	if (rc == -EBUSY) {
		/* No SQ room even after a submit (the kernel is refusing
		 * submissions, e.g. a full CQ ring): the op cannot wait any
		 * longer. A cond op must still re-take its mutex: block. */
		if (p->kind == K_COND) {
			if (p->stage == 0)
				op_abandon(p);
			ursa_mutex_lock(p->obj2);
			rc = op_finish(op, p->stage == 0 ? -EBUSY : p->pending);
		} else {
			rc = op_finish(op, op_abandon(p) == 1 ? 0 : -EBUSY);
		}
	}
	if (rc == 1)
		*done = op;
	return 1;
}
