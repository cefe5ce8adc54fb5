/* SPDX-License-Identifier: MIT */
/*
 * lib/latch.c — the 8-byte countdown latch. Spin model: tests/models/latch.pml.
 *
 *   count_down(n): CAS __count -> __count - n (seq_cst); if that made it 0,
 *                  load __waiters (seq_cst) and, if any, wake all on
 *                  __count. A count_down whose CAS will open the latch
 *                  takes a pin in __waiters before it and drops it last.
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
 *
 * Pins. The count_down that opens the latch looks at __waiters after its
 * CAS, when a waiter may already have seen the count 0, returned,
 * destroyed the latch and freed it (the usual end of a latch: the waiter
 * frees it once the workers are done). So it takes a pin (bits 29-31 of
 * __waiters) before that CAS, knowing from the value the CAS expects that
 * it opens the latch, and drops it as its last access; ursa_latch_destroy
 * waits while the pin is held (as the mutex's: lib/mutex.c, "pins"). Only
 * the opening count_down pins, and only one CAS opens a latch: one pin bit,
 * and two more atomics once in a latch's life.
 */
#include "lib/internal.h"

/* __count: bit 31 SHARED (constant after init), bits 0-30 the count, the
 * futex word. __waiters: bits 0-30 the registered waiters (threads and
 * ring ops), from their first WAIT step until they return or abandon;
 * bit 31 the opener's pin ("Pins"). */
#define L_SHARED 0x80000000u
#define L_COUNT 0x7fffffffu
#define L_WAITERS 0x7fffffffu
#define L_PIN	  0x80000000u

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
	uint32_t v = ld_relaxed(&l->__count), pin = 0;
	bool pinned = false; /* tried: at most one wait for the pin */
	int r = 0;
	for (;;) {
		if (n > (v & L_COUNT)) {
			r = -EINVAL;
			break;
		}
		/* This CAS would open the latch: pin it first ("Pins"). */
		if ((v & L_COUNT) == n && !pinned) {
			pin = ursa__pin(&l->__waiters, L_PIN, L_PIN);
			pinned = true;
		}
		if (cas_seqcst(&l->__count, &v, v - n)) {
			if (((v - n) & L_COUNT) == 0 &&
			    (__atomic_load_n(&l->__waiters, __ATOMIC_SEQ_CST) & L_WAITERS))
				ursa_k_futex_wake(&l->__count, INT_MAX, v & L_SHARED);
			break;
		}
	}
	ursa__unpin(&l->__waiters, pin);
	return r;
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
	/* The opener's pin: it has not finished with the latch ("Pins"). */
	return ursa__destroy_wait(&l->__waiters, L_WAITERS, L_PIN);
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
