/* SPDX-License-Identifier: MIT */
/*
 * lib/wait_any.c — wait for the first of up to 128 mutexes, semaphores and
 * events, and take exactly that one. A step table of its own (lib/step.h):
 * the blocking call runs it through ursa__block (futex_waitv), a ring op
 * through lib/async.c (IORING_OP_FUTEX_WAITV).
 *
 *   step:    try: take the first object, in index order, that each object's
 *            own take says is free now. Done.
 *            Else run every object's own step, which announces us the way
 *            any waiter of that object announces itself and says which word
 *            and value to sleep on (a step may take its object). Done, or
 *            sleep on all n (word, value) pairs at once.
 *   leave:   having taken i, or giving up: every other object j is
 *            released — its abandon, then (once we have slept) its pass-on.
 *
 * No wakeup is lost for us: each waitv entry is the exact (word, value) the
 * object's own step would sleep on, after the same announcement.
 *
 * No wakeup is lost for others (pass-on): the objects wake ONE waiter per
 * release, and our entry for j is a queued waiter of j like any other, so
 * j's wake may be consumed by us although we take some other object — and
 * before Linux 7.1 a woken WAITV waiter could be counted as woken by wakes
 * on its other entries, and waitv reports only one index. So on leaving,
 * each object j looks at its own word, which says whether it is available,
 * and wakes one sleeper if its wake may have been ours (lib/mutex.c,
 * lib/sem.c, lib/event.c: release/abandon). Every pass-on wake is at worst
 * spurious. Exactly one object is taken: try and step stop at the first
 * take and release every other object without taking it. Spin models: each
 * kind's pass-on in its own (tests/models/mutex.pml -DANY, sem.pml,
 * event.pml -DAUTO).
 */
#include "lib/internal.h"

#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>

/* The kinds a wait-any takes, one line each: the object's step table. */
static const struct ursa_step_ops *const kinds[] = {
	[URSA_WAIT_MUTEX] = &ursa__mutex_ops,
	[URSA_WAIT_SEM] = &ursa__sem_ops,
	[URSA_WAIT_EVENT] = &ursa__event_ops,
};

/* One wait-any: the objects, a waiter state per object (ws[i] is object
 * i's waiter exactly as its own step uses it), and the futex_waitv vector
 * the kernel reads while a wait is in flight. On the stack for the
 * blocking call; allocated (n * 40 bytes) for a ring op that must wait. */
struct any_state {
	const ursa_waitable_t *v;
	unsigned n;
	struct futex_waitv *fv;
	struct ursa_waiter *ws;
};

static inline const struct ursa_step_ops *kind_ops(const ursa_waitable_t *it)
{
	return kinds[it->kind];
}

static int any_check(const ursa_waitable_t *v, unsigned n)
{
	if (!v || n == 0 || n > URSA_WAIT_ANY_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (!v[i].obj || v[i].kind >= sizeof(kinds) / sizeof(kinds[0]) || !kinds[v[i].kind])
			return -EINVAL;
	}
	return 0;
}

static void release(const ursa_waitable_t *it, struct ursa_waiter *w)
{
	const struct ursa_step_ops *ops = kind_ops(it);
	if (ops->release)
		ops->release(it->obj, w);
	else
		ops->abandon(it->obj, w);
}

/* v[taken] is ours: release all the others. */
static int finish(struct any_state *a, unsigned taken)
{
	for (unsigned j = 0; j < a->n; j++) {
		if (j != taken)
			release(&a->v[j], &a->ws[j]);
	}
	return (int)taken;
}

/* Take the first object, in index order, that can be taken now. Touches no
 * object it does not take (so a first try needs no announcement). */
static int any_try(struct any_state *a)
{
	for (unsigned i = 0; i < a->n; i++) {
		if (kind_ops(&a->v[i])->take(a->v[i].obj, &a->ws[i]) == 0)
			return finish(a, i);
	}
	return -EAGAIN;
}

/* The step: try; else run every object's step, which announces us and
 * says which word and value to sleep on (a step may take its object after
 * all); then sleep on all n. After any return of that sleep every object
 * counts as slept-on: we may have consumed a wake meant for any of them. */
static int any_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	struct any_state *a = obj;
	if (w->slept) {
		for (unsigned i = 0; i < a->n; i++)
			a->ws[i].slept = 1;
	}
	int r = any_try(a);
	uint32_t bound_us = 0;
	for (unsigned i = 0; r < 0 && i < a->n; i++) {
		struct ursa_wait wt = {0};
		if (kind_ops(&a->v[i])->step(a->v[i].obj, &a->ws[i], &wt) == URSA_STEP_DONE) {
			r = finish(a, i);
			break;
		}
		a->fv[i].val = wt.val;
		a->fv[i].uaddr = (uint64_t)(uintptr_t)wt.addr;
		a->fv[i].flags = ursa_k_futex2_flags(wt.shared);
		a->fv[i].__reserved = 0;
		if (wt.bound_us && (!bound_us || wt.bound_us < bound_us))
			bound_us = wt.bound_us; /* the shortest bound */
	}
	if (r >= 0) {
		out->res = r;
		return URSA_STEP_DONE;
	}
	out->kind = URSA_ARM_WAITV;
	out->addr = a->fv;
	out->val = a->n;
	/* A mutex newcomer asleep on HANDED sleeps a bounded time (lib/mutex.c);
	 * a ring WAITV ignores the bound, as a ring mutex wait does. */
	out->bound_us = bound_us;
	return URSA_STEP_WAIT;
}

static int any_abandon(void *obj, struct ursa_waiter *w)
{
	struct any_state *a = obj;
	for (unsigned j = 0; j < a->n; j++)
		release(&a->v[j], &a->ws[j]);
	return 0;
}

static void any_fini(void *obj)
{
	free(obj);
}

/* The wait-any step table (lib/step.h): one waiter of each object at once.
 * The ring's op owns its allocated state and frees it when it finishes. */
/* The vector's words are all process-shared. */
static bool any_shared(const void *obj)
{
	const struct any_state *a = obj;
	for (unsigned i = 0; i < a->n; i++) {
		const struct ursa_step_ops *ops = kind_ops(&a->v[i]);
		if (!ops->shared || !ops->shared(a->v[i].obj))
			return false;
	}
	return true;
}

const struct ursa_step_ops ursa__wait_any_ops = {
	.name = "wait-any",
	.step = any_step,
	.abandon = any_abandon,
	.fini = any_fini,
	.shared = any_shared,
};

int ursa_wait_any(const ursa_waitable_t *v, unsigned n, clockid_t clk, const struct timespec *abs)
{
	int r = any_check(v, n);
	if (r)
		return r;
	r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	/* Same answer whether or not an object happens to be free. */
	if (!ursa_k_have_futex_waitv())
		return -ENOSYS;
	struct ursa_waiter ws[URSA_WAIT_ANY_MAX];
	struct futex_waitv fv[URSA_WAIT_ANY_MAX];
	memset(ws, 0, n * sizeof(ws[0]));
	struct any_state a = {v, n, fv, ws};
	/* A deadline already past: one try that announces nothing. */
	if (abs && ursa__deadline_passed(clk, abs))
		return (r = any_try(&a)) >= 0 ? r : -ETIMEDOUT;
	struct ursa_waiter w = {0};
	return ursa__block(&a, &ursa__wait_any_ops, &w, clk, abs);
}

int ursa_wait_any_async(struct io_uring *r, const ursa_waitable_t *v, unsigned n,
			struct ursa_op *op)
{
	int rc = any_check(v, n);
	if (rc)
		return rc;
	struct ursa_features f;
	if (ursa_probe(&f) || !f.uring_futexv)
		return -EOPNOTSUPP;
	/* Validate ring and op (and SQ room) before looking at any object. */
	struct ursa_waiter ws0[URSA_WAIT_ANY_MAX];
	memset(ws0, 0, n * sizeof(ws0[0]));
	struct any_state a0 = {v, n, NULL, ws0};
	rc = ursa__op_prepare(r, op, &ursa__wait_any_ops, &a0, NULL, 0, NULL);
	if (rc)
		return rc;
	/* First try without allocating anything (it announces nothing). */
	if ((rc = any_try(&a0)) >= 0)
		return ursa__op_finish_now(op, rc);
	int saved_errno = errno; /* calloc sets it when it fails */
	struct any_state *a = calloc(1, sizeof(*a) + n * (sizeof(struct futex_waitv) +
							 sizeof(struct ursa_waiter)));
	if (!a) {
		errno = saved_errno;
		return -ENOMEM;
	}
	a->v = v;
	a->n = n;
	a->fv = (struct futex_waitv *)(a + 1);
	a->ws = (struct ursa_waiter *)(a->fv + n);
	rc = ursa__op_prepare(r, op, &ursa__wait_any_ops, a, NULL, 0, NULL);
	if (rc == 0)
		rc = ursa__op_launch(r, op);
	if (rc < 0)
		free(a);
	return rc;
}
