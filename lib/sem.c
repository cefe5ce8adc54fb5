/* SPDX-License-Identifier: MIT */
/*
 * lib/sem.c — the 8-byte counting semaphore. Spin model: tests/models/sem.pml.
 *
 * Two words:
 *
 *   __value    the count, 0..URSA_SEM_VALUE_MAX; also the futex word.
 *              Waiters sleep while it is 0.
 *   __waiters  bit 31 SHARED (constant after init); bits 27-30 the spin
 *              hint (lib/internal.h: how long a waiter spins before it
 *              registers); bits 0-26 the number of registered waiters:
 *              blocked threads, ring waiters (lib/async.c) and wait-any
 *              callers (lib/wait_any.c) that may be asleep on __value or
 *              about to be.
 *
 * Transitions:
 *
 *   trywait / take:  value > 0: CAS value -> value - 1. No syscall.
 *   post:            CAS value -> value + 1 (seq_cst; -EOVERFLOW at the
 *                    maximum, unchanged), then load waiters (seq_cst): if
 *                    the count is non-zero, futex wake 1.
 *   step (waiter):   take if it can; else register (waiters++, seq_cst),
 *                    load value (seq_cst) and take if it now can; else WAIT
 *                    on (&value, 0). A step that takes deregisters.
 *   abandon:         deregister (waiters--); then, if value > 0 and other
 *                    waiters remain, wake 1 (see "pass-on" below).
 *
 * Why no wakeup is lost (Dekker): the waiter does W1 = "waiters++" then
 * R1 = "load value"; the poster does W2 = "value++" then R2 = "load
 * waiters", all four seq_cst, so they sit in one total order. If R2 misses
 * W1 (R2 before W1), then W2 < R2 < W1 < R1 and R1 sees the post; if R1
 * misses W2, then W1 < R1 < W2 < R2 and the poster sees the waiter and
 * wakes. Between R1 and the sleep, the kernel compares __value with 0
 * under the futex bucket lock: a post that lands in between makes the
 * sleep return -EAGAIN, one that comes after finds the waiter queued.
 * So a waiter only ever sleeps on a count of 0 that every later post
 * knows to wake, and each post wakes one sleeper; a woken sleeper always
 * steps again, and either takes a unit or finds that someone else (a
 * trywait, a spinning waiter) took it — the unit was consumed, not lost.
 *
 * Pass-on: a sleeper may be woken and then not step to take — a timed-out
 * wait (ursa__block steps once more, but a post may land after that
 * step), a cancelled ring wait whose CQE still said "woken", a wait-any
 * that was woken here but took another object, or an old kernel's WAITV
 * that let one wait-any consume wakes on several entries. The post's wake
 * was then spent on a waiter that leaves with the unit still in __value,
 * and the other sleepers would sleep on although value > 0. So abandon
 * looks, after deregistering: value > 0 with waiters left means one of
 * them may be stranded; wake one. At worst the wake is spurious (the woken
 * waiter steps, finds 0 or takes, and that is all).
 *
 * Overflow: posts stop at URSA_SEM_VALUE_MAX (2^31 - 1), so value never
 * wraps; the waiter count has 27 bits (134 million) and every waiter is a
 * thread or an in-flight operation, far fewer.
 */
#include "lib/internal.h"
#include "lib/trace.h"

#define S_SHARED 0x80000000u
#define S_EST 0x78000000u /* bits 27-30: the spin hint (lib/internal.h) */
#define S_EST_SHIFT 27
#define S_COUNT 0x07ffffffu

_Static_assert(sizeof(ursa_sem_t) == 8, "ursa_sem_t must be 8 bytes");
_Static_assert(_Alignof(ursa_sem_t) == 4, "ursa_sem_t must be 4-byte aligned");

static inline bool s_shared(const ursa_sem_t *s)
{
	return ld_relaxed(&s->__waiters) & S_SHARED;
}

int ursa_sem_init(ursa_sem_t *s, unsigned value, unsigned flags)
{
	if (!s || ((uintptr_t)s & (_Alignof(ursa_sem_t) - 1)) || (flags & ~URSA_SHARED) ||
	    value > URSA_SEM_VALUE_MAX)
		return -EINVAL;
	__atomic_store_n(&s->__waiters, (flags & URSA_SHARED) ? S_SHARED : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->__value, value, __ATOMIC_RELEASE);
	return 0;
}

int ursa_sem_destroy(ursa_sem_t *s)
{
	if (!s)
		return -EINVAL;
	return (ld_acquire(&s->__waiters) & S_COUNT) ? -EBUSY : 0;
}

int ursa_sem_value(ursa_sem_t *s)
{
	if (!s)
		return -EINVAL;
	return (int)ld_relaxed(&s->__value);
}

int ursa_sem_post(ursa_sem_t *s)
{
	if (!s)
		return -EINVAL;
	uint32_t v = ld_relaxed(&s->__value);
	do {
		if (v >= URSA_SEM_VALUE_MAX)
			return -EOVERFLOW;
	} while (!cas_seqcst(&s->__value, &v, v + 1));
	/* seq_cst after the seq_cst CAS: the Dekker pair with the waiter's
	 * registration (see the top of this file). */
	uint32_t w = __atomic_load_n(&s->__waiters, __ATOMIC_SEQ_CST);
	if (w & S_COUNT)
		ursa_k_futex_wake(&s->__value, 1, w & S_SHARED);
	return 0;
}

static void sem_deregister(ursa_sem_t *s, struct ursa_waiter *w)
{
	if (w->registered) {
		w->registered = 0;
		__atomic_fetch_sub(&s->__waiters, 1, __ATOMIC_RELAXED);
	}
}

static int sem_take(void *obj, struct ursa_waiter *w)
{
	ursa_sem_t *s = obj;
	uint32_t v = ld_relaxed(&s->__value);
	while (v > 0) {
		if (cas_acq(&s->__value, &v, v - 1)) {
			sem_deregister(s, w);
			return 0;
		}
	}
	return -EBUSY;
}

static int sem_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	ursa_sem_t *s = obj;
	for (;;) {
		if (sem_take(s, w) == 0)
			return URSA_STEP_DONE;
		if (w->registered)
			break;
		/* Register, then look at the count once more (seq_cst): the
		 * waiter's half of the Dekker pair. */
		w->registered = 1;
		__atomic_fetch_add(&s->__waiters, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&s->__value, __ATOMIC_SEQ_CST) == 0)
			break;
	}
	out->addr = &s->__value;
	out->val = 0;
	out->shared = s_shared(s);
	return URSA_STEP_WAIT;
}

static int sem_abandon(void *obj, struct ursa_waiter *w)
{
	ursa_sem_t *s = obj;
	if (!w->registered)
		return 0;
	/* seq_cst: ordered before the loads below, so that a post we do not
	 * see in __value sees us gone (and wakes someone else itself). */
	w->registered = 0;
	uint32_t left = __atomic_sub_fetch(&s->__waiters, 1, __ATOMIC_SEQ_CST);
	/* Pass on a wake this waiter may have consumed (top of the file). */
	if ((left & S_COUNT) && __atomic_load_n(&s->__value, __ATOMIC_SEQ_CST) > 0)
		ursa_k_futex_wake(&s->__value, 1, left & S_SHARED);
	return 0;
}

/* Store a new spin hint in __waiters (its other bits left as they are). */
static void sem_set_est(ursa_sem_t *s, uint32_t w, unsigned est)
{
	uint32_t e = ursa__spin_est_stored(est) << S_EST_SHIFT;
	while ((w & S_EST) != e && !cas_relaxed(&s->__waiters, &w, (w & ~S_EST) | e))
		;
}

/* A post may follow shortly (a producer just behind, a lock-like
 * semaphore): spin while nobody sleeps (kernel/arch.h), as long as
 * spinning paid off lately (the hint in __waiters, lib/internal.h). A spin
 * that saw units come and go to others was no wait for a distant post (a
 * lock-like semaphore under contention): it counts as paying off. */
int ursa__sem_spin(ursa_sem_t *s, bool timed)
{
	struct ursa_waiter none = {0};
	uint32_t w = ld_relaxed(&s->__waiters);
	unsigned est = ursa__spin_est((w & S_EST) >> S_EST_SHIFT);
	int budget = ursa__spin_budget(est);
	bool busy = false; /* a unit was there, and another waiter took it */
	for (int i = 0;; i++) {
		if (ld_relaxed(&s->__value) > 0) {
			if (sem_take(s, &none) == 0) {
				if (i)
					sem_set_est(s, w, ursa__spin_learn(est, i, true));
				return 0;
			}
			busy = true;
		}
		w = ld_relaxed(&s->__waiters);
		if (w & S_COUNT)
			return -EBUSY; /* others sleep: queue behind them */
		if (i >= budget || !ursa_k_spin(i, timed)) {
			if (i)
				sem_set_est(s, w, ursa__spin_learn(est, i, busy));
			return -EBUSY;
		}
	}
}

static int sem_wait_slow(ursa_sem_t *s, clockid_t clk, const struct timespec *abs)
{
	if (ursa__sem_spin(s, abs != NULL) == 0)
		return 0;
	struct ursa_waiter w = {0};
	URSA_TRACE(sem_wait_begin, s);
	int r = ursa__block(s, &ursa__sem_ops, &w, clk, abs);
	URSA_TRACE(sem_wait_end, s, r);
	return r;
}

int ursa_sem_trywait(ursa_sem_t *s)
{
	if (!s)
		return -EINVAL;
	struct ursa_waiter none = {0};
	return sem_take(s, &none);
}

int ursa_sem_wait(ursa_sem_t *s)
{
	if (!s)
		return -EINVAL;
	if (ursa_sem_trywait(s) == 0)
		return 0;
	return sem_wait_slow(s, CLOCK_MONOTONIC, NULL);
}

int ursa_sem_timedwait(ursa_sem_t *s, clockid_t clk, const struct timespec *abs)
{
	if (!s)
		return -EINVAL;
	int r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	if (ursa_sem_trywait(s) == 0)
		return 0;
	if (abs && ursa__deadline_passed(clk, abs))
		return -ETIMEDOUT;
	return sem_wait_slow(s, clk, abs);
}

/* The semaphore's step table (lib/step.h); its abandon passes wakes on, so
 * wait-any needs no release of its own. */
const struct ursa_step_ops ursa__sem_ops = {
	.name = "sem",
	.step = sem_step,
	.abandon = sem_abandon,
	.take = sem_take,
};

int ursa_sem_wait_async(struct io_uring *r, ursa_sem_t *s, struct ursa_op *op)
{
	return ursa__op_start(r, op, &ursa__sem_ops, s, NULL, 0);
}
