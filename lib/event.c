/* SPDX-License-Identifier: MIT */
/*
 * lib/event.c — the 4-byte event, manual- or auto-reset.
 *
 * One word, also the futex word:
 *
 *   bit 31      SHARED      process-shared      } constant after init
 *   bit 30      AUTO        auto-reset          }
 *   bit 0       SET
 *   manual-reset:  bit 1       WAITERS   someone may sleep: set must wake
 *                  bits 2-11   COUNT     waiters between their first WAIT
 *                                        step and their return (destroy)
 *                  bits 12-29  GEN       generation, +1 by every set
 *   auto-reset:    bits 1-29   COUNT     registered waiters (blocked
 *                                        threads, ring waiters, wait-any)
 *
 * Manual-reset
 * ------------
 *   set:    if not SET: CAS to SET | GEN+1, WAITERS cleared, COUNT kept;
 *           if WAITERS was set or COUNT > 0, wake all (INT_MAX: the
 *           kernel's count is an int).
 *   reset:  CAS SET off; GEN stays.
 *   step:   the first call snapshots GEN into w->aux (MW_SNAP in
 *           w->registered). DONE if SET, or if GEN differs from the
 *           snapshot: a set came since this wait began, even if a reset
 *           followed at once — so every wait in progress when set ran
 *           returns, as the header promises. Else CAS WAITERS on — and
 *           COUNT+1 the first time (MW_COUNTED) — and WAIT on that value.
 *           DONE undoes the count (COUNT-1).
 *   abandon: COUNT-1 if counted (the snapshot is the waiter's own).
 *
 *   COUNT is there for destroy alone: a waiter is counted from its first
 *   WAIT step until it returns or abandons — a ring op from its start
 *   until ursa_handle_cqe finishes it, so queued, submitted and woken-but-
 *   unhandled ops all count — and destroy says -EBUSY while COUNT > 0.
 *   Wakeups do not depend on it (WAITERS does that, below); a change of
 *   COUNT only makes a sleep about to start return -EAGAIN and step again.
 *   A waiter that finds COUNT full (1023) waits uncounted, with WAITERS
 *   alone, as every waiter did before COUNT existed.
 *
 *   No lost wakeup: the waiter's "WAITERS on" and set's "SET on" are CASes
 *   on the same word, so one comes first in its modification order. If the
 *   waiter's comes first, set sees WAITERS and wakes every sleeper, and a
 *   waiter not yet asleep sleeps on a value the set has changed (-EAGAIN).
 *   If set's comes first, the waiter's CAS fails, it reloads, and sees SET
 *   or a new GEN. After a set, a reset and a new waiter's WAITERS, the word
 *   differs from the old sleepers' value in GEN, so the kernel's compare
 *   cannot be fooled (ABA) unless exactly 2^18 sets ran between a waiter's
 *   load and its sleep — while each of those sets woke it.
 *
 *   A WAITERS mark can outlive its sleepers (a waiter that timed out leaves
 *   it; the next set pays one useless wake-all). destroy therefore trusts
 *   COUNT, and for uncounted waiters (COUNT full) clears the mark and
 *   wakes all, and reports -EBUSY if the wake found a sleeper (which steps
 *   again and re-marks the word).
 *
 * Auto-reset
 * ----------
 *   set:    if not SET: CAS SET on; if COUNT > 0, wake 1. A set on a SET
 *           event does nothing (sets do not accumulate).
 *   step:   SET: consume it — one CAS clears SET and, if registered,
 *           COUNT-1, so exactly one waiter (or trywait) takes each set.
 *           Else the first call registers (CAS COUNT+1) and every call
 *           WAITs on the word value it saw (SET clear).
 *   abandon: COUNT-1; then if SET and COUNT > 0, wake 1 (pass-on, below).
 *
 *   No lost wakeup: registration and set are CASes on one word. If the
 *   registration comes first, set sees COUNT > 0 and wakes one sleeper; a
 *   registered waiter not yet asleep sleeps on a value without SET, which
 *   set has changed (-EAGAIN, step, consume). If set comes first, the
 *   registering CAS fails and the reload shows SET. A woken waiter steps
 *   and consumes SET, or finds that a trywait or running waiter already
 *   did — that set was consumed, not lost.
 *
 *   Pass-on: the one waiter a set woke may leave without stepping to
 *   consume it — it timed out just after its last step, its ring wait was
 *   cancelled, or it was a wait-any that took another object (or, on a
 *   kernel before 7.1, a WAITV that consumed wakes on several entries).
 *   The event then stays SET while the other waiters sleep on: stranded.
 *   So abandon, after deregistering, wakes one if SET is still there and
 *   waiters remain. If the leaver was not the one woken, the wake is
 *   spurious and harmless: the woken waiter steps and consumes SET or
 *   sleeps again.
 *
 *   COUNT has 29 bits; every waiter is a thread or an in-flight operation.
 */
#include "lib/internal.h"

#define E_SHARED 0x80000000u
#define E_AUTO 0x40000000u
#define E_SET 0x1u
/* manual-reset */
#define E_WAITERS 0x2u
#define E_MCNT_ONE 0x4u
#define E_MCNT_MASK 0xffcu
#define E_GEN_ONE 0x1000u
#define E_GEN_MASK 0x3ffff000u
/* manual-reset waiter state, in w->registered */
#define MW_SNAP 0x1u    /* GEN snapshot taken (w->aux) */
#define MW_COUNTED 0x2u /* counted in COUNT */
/* auto-reset */
#define E_CNT_ONE 0x2u
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
const struct ursa_step_ops ursa__event_ops = {
	.name = "event",
	.step = event_step,
	.abandon = event_abandon,
	.take = event_take,
};

int ursa_event_wait_async(struct io_uring *r, ursa_event_t *e, struct ursa_op *op)
{
	return ursa__op_start(r, op, &ursa__event_ops, e, NULL, 0);
}
