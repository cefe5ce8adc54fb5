/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/async_cqe.c — every branch of ursa_handle_cqe, driven by CQEs
 * this test writes itself.
 *
 * The ring is set up IORING_SETUP_R_DISABLED: the kernel accepts no
 * submission (io_uring_enter says -EBADFD), so what ursa queues stays in the
 * SQ ring, where the test reads it (opcode, user_data, futex word and
 * value). The test then plays the kernel: it hands ursa_handle_cqe a CQE
 * with that user_data and the result it wants to test — 0 (woken), -EAGAIN,
 * -ECANCELED (timeout or cancel), -ENOMEM (the kernel's futex wait
 * allocation failed) — at each stage of each primitive, and checks the
 * object's state afterwards: nothing held that was not reported, nothing
 * registered that was not undone (destroy says 0), the op finished exactly
 * once. A refused submission is the disabled ring itself; a full SQ is made
 * by filling it with NOPs.
 */
#include "tests/helpers.h"
#include "kernel/uapi.h" /* IORING_OP_FUTEX_* on older headers */

#include <criterion/criterion.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <ursa.h>

#define TAG_OP 0xA5u

static void dis_ring(struct io_uring *r, unsigned entries)
{
	t_require_uring_futex(false);
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_R_DISABLED;
	int rc = io_uring_queue_init_params(entries, r, &p);
	if (rc == -EINVAL)
		cr_skip_test("IORING_SETUP_R_DISABLED not supported");
	cr_assert_eq(rc, 0, "io_uring_queue_init_params: %d", rc);
}

/* SQEs queued (by ursa or the test) and not consumed: the disabled ring's
 * kernel never moves its head. */
static unsigned queued(struct io_uring *r)
{
	return r->sq.sqe_tail - *r->sq.khead;
}

/* The n-th newest queued SQE (0: the newest). */
static struct io_uring_sqe *sqe_back(struct io_uring *r, unsigned n)
{
	cr_assert_gt(queued(r), n, "expected a queued SQE");
	unsigned idx = (r->sq.sqe_tail - 1 - n) & r->sq.ring_mask;
	return &r->sq.sqes[idx];
}

/* The newest queued SQE that carries an op (skips linked timeouts). */
static struct io_uring_sqe *op_sqe(struct io_uring *r)
{
	for (unsigned n = 0; n < queued(r); n++) {
		struct io_uring_sqe *s = sqe_back(r, n);
		if ((unsigned)(s->user_data >> 56) == TAG_OP)
			return s;
	}
	cr_assert_fail("no op SQE queued");
	return NULL;
}

/* Forget every queued SQE (the disabled ring never consumed them). */
static void drop_queued(struct io_uring *r)
{
	unsigned h = *r->sq.khead;
	r->sq.sqe_head = r->sq.sqe_tail = h;
	io_uring_smp_store_release(r->sq.ktail, h); /* a refused submit published them */
}

/* Play the kernel: the op SQE's CQE with result res. */
static int feed(struct io_uring *r, const struct io_uring_sqe *s, int res, struct ursa_op **done)
{
	struct io_uring_cqe cqe;
	memset(&cqe, 0, sizeof(cqe));
	cqe.user_data = s->user_data;
	cqe.res = res;
	return ursa_handle_cqe(r, &cqe, done);
}

static int feed_app(struct io_uring *r, struct ursa_op **done)
{
	struct io_uring_cqe cqe;
	memset(&cqe, 0, sizeof(cqe));
	cqe.user_data = 0x1234;
	return ursa_handle_cqe(r, &cqe, done);
}

/* The op SQE, taken off the queue (the test plays the kernel that
 * consumed it). */
static struct io_uring_sqe take_op(struct io_uring *r)
{
	struct io_uring_sqe s = *op_sqe(r);
	drop_queued(r);
	return s;
}

/* Feed the op SQE's CQE with res: the op goes on waiting. */
static void feed_waits(struct io_uring *r, const struct io_uring_sqe *s, int res, const char *why)
{
	struct ursa_op *done = (void *)1;
	cr_assert_eq(feed(r, s, res, &done), 1);
	cr_assert_null(done, "%s (res %d)", why, res);
}

/* Feed the op SQE's CQE with res: op finishes with want. */
static void feed_finishes(struct io_uring *r, const struct io_uring_sqe *s, int res,
			  struct ursa_op *op, int want)
{
	struct ursa_op *done = NULL;
	cr_assert_eq(feed(r, s, res, &done), 1);
	cr_assert_eq(done, op, "the %d CQE must finish the op", res);
	cr_assert_eq(op->res, want, "res %d for a %d CQE, want %d", op->res, res, want);
}

/* A disabled ring of 16, a mutex this thread holds and a fresh op. */
static void held_mutex(struct io_uring *r, ursa_mutex_t *m, struct ursa_op *op)
{
	dis_ring(r, 16);
	ursa_mutex_init(m, 0);
	cr_assert_eq(ursa_mutex_lock(m), 0);
	memset(op, 0, sizeof(*op));
}

/* held_mutex, then the op started on it with a deadline ms from now:
 * the starter's return value. */
static int held_mutex_deadline(struct io_uring *r, ursa_mutex_t *m, struct ursa_op *op, long ms)
{
	held_mutex(r, m, op);
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, ms);
	cr_assert_eq(ursa_op_set_deadline(op, CLOCK_MONOTONIC, &dl), 0);
	return ursa_mutex_lock_async(r, m, op);
}

/* ---- the condvar's mutex stage ----------------------------------------- */

struct cw {
	struct io_uring r;
	ursa_cond_t c;
	ursa_mutex_t m;
	struct ursa_op op;
};

/* A cond op started holding m: its condvar wait is queued, m is free. */
static void start_cond_wait(struct cw *x, unsigned entries)
{
	dis_ring(&x->r, entries);
	memset(&x->op, 0, sizeof(x->op));
	ursa_cond_init(&x->c, 0);
	ursa_mutex_init(&x->m, 0);
	cr_assert_eq(ursa_mutex_lock(&x->m), 0);
	cr_assert_eq(ursa_cond_wait_async(&x->r, &x->c, &x->m, &x->op), 0);
}

/* A cond op whose wait is over (signalled) and whose mutex is held by
 * someone else: its mutex-stage FUTEX_WAIT is queued. */
static void cond_to_mutex_stage(struct cw *x)
{
	start_cond_wait(x, 16);
	struct io_uring_sqe *s = op_sqe(&x->r);
	cr_assert_eq(s->opcode, IORING_OP_FUTEX_WAIT);
	cr_assert_eq((void *)(uintptr_t)s->addr, (void *)&x->c, "waits on the condvar first");
	cr_assert_eq(ursa_cond_signal(&x->c), 0);
	cr_assert_eq(ursa_mutex_lock(&x->m), 0, "another party takes the mutex");
	struct io_uring_sqe copy = take_op(&x->r);
	feed_waits(&x->r, &copy, 0, "the op must wait for its mutex");
	s = op_sqe(&x->r);
	cr_assert_eq((void *)(uintptr_t)s->addr, (void *)&x->m, "now waits on the mutex");
}

/* The op finished holding m (its result checked before); nothing is left
 * registered on either object. */
static void cond_done(struct cw *x)
{
	cr_assert_eq(ursa_mutex_unlock(&x->m), 0, "the op held m");
	cr_assert_eq(ursa_mutex_destroy(&x->m), 0, "no registration left behind");
	cr_assert_eq(ursa_cond_destroy(&x->c), 0, "registration undone");
	io_uring_queue_exit(&x->r);
}

/* Defect: an error CQE in the mutex stage finished the op without its
 * mutex, while another party held it. */
Test(async_cqe, cond_mutex_stage_error_cqe_keeps_waiting)
{
	static struct cw x;
	cond_to_mutex_stage(&x);
	for (int i = 0; i < 3; i++) {
		struct io_uring_sqe s = take_op(&x.r);
		feed_waits(&x.r, &s, -ENOMEM, "finished while another party holds the mutex");
	}
	/* The other party unlocks; the op's next CQE takes the mutex. */
	cr_assert_eq(ursa_mutex_unlock(&x.m), 0);
	struct io_uring_sqe s = take_op(&x.r);
	feed_finishes(&x.r, &s, 0, &x.op, 0);
	cr_assert_eq(ursa_mutex_trylock(&x.m), -EBUSY, "the op holds the mutex");
	cond_done(&x);
}

/* Defect: with the SQ full and io_uring_enter refusing, the mutex stage
 * took the mutex by blocking (here: forever, another party holds it) and
 * left its registration counted. Now the op parks, the loop is not
 * blocked, and the next ursa_handle_cqe on the ring re-arms it. */
Test(async_cqe, cond_mutex_stage_refused_submission_parks, .timeout = 20)
{
	static struct cw x;
	start_cond_wait(&x, 4);
	struct io_uring_sqe copy = *op_sqe(&x.r);
	cr_assert_eq(ursa_cond_signal(&x.c), 0);
	cr_assert_eq(ursa_mutex_lock(&x.m), 0, "another party takes the mutex");
	/* Fill the SQ: no room for the mutex stage's wait, and the disabled
	 * ring refuses the submit that would make room. */
	while (io_uring_get_sqe(&x.r))
		;
	cr_assert_eq(io_uring_sq_space_left(&x.r), 0);
	feed_waits(&x.r, &copy, 0, "must not block the loop");
	cr_assert_eq(ursa_mutex_destroy(&x.m), -EBUSY, "the op waits for m");
	/* Room again: the next CQE of the ring (any, the app's here) re-arms. */
	drop_queued(&x.r);
	struct ursa_op *done = (void *)1;
	cr_assert_eq(feed_app(&x.r, &done), 0, "the app's CQE stays the app's");
	cr_assert_null(done);
	struct io_uring_sqe *s = op_sqe(&x.r);
	cr_assert_eq((void *)(uintptr_t)s->addr, (void *)&x.m, "re-armed on the mutex");
	cr_assert_eq(ursa_mutex_unlock(&x.m), 0);
	copy = take_op(&x.r);
	feed_finishes(&x.r, &copy, -EAGAIN, &x.op, 0);
	cond_done(&x);
}

/* The condvar stage itself: an error CQE ends the wait with that error,
 * and the op still finishes holding m. */
Test(async_cqe, cond_wait_stage_error_cqe_relocks)
{
	static struct cw x;
	start_cond_wait(&x, 16);
	struct io_uring_sqe s = take_op(&x.r);
	/* m was free: the op re-took it at once. */
	feed_finishes(&x.r, &s, -ENOMEM, &x.op, -ENOMEM);
	cr_assert_eq(ursa_mutex_trylock(&x.m), -EBUSY, "finished holding m");
	cond_done(&x);
}

/* Cancel and timeout of the condvar stage go through the mutex stage,
 * which ignores both. */
Test(async_cqe, cond_cancel_then_mutex_stage_ignores_cancel)
{
	static struct cw x;
	start_cond_wait(&x, 16);
	struct io_uring_sqe copy = *op_sqe(&x.r);
	cr_assert_eq(ursa_op_cancel(&x.r, &x.op), 0);
	cr_assert_eq(sqe_back(&x.r, 0)->opcode, IORING_OP_ASYNC_CANCEL);
	cr_assert_eq(sqe_back(&x.r, 0)->addr, copy.user_data, "cancels the op's wait");
	cr_assert_eq(ursa_mutex_lock(&x.m), 0, "another party takes the mutex");
	drop_queued(&x.r);
	feed_waits(&x.r, &copy, -ECANCELED, "waits for its mutex");
	cr_assert_eq(ursa_op_cancel(&x.r, &x.op), 0, "a cancel now is ignored");
	cr_assert_eq(queued(&x.r), 1, "and queues nothing (only the mutex wait)");
	cr_assert_eq(ursa_mutex_unlock(&x.m), 0);
	copy = take_op(&x.r);
	feed_finishes(&x.r, &copy, 0, &x.op, -ECANCELED);
	cond_done(&x);
}

/* ---- plain ops: each CQE result at each state --------------------------- */

struct prim {
	const char *name;
	void (*init)(void *o);
	void (*hold)(void *o);    /* make a start wait */
	void (*release)(void *o); /* make the wait succeed */
	int (*start)(struct io_uring *r, void *o, struct ursa_op *op);
	void (*undo)(void *o);    /* after the op acquired: give it back */
	int (*destroy)(void *o);
};

static void mx_init(void *o) { ursa_mutex_init(o, 0); }
static void mx_hold(void *o) { cr_assert_eq(ursa_mutex_lock(o), 0); }
static void mx_release(void *o) { cr_assert_eq(ursa_mutex_unlock(o), 0); }
static int mx_start(struct io_uring *r, void *o, struct ursa_op *op) { return ursa_mutex_lock_async(r, o, op); }
static int mx_destroy(void *o) { return ursa_mutex_destroy(o); }
static void rw_init(void *o) { ursa_rwlock_init(o, 0); }
static void rw_hold(void *o) { cr_assert_eq(ursa_rwlock_wrlock(o), 0); }
static void rw_release(void *o) { cr_assert_eq(ursa_rwlock_wrunlock(o), 0); }
static int rd_start(struct io_uring *r, void *o, struct ursa_op *op) { return ursa_rwlock_rdlock_async(r, o, op); }
static void rd_undo(void *o) { cr_assert_eq(ursa_rwlock_rdunlock(o), 0); }
static int wr_start(struct io_uring *r, void *o, struct ursa_op *op) { return ursa_rwlock_wrlock_async(r, o, op); }
static int rw_destroy(void *o) { return ursa_rwlock_destroy(o); }
static void sem_init0(void *o) { ursa_sem_init(o, 0, 0); }
static void nop(void *o) { (void)o; }
static void sem_post1(void *o) { cr_assert_eq(ursa_sem_post(o), 0); }
static int sem_start(struct io_uring *r, void *o, struct ursa_op *op) { return ursa_sem_wait_async(r, o, op); }
static int sem_destroy(void *o) { return ursa_sem_destroy(o); }
static void ev_init(void *o) { ursa_event_init(o, 0); }
static void ev_set(void *o) { cr_assert_eq(ursa_event_set(o), 0); }
static int ev_start(struct io_uring *r, void *o, struct ursa_op *op) { return ursa_event_wait_async(r, o, op); }
static void ev_reset(void *o) { cr_assert_eq(ursa_event_reset(o), 0); }
static int ev_destroy(void *o) { return ursa_event_destroy(o); }
static void aev_init(void *o) { ursa_event_init(o, URSA_EVENT_AUTO_RESET); }

static const struct prim prims[] = {
	{"mutex", mx_init, mx_hold, mx_release, mx_start, mx_release, mx_destroy},
	{"rdlock", rw_init, rw_hold, rw_release, rd_start, rd_undo, rw_destroy},
	{"wrlock", rw_init, rw_hold, rw_release, wr_start, rw_release, rw_destroy},
	{"sem", sem_init0, nop, sem_post1, sem_start, nop, sem_destroy},
	{"event", ev_init, nop, ev_set, ev_start, ev_reset, ev_destroy},
	{"event-auto", aev_init, nop, ev_set, ev_start, nop, ev_destroy},
};

union obj {
	ursa_mutex_t m;
	ursa_rwlock_t l;
	ursa_sem_t s;
	ursa_event_t e;
};

/* A disabled ring of entries and p's object, held, with op started on it. */
static void prim_start(const struct prim *p, struct io_uring *r, unsigned entries, union obj *o,
		       struct ursa_op *op)
{
	dis_ring(r, entries);
	memset(o, 0, sizeof(*o));
	p->init(o);
	p->hold(o);
	memset(op, 0, sizeof(*op));
	cr_assert_eq(p->start(r, o, op), 0, "%s: start", p->name);
}

/* After the op gave up: release p's object and undo a manual event's set. */
static void prim_release(const struct prim *p, union obj *o)
{
	p->release(o);
	if (p->undo == ev_reset)
		ev_reset(o);
}

/* res: the CQE result fed to an armed op whose object is still held. A
 * kernel error ends it with that error; -EAGAIN, 0 and a -ECANCELED that
 * neither ursa_op_cancel nor the op's deadline explains (a stale linked
 * timeout of an earlier wait at the same address) re-arm. Afterwards
 * nothing is held or registered. */
static void one_result(const struct prim *p, int res)
{
	struct io_uring r;
	union obj o;
	struct ursa_op op;
	cr_log_info("%s, CQE result %d", p->name, res);
	prim_start(p, &r, 16, &o, &op);
	struct io_uring_sqe s = take_op(&r);
	if (res == 0 || res == -EAGAIN || res == -ECANCELED) {
		feed_waits(&r, &s, res, "re-armed");
		s = take_op(&r);
		p->release(&o);
		feed_finishes(&r, &s, 0, &op, 0);
		p->undo(&o);
	} else {
		feed_finishes(&r, &s, res, &op, res);
		prim_release(p, &o);
	}
	cr_assert_eq(p->destroy(&o), 0, "%s: left registered or held after %d", p->name, res);
	/* Exactly once: the same CQE again names no op in flight. */
	struct ursa_op *done = NULL;
	cr_assert_eq(feed(&r, &s, 0, &done), -EINVAL);
	cr_assert_null(done);
	io_uring_queue_exit(&r);
}

Test(async_cqe, every_result_every_primitive)
{
	const int results[] = {0, -EAGAIN, -ECANCELED, -ENOMEM, -EFAULT};
	for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
		for (size_t j = 0; j < sizeof(results) / sizeof(results[0]); j++)
			one_result(&prims[i], results[j]);
}

/* A re-arm with no SQ room and the kernel refusing the submit: a plain
 * op gives up with -EBUSY, nothing held or registered. */
Test(async_cqe, rearm_refused_gives_up_cleanly)
{
	for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++) {
		const struct prim *p = &prims[i];
		struct io_uring r;
		union obj o;
		struct ursa_op op;
		cr_log_info("%s", p->name);
		prim_start(p, &r, 4, &o, &op);
		struct io_uring_sqe copy = *op_sqe(&r);
		while (io_uring_get_sqe(&r))
			;
		feed_finishes(&r, &copy, -EAGAIN, &op, -EBUSY);
		prim_release(p, &o);
		cr_assert_eq(p->destroy(&o), 0, "%s: registration leaked", p->name);
		io_uring_queue_exit(&r);
	}
}

/* The linked timeout fires: -ECANCELED on the wait with the deadline past
 * is -ETIMEDOUT; nothing left behind. */
Test(async_cqe, linked_timeout_is_etimedout)
{
	struct io_uring r;
	ursa_mutex_t m;
	struct ursa_op op;
	cr_assert_eq(held_mutex_deadline(&r, &m, &op, 30), 0);
	cr_assert_eq(queued(&r), 2, "the wait and its linked timeout");
	cr_assert_eq(sqe_back(&r, 0)->opcode, IORING_OP_LINK_TIMEOUT);
	cr_assert(sqe_back(&r, 1)->flags & IOSQE_IO_LINK);
	struct io_uring_sqe copy = take_op(&r);
	t_sleep_ms(40);
	feed_finishes(&r, &copy, -ECANCELED, &op, -ETIMEDOUT);
	mx_release(&m);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
	io_uring_queue_exit(&r);
}

/* Defect: a finished op reused without a new deadline kept the old one
 * (and timed out at once). */
Test(async_cqe, reused_op_forgets_its_deadline)
{
	struct io_uring r;
	ursa_mutex_t m;
	struct ursa_op op;
	cr_assert_eq(held_mutex_deadline(&r, &m, &op, 0), 1);
	cr_assert_eq(op.res, -ETIMEDOUT);
	/* Reuse, no deadline: it must wait, with no linked timeout. */
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &op), 0, "reused op timed out at once");
	cr_assert_eq(queued(&r), 1, "no linked timeout on the reused op");
	struct io_uring_sqe copy = take_op(&r);
	mx_release(&m);
	feed_finishes(&r, &copy, 0, &op, 0);
	mx_release(&m);
	io_uring_queue_exit(&r);
}

/* ---- bad input --------------------------------------------------------- */

/* Defect: cancel on the wrong ring returned 0 and marked the op, so the
 * right ring's cancel then did nothing. */
Test(async_cqe, cancel_on_wrong_ring_is_einval)
{
	struct io_uring r, other;
	ursa_mutex_t m;
	struct ursa_op op;
	held_mutex(&r, &m, &op);
	dis_ring(&other, 16);
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &op), 0);
	struct io_uring_sqe copy = *op_sqe(&r);
	cr_assert_eq(ursa_op_cancel(&other, &op), -EINVAL);
	cr_assert_eq(queued(&other), 0);
	cr_assert_eq(ursa_op_cancel(&r, &op), 0);
	cr_assert_eq(sqe_back(&r, 0)->opcode, IORING_OP_ASYNC_CANCEL, "the right ring's cancel works");
	drop_queued(&r);
	struct ursa_op *done = NULL;
	cr_assert_eq(feed(&other, &copy, -ECANCELED, &done), -EINVAL, "a CQE from another ring");
	feed_finishes(&r, &copy, -ECANCELED, &op, -ECANCELED);
	mx_release(&m);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
	io_uring_queue_exit(&r);
	io_uring_queue_exit(&other);
}

/* Defect: a wait-queue wait on a slot never prepared, out of range, or an
 * uninitialised queue returned 1 with res -EINVAL instead of -EINVAL. */
Test(async_cqe, waitq_bad_slot_is_einval_from_the_starter)
{
	struct io_uring r;
	dis_ring(&r, 16);
	size_t sz = ursa_waitq_size(4);
	ursa_waitq_t *q = calloc(1, sz);
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(ursa_waitq_wait_async(&r, q, 0, &op), -EINVAL, "uninitialised queue");
	cr_assert_eq(ursa_waitq_init(q, 4, 0), 0);
	cr_assert_eq(ursa_waitq_wait_async(&r, q, 1, &op), -EINVAL, "slot not prepared");
	cr_assert_eq(ursa_waitq_wait_async(&r, q, 4, &op), -EINVAL, "slot out of range");
	cr_assert_eq(queued(&r), 0);
	cr_assert_eq(ursa_waitq_prepare(q, 1, 7), 0);
	cr_assert_eq(ursa_waitq_wait_async(&r, q, 1, &op), 0, "a prepared slot waits");
	cr_assert_eq(ursa_waitq_wake_slot(q, 1, NULL), 1);
	struct io_uring_sqe copy = take_op(&r);
	feed_finishes(&r, &copy, 0, &op, 0);
	free(q);
	io_uring_queue_exit(&r);
}

/* Defect: a CQE with ursa's op tag but no valid op behind it crashed. */
Test(async_cqe, stray_op_tagged_cqe_is_einval)
{
	struct io_uring r;
	dis_ring(&r, 16);
	static uint64_t junk[32];
	memset(junk, 0x5a, sizeof(junk));
	struct ursa_op never = URSA_OP_INIT;
	const uint64_t ptrs[] = {0, 3, (uint64_t)(uintptr_t)junk + 4, (uint64_t)(uintptr_t)junk,
				 (uint64_t)(uintptr_t)&never};
	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
		struct io_uring_cqe cqe;
		memset(&cqe, 0, sizeof(cqe));
		cqe.user_data = ((uint64_t)TAG_OP << 56) | ptrs[i];
		struct ursa_op *done = (void *)1;
		cr_assert_eq(ursa_handle_cqe(&r, &cqe, &done), -EINVAL, "pointer %zu", i);
		cr_assert_null(done);
	}
	io_uring_queue_exit(&r);
}

/* Defect: an op with a deadline on a one-entry SQ returned -EBUSY for
 * ever (its wait and linked timeout go in together), so a caller that
 * submits and calls again, as the contract says, never got out. */
Test(async_cqe, deadline_on_one_entry_sq_is_einval)
{
	struct io_uring r;
	ursa_mutex_t m;
	struct ursa_op op;
	held_mutex(&r, &m, &op);
	struct io_uring one;
	dis_ring(&one, 1);
	cr_assert_eq(one.sq.ring_entries, 1);
	struct timespec dl;
	cr_assert_eq(clock_gettime(CLOCK_MONOTONIC, &dl), 0);
	dl.tv_sec += 30;
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &dl), 0);
	cr_assert_eq(ursa_mutex_lock_async(&one, &m, &op), -EINVAL);
	cr_assert_eq(queued(&one), 0, "nothing queued");
	/* Without a deadline one entry is enough. */
	memset(&op, 0, sizeof(op));
	cr_assert_eq(ursa_mutex_lock_async(&one, &m, &op), 0);
	struct ursa_op *done = NULL;
	struct io_uring_sqe copy = take_op(&one);
	mx_release(&m);
	cr_assert_eq(feed(&one, &copy, 0, &done), 1);
	cr_assert_eq(done, &op, "woken with the mutex free: taken");
	cr_assert_eq(op.res, 0);
	mx_release(&m);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
	io_uring_queue_exit(&r);
	io_uring_queue_exit(&one);
}
