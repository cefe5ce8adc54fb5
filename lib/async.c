/* SPDX-License-Identifier: MIT */
/*
 * lib/async.c — every ursa wait inside an io_uring: the op's state machine.
 *
 * A ring op runs its object's step (lib/step.h) where a blocked thread
 * would: DONE finishes the op; WAIT queues IORING_OP_FUTEX_WAIT (or WAITV,
 * or WAITID) on the same word with the same key privacy, and the wait's
 * CQE steps again. One transition function moves the op, driven by four
 * events: start, the wait's CQE (its res), cancel, and a retry of a parked
 * op. The deadline is no event of its own: it is read when a wait would be
 * armed, and its linked timeout ends an armed wait with -ECANCELED.
 *
 *   IDLE/DONE --start--> step: DONE ---------------------------> DONE
 *                              WAIT, deadline past --abandon--> DONE
 *                              WAIT --arm--> ARMED
 *   ARMED --CQE 0/-EAGAIN/index--> step (as from start)
 *   ARMED --CQE -ECANCELED (timeout, a foreign cancel)----> STOPPING, step
 *   ARMED --CQE other error (the kernel refused the wait)--> STOPPING, step
 *   ARMED --cancel: queue ASYNC_CANCEL--> STOPPING (the CQE still comes)
 *   STOPPING --CQE--> step: DONE -> DONE (res 0: the wake won)
 *                           WAIT -> abandon -> DONE (-ECANCELED, -ETIMEDOUT,
 *                                   the error; 0 if abandon says it was ours)
 *
 * A composite (the condvar: ops->then) does not finish when its wait is
 * over: it takes its second object (the mutex) whatever the wait's result,
 * ignoring cancel and deadline, and reports that result once it holds it:
 *
 *   wait over (res) --> RELOCKING: step the mutex; WAIT --arm--> RELOCKING
 *   RELOCKING --CQE, any res (an error CQE too: -ENOMEM)--> step again
 *   RELOCKING, no SQ room even after a submit --> PARKED
 *   PARKED --retry (any ursa_handle_cqe on its ring)--> arm the saved wait
 *
 * So a condvar op finishes only holding its mutex, and never blocks the
 * loop to get it. A plain op that finds no SQ room to re-arm (the kernel
 * refusing submissions: a full CQ ring, a disabled ring) abandons and
 * finishes with -EBUSY: nothing held, nothing registered.
 *
 * Exactly once: an op has at most one wait SQE in the kernel, and finishes
 * only in the starter (nothing queued) or on that wait's CQE. The kernel
 * posts one CQE per wait SQE whatever races between its wake, its linked
 * timeout and a cancel (a cancel that loses gets its own auxiliary CQE).
 *
 * user_data: only the wait's own SQE carries the op (URSA_TAG_OP, pointer
 * in the low 56 bits); linked timeouts and cancels carry URSA_TAG_AUX and no
 * pointer, so their late CQEs never make ursa touch a finished op.
 *
 * Private futex hash (Linux 6.17+): a private ring wait armed while the
 * process is single-threaded sits in the global futex table and would miss
 * wakes sent once the process has threads; every private wait is armed
 * after ursa_k_private_ring_wait_prepare() (kernel/futex.c), which
 * ursa__op_prepare calls before an op's first step (not for waits on
 * process-shared words only: the objects' `shared` hooks, lib/step.h). A
 * fork child asks again; an op is not carried across a fork.
 *
 * Threading: like liburing, a ring is used by one thread at a time; the
 * starters, ursa_handle_cqe and ursa_op_cancel run on the thread that owns
 * the ring. Parked ops are kept per thread and retried by that thread.
 */
#include "lib/internal.h"
#include "lib/trace.h"

#include "kernel/uring.h"

#include <string.h>

enum op_state {
	S_IDLE = 0,  /* zeroed: never started */
	S_ARMED,     /* a wait SQE of the op is queued or in the kernel */
	S_STOPPING,  /* armed, and its wait is to end: cancel, deadline, error */
	S_RELOCKING, /* a composite's second stage, its wait armed */
	S_PARKED,    /* a composite's second stage, waiting for SQ room */
	S_DONE,	     /* finished: op->res is final; the op may be reused */
};

/* op->__priv32: the state, then flags. */
#define ST_MASK 0x7u
#define F_DEADLINE 0x10u    /* ursa_op_set_deadline gave one (cleared at finish) */
#define F_REALTIME 0x20u    /* ... on CLOCK_REALTIME */
#define F_THEN 0x40u	    /* in the composite's second stage */
#define F_PARK_SHARED 0x80u /* the parked wait's key is shared */

#define OP_MAGIC 0x7572u /* "ur": a started op (catches stray CQEs) */

/* The low 3 bits of a wait's user_data (an op is 8-byte aligned) count the
 * op's arms. A linked timeout that fired just as its wait completed cancels
 * by user_data from task work that may run only later (with DEFER_TASKRUN,
 * at the ring owner's next entry) — by then the op may have finished and
 * been started again with a new wait: the same pointer, so without the
 * count that stale cancel would end the new wait with -ECANCELED. The
 * count makes such a hit rare, not impossible: it wraps every 8 arms, and
 * an op zeroed for its next start counts from 0 again, so its first wait
 * has the old first wait's tag. What makes a hit harmless is op_cqe: an
 * -ECANCELED the op did not ask for is a spurious wake (re-armed, or
 * -ETIMEDOUT once the deadline passed), as for a cancel from outside
 * (ursa/async.h). Every op-tagged CQE is reaped before the op finishes
 * (one wait SQE in flight at a time; the auxiliary SQEs carry no op
 * pointer), so a stale completion can never be taken for a new op's. */
#define GEN_MASK 0x7u

/* The op's private state, laid over op->__priv. */
struct op_priv {
	uint16_t magic;
	uint16_t gen;			   /* arms so far (user_data bits 0-2) */
	int32_t pending;		   /* composite: the wait's result */
	int32_t reason;			   /* STOPPING: why the wait ends */
	uint32_t park_val;		   /* PARKED: the wait to arm... */
	void *park_addr;		   /* ...on this word */
	const struct ursa_step_ops *ops;   /* the current stage's object */
	void *obj;
	void *obj2;			   /* composite: the second object */
	struct io_uring *ring;		   /* the ring it was started on */
	struct ursa_op *next;		   /* PARKED: this thread's list */
	struct ursa_waiter w;		   /* the current stage's waiter */
	struct __kernel_timespec ts;	   /* deadline, read by the kernel */
} __attribute__((may_alias));

_Static_assert(sizeof(struct op_priv) <= sizeof(((struct ursa_op *)0)->__priv),
	       "struct ursa_op private area too small");

static inline struct op_priv *P(struct ursa_op *op)
{
	return (struct op_priv *)(void *)op->__priv;
}

static inline unsigned op_state(const struct ursa_op *op)
{
	return op->__priv32 & ST_MASK;
}

static inline void set_state(struct ursa_op *op, unsigned s)
{
	op->__priv32 = (op->__priv32 & ~ST_MASK) | s;
}

static inline bool in_flight(const struct ursa_op *op)
{
	unsigned s = op_state(op);
	return s >= S_ARMED && s <= S_PARKED;
}

static inline uint64_t op_tag(struct ursa_op *op)
{
	return ((uint64_t)URSA_TAG_OP << 56) | ((uint64_t)(uintptr_t)op & URSA_PTR_MASK) |
	       (P(op)->gen & GEN_MASK);
}

/* Asked on every start: keep a "yes" in one word instead of copying the
 * feature struct each time. A "no" is asked again: ursa_probe caches its
 * lasting answers itself, and a passing one (the probe's ring set-up out
 * of file descriptors, say) must not turn the async API off for good. */
static bool have_uring_futex(void)
{
	static bool have;
	if (likely(__atomic_load_n(&have, __ATOMIC_RELAXED)))
		return true;
	struct ursa_features f;
	if (ursa_probe(&f) != 0 || !f.uring_futex)
		return false;
	__atomic_store_n(&have, true, __ATOMIC_RELAXED);
	return true;
}

/* ---- deadline ------------------------------------------------------- */

static inline bool deadline_applies(const struct ursa_op *op)
{
	return (op->__priv32 & (F_DEADLINE | F_THEN)) == F_DEADLINE;
}

static inline clockid_t deadline_clock(const struct ursa_op *op)
{
	return (op->__priv32 & F_REALTIME) ? CLOCK_REALTIME : CLOCK_MONOTONIC;
}

static bool deadline_passed(struct ursa_op *op)
{
	struct op_priv *p = P(op);
	struct timespec ts = {(time_t)p->ts.tv_sec, (long)p->ts.tv_nsec};
	return deadline_applies(op) && ursa__deadline_passed(deadline_clock(op), &ts);
}

/* ---- parked ops (a composite's second stage with no SQ room) --------- */

static unsigned parked_total; /* all threads': the hot path reads only this */
static __thread struct ursa_op *parked;

static void park(struct ursa_op *op, const struct ursa_wait *wt)
{
	struct op_priv *p = P(op);
	p->park_addr = wt->addr;
	p->park_val = wt->val;
	op->__priv32 = (op->__priv32 & ~F_PARK_SHARED) | (wt->shared ? F_PARK_SHARED : 0);
	set_state(op, S_PARKED);
	p->next = parked;
	parked = op;
	__atomic_fetch_add(&parked_total, 1, __ATOMIC_RELAXED);
}

static void unpark(struct ursa_op **pp)
{
	struct ursa_op *op = *pp;
	*pp = P(op)->next;
	P(op)->next = NULL;
	__atomic_fetch_sub(&parked_total, 1, __ATOMIC_RELAXED);
}

/* ---- arming and finishing -------------------------------------------- */

/* Queue the wait the step asked for, and its linked timeout when a deadline
 * applies (the pair goes in together). A private wait's futex hash was made
 * sure of when the op was prepared (ursa__op_prepare). 0; -EBUSY: no SQ
 * room even after making room (ursa_k_make_room: submit, and on an SQPOLL
 * ring wait for its poller). */
static int op_arm(struct io_uring *r, struct ursa_op *op, const struct ursa_wait *wt)
{
	struct io_uring_sqe *sqe[2];
	unsigned n = deadline_applies(op) ? 2 : 1;
	if (!ursa_k_get_sqes(r, sqe, n)) {
		int rc = ursa_k_make_room(r, n, ursa__aux_tag(URSA_AUX_FILL));
		if (rc < 0 || !ursa_k_get_sqes(r, sqe, n)) {
			URSA_TRACE(async_refused, op, rc);
			return -EBUSY;
		}
	}
	switch (wt->kind) {
	case URSA_ARM_WAITV:
		ursa_k_prep_futex_waitv(sqe[0], wt->addr, wt->val);
		break;
	case URSA_ARM_WAITID:
		ursa_k_prep_waitid(sqe[0], (idtype_t)wt->a, (id_t)wt->b, wt->addr, (int)wt->val);
		break;
	default:
		ursa_k_prep_futex_wait(sqe[0], wt->addr, wt->val, wt->shared, wt->bits);
		break;
	}
	P(op)->gen++;
	ursa_k_sqe_finish(sqe[0], op_tag(op), n == 2);
	if (n == 2) {
		ursa_k_prep_link_timeout_abs(sqe[1], &P(op)->ts, deadline_clock(op));
		ursa_k_sqe_finish(sqe[1], ursa__aux_tag(URSA_AUX_TIMEOUT), false);
	}
	URSA_TRACE(async_arm, op, wt->addr, wt->kind);
	return 0;
}

/* The op is over: nothing of ursa's refers to it any more. */
static int op_done(struct ursa_op *op, int res)
{
	URSA_TRACE(async_complete, op, res);
	op->res = res;
	op->__priv32 = (op->__priv32 & ~(ST_MASK | F_DEADLINE | F_REALTIME | F_THEN | F_PARK_SHARED)) |
		       S_DONE;
	return 1;
}

static int op_finish(struct ursa_op *op, int res)
{
	struct op_priv *p = P(op);
	if (p->ops->fini)
		p->ops->fini(p->obj);
	return op_done(op, res);
}

/* ---- the transition function ------------------------------------------ */

/*
 * Step the op's current stage until it finishes (1, op->res set) or a
 * wait is armed or parked (0). At start (`starting`), a step's -errno is
 * bad input and a wait that cannot be armed is given up: -errno, nothing
 * started and nothing registered.
 */
static int op_advance(struct io_uring *r, struct ursa_op *op, bool starting)
{
	struct op_priv *p = P(op);
	for (;;) {
		struct ursa_wait wt = {0};
		bool then = op->__priv32 & F_THEN;
		int res, rc = p->ops->step(p->obj, &p->w, &wt);
		if (rc == URSA_STEP_DONE) {
			res = then ? p->pending : wt.res;
		} else if (rc < 0) {
			if (starting)
				return rc;
			res = rc;
		} else {
			int why = then			       ? 0
				  : op_state(op) == S_STOPPING ? p->reason
				  : deadline_passed(op)	       ? -ETIMEDOUT
							       : 0;
			if (!why) {
				rc = op_arm(r, op, &wt);
				if (rc == 0) {
					set_state(op, then ? S_RELOCKING : S_ARMED);
					return 0;
				}
				if (then) {
					park(op, &wt);
					return 0;
				}
				if (starting) {
					p->ops->abandon(p->obj, &p->w);
					return rc;
				}
				why = rc;
			}
			res = p->ops->abandon(p->obj, &p->w) == 1 ? 0 : why;
		}
		if (!then && p->ops->then) {
			/* The composite's wait is over: now its second object,
			 * as a fresh ring waiter of it. */
			p->pending = res;
			p->ops = p->ops->then;
			p->obj = p->obj2;
			p->w = p->ops->ring;
			op->__priv32 |= F_THEN;
			continue;
		}
		return op_finish(op, res);
	}
}

/* The wait's CQE, with its result. */
static int op_cqe(struct io_uring *r, struct ursa_op *op, int res)
{
	struct op_priv *p = P(op);
	p->w.slept = res == 0 && !(p->ops->flags & URSA_OPS_CQE_RESULT) ? URSA_SLEPT_WOKEN : 1;
	if (p->ops->flags & URSA_OPS_CQE_RESULT) {
		/* waitid: the CQE is the result; a cancel says why. One that
		 * is neither ours nor our deadline's (the application's own
		 * ASYNC_CANCEL): re-armed, as the futex waits below are. */
		if (res == -ECANCELED) {
			if (op_state(op) == S_STOPPING)
				res = p->reason;
			else if (deadline_passed(op))
				res = -ETIMEDOUT;
			else
				return op_advance(r, op, false);
		}
		return op_finish(op, res);
	}
	if (op_state(op) == S_ARMED && res < 0 && res != -EAGAIN) {
		/* -ECANCELED with the deadline past: our linked timeout. Without
		 * it (no ursa_op_cancel asked, no deadline reached) the wait was
		 * ended by nothing of this op's: a linked timeout of an earlier
		 * wait at the same address that fired as that wait completed
		 * (seen with SINGLE_ISSUER|DEFER_TASKRUN rings: its CQE comes
		 * before this op's deadline), or the application cancelling
		 * requests wholesale. Either way this op did not end: step and
		 * re-arm, as after a spurious wake. Anything else: the kernel
		 * refused the wait (-ENOMEM, -EFAULT...): one more step, then
		 * that error. */
		if (res != -ECANCELED) {
			p->reason = res;
			set_state(op, S_STOPPING);
		} else if (deadline_passed(op)) {
			p->reason = -ETIMEDOUT;
			set_state(op, S_STOPPING);
		}
	}
	/* RELOCKING: whatever the CQE says, step again — the op finishes only
	 * holding its mutex. */
	return op_advance(r, op, false);
}

/* Arm the waits of this thread's parked ops on r, while there is room. */
static void retry_parked(struct io_uring *r)
{
	for (struct ursa_op **pp = &parked; *pp;) {
		struct ursa_op *op = *pp;
		struct op_priv *p = P(op);
		if (p->ring != r) {
			pp = &p->next;
			continue;
		}
		struct ursa_wait wt = {.addr = p->park_addr,
				       .val = p->park_val,
				       .shared = op->__priv32 & F_PARK_SHARED};
		if (op_arm(r, op, &wt) != 0)
			return; /* still no room */
		unpark(pp);
		set_state(op, S_RELOCKING);
	}
}

/* ---- starting ---------------------------------------------------------- */

static bool waits_shared(const struct ursa_step_ops *ops, const void *obj)
{
	return ops->shared && ops->shared(obj);
}

int ursa__op_prepare(struct io_uring *r, struct ursa_op *op, const struct ursa_step_ops *ops,
		     void *obj, void *obj2, uint32_t aux, struct ursa_waiter **w)
{
	if (!r || !op || ((uintptr_t)op & GEN_MASK) || !obj || ((uintptr_t)obj & 3) ||
	    ((uintptr_t)obj2 & 3))
		return -EINVAL;
	if (in_flight(op))
		return -EINVAL;
	if (!(ops->flags & URSA_OPS_CQE_RESULT) && !have_uring_futex())
		return -EOPNOTSUPP;
	if (!ursa_k_ring_takes_waits(r))
		return -EINVAL; /* IOPOLL: the kernel would fail the wait */
	/* A wait and its linked timeout go in together: a one-entry SQ can
	 * never take them (-EBUSY would have the caller retry for ever). */
	unsigned need = deadline_applies(op) ? 2u : 1u;
	if (ursa_k_sq_entries(r) < need)
		return -EINVAL;
	/* Room first, so -EBUSY changes nothing. */
	if (ursa_k_sq_space(r) < need)
		return -EBUSY;
	/* And the private futex hash for a wait on a private word
	 * (kernel/futex.c; after the first time, one load), so that a thread
	 * that could not be started for it changes nothing either (-EAGAIN):
	 * op_arm would find out only after the first step, and giving that
	 * step up dequeues a waitq slot, or drops the wake it had already
	 * taken. Waits on process-shared words (a multi-process server's
	 * shared memory) need no hash, and no thread. */
	if (!(ops->flags & URSA_OPS_CQE_RESULT) &&
	    (!waits_shared(ops, obj) || (ops->then && !waits_shared(ops->then, obj2)))) {
		int rc = ursa_k_private_ring_wait_prepare();
		if (rc)
			return rc;
	}
	struct op_priv *p = P(op);
	p->magic = OP_MAGIC;
	p->pending = 0;
	p->reason = 0;
	p->ops = ops;
	p->obj = obj;
	p->obj2 = obj2;
	p->ring = r;
	p->next = NULL;
	p->w = ops->ring;
	p->w.aux |= aux;
	op->res = 0;
	op->__priv32 &= ~(ST_MASK | F_THEN | F_PARK_SHARED);
	if (w)
		*w = &p->w;
	return 0;
}

int ursa__op_launch(struct io_uring *r, struct ursa_op *op)
{
	return op_advance(r, op, true);
}

int ursa__op_start(struct io_uring *r, struct ursa_op *op, const struct ursa_step_ops *ops,
		   void *obj, void *obj2, uint32_t aux)
{
	int rc = ursa__op_prepare(r, op, ops, obj, obj2, aux, NULL);
	return rc ? rc : ursa__op_launch(r, op);
}

int ursa__op_finish_now(struct ursa_op *op, int res)
{
	return op_done(op, res);
}

/* waitid is a one-shot wait: the first step asks for IORING_OP_WAITID; its
 * CQE is the op's result (URSA_OPS_CQE_RESULT). The waiter holds the
 * arguments: aux the options, losses the idtype, registered the id. */
static int waitid_step(void *info, struct ursa_waiter *w, struct ursa_wait *out)
{
	out->kind = URSA_ARM_WAITID;
	out->addr = info;
	out->val = w->aux;
	out->a = w->losses;
	out->b = w->registered;
	return URSA_STEP_WAIT;
}

static int waitid_abandon(void *info, struct ursa_waiter *w)
{
	return 0; /* nothing registered anywhere */
}

static const struct ursa_step_ops waitid_ops = {
	.name = "waitid",
	.step = waitid_step,
	.abandon = waitid_abandon,
	.flags = URSA_OPS_CQE_RESULT,
};

int ursa_waitid_async(struct io_uring *r, idtype_t type, id_t id, siginfo_t *info, int options,
		      struct ursa_op *op)
{
	struct ursa_features f;
	struct ursa_waiter *w;
	if (!r || !op || !info)
		return -EINVAL;
	if (ursa_probe(&f) || !f.uring_waitid)
		return -EOPNOTSUPP;
	int rc = ursa__op_prepare(r, op, &waitid_ops, info, NULL, 0, &w);
	if (rc)
		return rc;
	w->aux = (uint32_t)options;
	w->losses = (uint32_t)type;
	w->registered = (uint32_t)id;
	return ursa__op_launch(r, op);
}

/* ---- deadline, cancel, completion ------------------------------------- */

/* A monotonic deadline as the same point on CLOCK_REALTIME, as of now: for
 * a process whose monotonic clock a time namespace shifts, where io_uring
 * would read the monotonic one in the host's time (kernel/timens.c). A
 * step of the wall clock while the op waits then moves its deadline. */
static void monotonic_as_realtime(struct __kernel_timespec *ts)
{
	struct timespec mono, rt;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &rt);
	long long sec = (long long)rt.tv_sec - (long long)mono.tv_sec;
	long long nsec = ts->tv_nsec + (rt.tv_nsec - mono.tv_nsec);
	if (nsec < 0) {
		nsec += 1000000000LL;
		sec--;
	} else if (nsec >= 1000000000LL) {
		nsec -= 1000000000LL;
		sec++;
	}
	if (__builtin_add_overflow(ts->tv_sec, sec, &ts->tv_sec))
		ts->tv_sec = sec > 0 ? LLONG_MAX : 0; /* "forever" stays forever */
	if (ts->tv_sec < 0) {
		ts->tv_sec = 0; /* long past either way */
		nsec = 0;
	}
	ts->tv_nsec = nsec;
}

int ursa_op_set_deadline(struct ursa_op *op, clockid_t clk, const struct timespec *abs)
{
	if (!op || in_flight(op))
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
	if (clk == CLOCK_MONOTONIC && ursa_k_monotonic_shifted()) {
		monotonic_as_realtime(&p->ts);
		clk = CLOCK_REALTIME;
	}
	op->__priv32 = (op->__priv32 & ~F_REALTIME) | F_DEADLINE |
		       (clk == CLOCK_REALTIME ? F_REALTIME : 0);
	return 0;
}

int ursa_op_cancel(struct io_uring *r, struct ursa_op *op)
{
	struct io_uring_sqe *sqe[1];
	if (!r || !op)
		return -EINVAL;
	if (!in_flight(op))
		return 0; /* finished (or never started): nothing to stop */
	if (P(op)->ring != r)
		return -EINVAL;
	if (op_state(op) != S_ARMED)
		return 0; /* already stopping, or re-taking a condvar's mutex */
	if (!ursa_k_get_sqes(r, sqe, 1))
		return -EBUSY;
	ursa_k_prep_cancel(sqe[0], op_tag(op));
	ursa_k_sqe_finish(sqe[0], ursa__aux_tag(URSA_AUX_CANCEL), false);
	P(op)->reason = -ECANCELED;
	set_state(op, S_STOPPING);
	return 0;
}

int ursa_handle_cqe(struct io_uring *r, const struct io_uring_cqe *cqe, struct ursa_op **done)
{
	if (done)
		*done = NULL;
	if (!r || !cqe || !done)
		return -EINVAL;
	if (unlikely(__atomic_load_n(&parked_total, __ATOMIC_RELAXED)) && parked)
		retry_parked(r);
	uint64_t ud = cqe->user_data;
	unsigned top = (unsigned)(ud >> 56);
	if (top == URSA_TAG_AUX)
		return 1; /* a linked timeout's, a cancel's or a batched wake's CQE */
	if (top != URSA_TAG_OP)
		return 0;
	/* What can be caught cheaply of a CQE that names no op of this ring
	 * in flight (the contract calls it undefined): -EINVAL, untouched. */
	struct ursa_op *op = (struct ursa_op *)(uintptr_t)(ud & URSA_PTR_MASK & ~(uint64_t)GEN_MASK);
	if (!op || P(op)->magic != OP_MAGIC || P(op)->ring != r ||
	    (ud & GEN_MASK) != (P(op)->gen & GEN_MASK))
		return -EINVAL;
	unsigned st = op_state(op);
	if (st != S_ARMED && st != S_STOPPING && st != S_RELOCKING)
		return -EINVAL;
	if (op_cqe(r, op, cqe->res) == 1)
		*done = op;
	return 1;
}
