/* SPDX-License-Identifier: MIT */
/*
 * lib/latch.c — the 8-byte countdown latch. Spin model: tests/models/latch.pml.
 *
 *   count_down(n): CAS __count -> __count - n (seq_cst); if that made it 0,
 *                  load __waiters (seq_cst) and, if > 0, wake all on __count.
 *   step:          register once (__waiters + 1, seq_cst), then load __count
 *                  (seq_cst): 0 -> deregister, DONE; else WAIT on its value.
 *   abandon:       deregister.
 *
 * Invariant: a waiter sleeps only after it registered and then saw a count
 * above zero, so the count_down that opens the latch comes after that
 * registration in the seq_cst order and sees __waiters > 0: it wakes all
 * (lib/step.h says why the wake then finds the sleeper or the sleep sees the
 * changed word). The count only falls, so an open latch stays open and every
 * waiter's next step is DONE.
 */
#include "lib/internal.h"

/* __count: bit 31 SHARED (constant after init), bits 0-30 the count, the
 * futex word. __waiters: registered waiters (threads and ring ops), from
 * their first WAIT step until they return or abandon. */
#define L_SHARED 0x80000000u
#define L_COUNT 0x7fffffffu

_Static_assert(sizeof(ursa_latch_t) == 8, "ursa_latch_t must be 8 bytes");

static inline bool l_bad(const ursa_latch_t *l)
{
	return !l || ((uintptr_t)l & 3);
}

int ursa_latch_init(ursa_latch_t *l, unsigned count, unsigned flags)
{
	if (l_bad(l) || (flags & ~URSA_SHARED) || count > URSA_LATCH_COUNT_MAX)
		return -EINVAL;
	__atomic_store_n(&l->__waiters, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->__count, count | ((flags & URSA_SHARED) ? L_SHARED : 0),
			 __ATOMIC_RELEASE);
	return 0;
}

int ursa_latch_count_down(ursa_latch_t *l, unsigned n)
{
	if (l_bad(l))
		return -EINVAL;
	if (n == 0)
		return 0;
	uint32_t v = ld_relaxed(&l->__count);
	do {
		if (n > (v & L_COUNT))
			return -EINVAL;
	} while (!cas_seqcst(&l->__count, &v, v - n));
	if (((v - n) & L_COUNT) == 0 && __atomic_load_n(&l->__waiters, __ATOMIC_SEQ_CST))
		ursa_k_futex_wake(&l->__count, INT_MAX, v & L_SHARED);
	return 0;
}

int ursa_latch_trywait(ursa_latch_t *l)
{
	if (l_bad(l))
		return -EINVAL;
	return (ld_acquire(&l->__count) & L_COUNT) ? -EBUSY : 0;
}

int ursa_latch_destroy(ursa_latch_t *l)
{
	if (l_bad(l))
		return -EINVAL;
	return ld_acquire(&l->__waiters) ? -EBUSY : 0;
}

static void latch_deregister(ursa_latch_t *l, struct ursa_waiter *w)
{
	if (w->registered) {
		w->registered = 0;
		__atomic_fetch_sub(&l->__waiters, 1, __ATOMIC_RELEASE);
	}
}

static int latch_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	ursa_latch_t *l = obj;
	if (!w->registered) {
		__atomic_fetch_add(&l->__waiters, 1, __ATOMIC_SEQ_CST);
		w->registered = 1;
	}
	uint32_t v = __atomic_load_n(&l->__count, __ATOMIC_SEQ_CST);
	if ((v & L_COUNT) == 0) {
		latch_deregister(l, w);
		return URSA_STEP_DONE;
	}
	out->addr = &l->__count;
	out->val = v;
	out->shared = v & L_SHARED;
	return URSA_STEP_WAIT;
}

static int latch_abandon(void *obj, struct ursa_waiter *w)
{
	latch_deregister(obj, w);
	return 0;
}

/* The latch's step table (lib/step.h). */
static bool latch_is_shared(const void *obj)
{
	return ld_relaxed(&((const ursa_latch_t *)obj)->__count) & L_SHARED;
}

static const struct ursa_step_ops latch_ops = {
	.name = "latch",
	.step = latch_step,
	.abandon = latch_abandon,
	.shared = latch_is_shared,
};

int ursa_latch_wait(ursa_latch_t *l)
{
	return ursa_latch_timedwait(l, CLOCK_MONOTONIC, NULL);
}

int ursa_latch_timedwait(ursa_latch_t *l, clockid_t clk, const struct timespec *abs)
{
	if (l_bad(l))
		return -EINVAL;
	int r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	if (ursa_latch_trywait(l) == 0)
		return 0;
	struct ursa_waiter w = {0};
	return ursa__block(l, &latch_ops, &w, clk, abs);
}

int ursa_latch_wait_async(struct io_uring *r, ursa_latch_t *l, struct ursa_op *op)
{
	return ursa__op_start(r, op, &latch_ops, l, NULL, 0);
}
