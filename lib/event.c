/* SPDX-License-Identifier: MIT */
/*
 * lib/event.c — the 4-byte event, manual- or auto-reset.
 *
 * One word, also the futex word (the bits are beside the #defines below).
 *
 * Manual-reset transitions:
 *   set:     if not SET: CAS to SET | GEN+1, WAITERS cleared, COUNT kept;
 *            WAITERS was set or COUNT > 0: wake all (INT_MAX).
 *   reset:   CAS SET off; GEN stays.
 *   step:    the first snapshots GEN (w->aux, MW_SNAP). DONE if SET or GEN
 *            moved (a set came since the wait began, even if a reset
 *            followed). Else CAS WAITERS on, and COUNT+1 the first time
 *            (MW_COUNTED; COUNT full: uncounted), and WAIT on that value.
 *            DONE undoes the count.
 *   abandon: COUNT-1 if counted.
 *   destroy: -EBUSY while COUNT > 0 (a ring op counts from its start until
 *            ursa_handle_cqe finishes it); uncounted waiters: clear
 *            WAITERS and wake all, -EBUSY if the wake found a sleeper.
 * Invariant: WAITERS (not COUNT) carries the wakeups: a waiter's "WAITERS
 * on" and set's "SET on" are CASes on one word, so either set sees WAITERS
 * and wakes all, or the waiter's CAS fails and it sees SET or a new GEN.
 * GEN makes the compare ABA-proof short of a multiple of 2^18 sets (each
 * with a reset after it) between a waiter's snapshot and its next step
 * after a wake: for a blocked thread its wake-up latency, but for a ring
 * op the time until its event loop handles the CQE, which may be long; a
 * waiter that finds GEN back where it was waits on (ursa/event.h, Limits).
 * A stale WAITERS costs one useless wake-all.
 *
 * Auto-reset transitions:
 *   set:     if not SET: CAS SET on; COUNT > 0: wake 1 (sets do not
 *            accumulate).
 *   step:    SET: one CAS clears it and, if registered, COUNT-1 (each set
 *            is taken once). Else register once (CAS COUNT+1) and WAIT on
 *            the value seen.
 *   abandon: COUNT-1; then SET with COUNT > 0: wake 1 (pass-on: the woken
 *            waiter may leave without consuming the set — timed out,
 *            cancelled, a wait-any that took another object).
 * Invariant: registration and set are CASes on one word: either set sees
 * COUNT > 0 and wakes one, or the registering CAS fails and sees SET.
 *
 * Sleeping on the value seen is safe by lib/step.h's kernel-compare
 * argument. Spin model: tests/models/event.pml.
 */
#include "lib/internal.h"

#define E_SHARED 0x80000000u /* bit 31: process-shared } constant after init */
#define E_AUTO 0x40000000u   /* bit 30: auto-reset     } */
#define E_SET 0x1u	     /* bit 0 */
/* manual-reset */
#define E_WAITERS 0x2u	      /* bit 1: someone may sleep: set must wake */
#define E_MCNT_ONE 0x4u	      /* bits 2-11: COUNT, waiters from their first */
#define E_MCNT_MASK 0xffcu    /*   WAIT step until they return (destroy) */
#define E_GEN_ONE 0x1000u     /* bits 12-29: GEN, +1 by every set */
#define E_GEN_MASK 0x3ffff000u
/* manual-reset waiter state, in w->registered */
#define MW_SNAP 0x1u    /* GEN snapshot taken (w->aux) */
#define MW_COUNTED 0x2u /* counted in COUNT */
/* auto-reset */
#define E_CNT_ONE 0x2u	       /* bits 1-29: COUNT, registered waiters */
#define E_CNT_MASK 0x3ffffffeu

_Static_assert(sizeof(ursa_event_t) == 4, "ursa_event_t must be 4 bytes");
_Static_assert(_Alignof(ursa_event_t) == 4, "ursa_event_t must be 4-byte aligned");

/* Acquire on success and on failure: a failed CAS's reload may show SET
 * or a new generation, and the waiter then returns having "seen" the set. */
#define cas_acq2(p, e, d) \
	__atomic_compare_exchange_n((p), (e), (d), false, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)

static inline bool e_shared(uint32_t v)
{
	return v & E_SHARED;
}

int ursa_event_init(ursa_event_t *e, unsigned flags)
{
	if (!e || ((uintptr_t)e & (_Alignof(ursa_event_t) - 1)) ||
	    (flags & ~(URSA_SHARED | URSA_EVENT_AUTO_RESET)))
		return -EINVAL;
	uint32_t v = ((flags & URSA_SHARED) ? E_SHARED : 0) |
		     ((flags & URSA_EVENT_AUTO_RESET) ? E_AUTO : 0);
	__atomic_store_n(&e->__word, v, __ATOMIC_RELEASE);
	return 0;
}

int ursa_event_set(ursa_event_t *e)
{
	if (!e)
		return -EINVAL;
	uint32_t v = ld_relaxed(&e->__word), nv;
	do {
		if (v & E_SET)
			return 0;
		if (v & E_AUTO)
			nv = v | E_SET;
		else
			nv = (v & (E_SHARED | E_AUTO | E_MCNT_MASK)) | E_SET |
			     ((v + E_GEN_ONE) & E_GEN_MASK);
	} while (!cas_rel(&e->__word, &v, nv));
	if (v & E_AUTO) {
		if (v & E_CNT_MASK)
			ursa_k_futex_wake(&e->__word, 1, e_shared(v));
	} else if (v & (E_WAITERS | E_MCNT_MASK)) {
		ursa_k_futex_wake(&e->__word, INT_MAX, e_shared(v));
	}
	return 0;
}

int ursa_event_reset(ursa_event_t *e)
{
	if (!e)
		return -EINVAL;
	uint32_t v = ld_relaxed(&e->__word);
	while (v & E_SET) {
		if (cas_relaxed(&e->__word, &v, v & ~E_SET))
			break;
	}
	return 0;
}

int ursa_event_destroy(ursa_event_t *e)
{
	if (!e)
		return -EINVAL;
	uint32_t v = ld_acquire(&e->__word);
	if (v & E_AUTO)
		return (v & E_CNT_MASK) ? -EBUSY : 0;
	if (v & E_MCNT_MASK)
		return -EBUSY;
	if (!(v & E_WAITERS))
		return 0;
	/* The mark may be stale (top of the file): clear it and see whether
	 * anyone was asleep. Those woken step again and re-mark the word. */
	while (!cas_relaxed(&e->__word, &v, v & ~E_WAITERS)) {
		if (!(v & E_WAITERS))
			return 0;
	}
	return ursa_k_futex_wake(&e->__word, INT_MAX, e_shared(v)) > 0 ? -EBUSY : 0;
}

/* A manual waiter leaves: uncount it if counted. Release: its reads of
 * whatever the set published come before destroy can see COUNT 0. */
static void manual_leave(ursa_event_t *e, struct ursa_waiter *w)
{
	if (w->registered & MW_COUNTED)
		__atomic_fetch_sub(&e->__word, E_MCNT_ONE, __ATOMIC_RELEASE);
	w->registered = 0;
}

static int event_take(void *obj, struct ursa_waiter *w)
{
	ursa_event_t *e = obj;
	uint32_t v = ld_acquire(&e->__word);
	if (!(v & E_AUTO)) {
		if ((v & E_SET) || ((w->registered & MW_SNAP) && (v & E_GEN_MASK) != w->aux)) {
			manual_leave(e, w);
			return 0;
		}
		return -EBUSY;
	}
	while (v & E_SET) {
		uint32_t nv = (v & ~E_SET) - (w->registered ? E_CNT_ONE : 0);
		if (cas_acq2(&e->__word, &v, nv)) {
			w->registered = 0;
			return 0;
		}
	}
	return -EBUSY;
}

static int manual_step(ursa_event_t *e, struct ursa_waiter *w, struct ursa_wait *out)
{
	uint32_t v = ld_acquire(&e->__word);
	for (;;) {
		if (v & E_SET)
			break;
		if (!(w->registered & MW_SNAP)) {
			w->registered |= MW_SNAP;
			w->aux = v & E_GEN_MASK;
		} else if ((v & E_GEN_MASK) != w->aux) {
			break;
		}
		uint32_t n = v | E_WAITERS;
		bool count = !(w->registered & MW_COUNTED) && (v & E_MCNT_MASK) != E_MCNT_MASK;
		if (count)
			n += E_MCNT_ONE;
		if (n != v && !cas_acq2(&e->__word, &v, n))
			continue;
		if (count)
			w->registered |= MW_COUNTED;
		out->addr = &e->__word;
		out->val = n;
		out->shared = e_shared(v);
		return URSA_STEP_WAIT;
	}
	manual_leave(e, w);
	return URSA_STEP_DONE;
}

static int auto_step(ursa_event_t *e, struct ursa_waiter *w, struct ursa_wait *out)
{
	uint32_t v = ld_acquire(&e->__word);
	for (;;) {
		if (v & E_SET) {
			uint32_t nv = (v & ~E_SET) - (w->registered ? E_CNT_ONE : 0);
			if (cas_acq2(&e->__word, &v, nv)) {
				w->registered = 0;
				return URSA_STEP_DONE;
			}
			continue;
		}
		if (!w->registered) {
			if (!cas_acq2(&e->__word, &v, v + E_CNT_ONE))
				continue;
			w->registered = 1;
			v += E_CNT_ONE;
		}
		out->addr = &e->__word;
		out->val = v;
		out->shared = e_shared(v);
		return URSA_STEP_WAIT;
	}
}

static int event_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	ursa_event_t *e = obj;
	if (ld_relaxed(&e->__word) & E_AUTO)
		return auto_step(e, w, out);
	return manual_step(e, w, out);
}

static int event_abandon(void *obj, struct ursa_waiter *w)
{
	ursa_event_t *e = obj;
	if (!w->registered)
		return 0;
	uint32_t v = ld_relaxed(&e->__word);
	if (!(v & E_AUTO)) {
		manual_leave(e, w); /* the snapshot is the waiter's own */
		return 0;
	}
	w->registered = 0;
	v = __atomic_sub_fetch(&e->__word, E_CNT_ONE, __ATOMIC_ACQ_REL);
	/* Pass on a set whose wake this waiter may have consumed. */
	if ((v & E_SET) && (v & E_CNT_MASK))
		ursa_k_futex_wake(&e->__word, 1, e_shared(v));
	return 0;
}

int ursa_event_trywait(ursa_event_t *e)
{
	if (!e)
		return -EINVAL;
	struct ursa_waiter none = {0};
	return event_take(e, &none);
}

static int event_wait(ursa_event_t *e, clockid_t clk, const struct timespec *abs)
{
	struct ursa_waiter w = {0};
	uint32_t v = ld_acquire(&e->__word);
	if (!(v & E_AUTO)) {
		if (v & E_SET)
			return 0;
		/* The wait begins here: a set after this load releases it,
		 * even if a reset follows before the first step. */
		w.registered = MW_SNAP;
		w.aux = v & E_GEN_MASK;
	} else if (event_take(e, &w) == 0) {
		return 0;
	}
	/* A deadline already past: that was the one try; no sleep, and no
	 * WAITERS mark or registration left behind. */
	if (abs && ursa__deadline_passed(clk, abs))
		return -ETIMEDOUT;
	return ursa__block(e, &ursa__event_ops, &w, clk, abs);
}

int ursa_event_wait(ursa_event_t *e)
{
	if (!e)
		return -EINVAL;
	return event_wait(e, CLOCK_MONOTONIC, NULL);
}

int ursa_event_timedwait(ursa_event_t *e, clockid_t clk, const struct timespec *abs)
{
	if (!e)
		return -EINVAL;
	int r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	return event_wait(e, clk, abs);
}

/* The event's step table (lib/step.h); its abandon passes sets on. */
static bool event_is_shared(const void *obj)
{
	return e_shared(ld_relaxed(&((const ursa_event_t *)obj)->__word));
}

const struct ursa_step_ops ursa__event_ops = {
	.name = "event",
	.step = event_step,
	.abandon = event_abandon,
	.take = event_take,
	.shared = event_is_shared,
};

int ursa_event_wait_async(struct io_uring *r, ursa_event_t *e, struct ursa_op *op)
{
	return ursa__op_start(r, op, &ursa__event_ops, e, NULL, 0);
}
