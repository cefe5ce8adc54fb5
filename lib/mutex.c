/* SPDX-License-Identifier: MIT */
/*
 * lib/mutex.c — the 4-byte mutex.
 *
 * The word (one futex, 32 bits):
 *
 *   bit 31      SHARED   process-shared (constant after init)
 *   bit 2       REQ      a starving waiter asks for a hand-off
 *   bits 0-1    state    0 FREE, 1 LOCKED, 2 CONTENDED, 3 HANDED
 *
 *   FREE       unlocked. The only unlocked state; the word is 0 or SHARED.
 *   LOCKED     locked, no waiter has announced itself: unlock needs no wake.
 *   CONTENDED  locked, waiters may sleep: unlock must wake one.
 *   HANDED     locked on behalf of a waiter that has slept; the first such
 *              waiter to see it claims it (HANDED -> CONTENDED). Newcomers
 *              treat it as locked, so they cannot barge.
 *
 * This is Drepper's three-state mutex ("Futexes Are Tricky", mutex3) with a
 * fourth state for hand-off. Transitions:
 *
 *   lock fast:   FREE -> LOCKED                       (inline CAS)
 *   unlock fast: LOCKED -> FREE                       (inline CAS)
 *   waiter step: FREE -> LOCKED (first try) or CONTENDED (after sleeping:
 *                other sleepers may remain, so the next unlock must wake);
 *                LOCKED -> CONTENDED, then sleep while word == CONTENDED;
 *                HANDED -> CONTENDED if it has slept (claim), else sleep;
 *                after losing URSA_HANDOFF_AFTER wakes, also sets REQ.
 *   unlock slow: CONTENDED -> FREE, wake 1;
 *                CONTENDED|REQ -> HANDED, wake 1. If the wake found nobody
 *                (the waiters timed out or were cancelled in between), take
 *                it back: HANDED -> FREE and wake 1 more, for any newcomer
 *                that went to sleep on HANDED meanwhile.
 *
 * Why no wakeup is lost: a waiter sleeps only with the futex value
 * CONTENDED or HANDED, which it (or another waiter) stored; the kernel
 * compares that value under the hash-bucket lock, so an unlock that changes
 * the word before the sleep makes the sleep return -EAGAIN, and an unlock
 * after it finds the waiter queued and wakes it. Any state with sleepers is
 * CONTENDED or HANDED, never LOCKED: a waiter that takes the lock after
 * sleeping stores CONTENDED, conservatively, so its unlock wakes the next.
 * A HANDED lock is never stranded: the unlocker either woke a waiter (which
 * claims it; a woken waiter's step always runs) or takes it back.
 *
 * Ring waiters (lib/async.c) run the same step: their FUTEX_WAIT SQE sleeps
 * on the same value, and a woken ring waiter stores CONTENDED like a woken
 * thread, so the next sleeper's wake is never lost. A ring waiter's wake
 * reaches it late (CQE, task_work, the loop's turn), so under sustained
 * contention running threads win every race; after URSA_HANDOFF_AFTER
 * losses it sets REQ and the next unlock hands the lock to the oldest
 * sleeper (the kernel wakes futex waiters in FIFO order, ring or thread
 * alike), which bounds how long any waiter starves — parking_lot's
 * eventual fairness, counted in lost races instead of time.
 */
#include "lib/internal.h"

#define M_SHARED URSA__MUTEX_SHARED
#define M_REQ 0x4u
#define M_STATE 0x3u
#define M_FREE 0u
#define M_LOCKED 1u
#define M_CONTENDED 2u
#define M_HANDED 3u

/* Lost races before a waiter asks for a hand-off. */
#define URSA_HANDOFF_AFTER 2

_Static_assert(sizeof(ursa_mutex_t) == 4, "ursa_mutex_t must be 4 bytes");
_Static_assert(_Alignof(ursa_mutex_t) == 4, "ursa_mutex_t must be 4-byte aligned");

static inline bool m_shared(uint32_t v)
{
	return v & M_SHARED;
}

int ursa_mutex_init(ursa_mutex_t *m, unsigned flags)
{
	if (!m || (flags & ~URSA_SHARED))
		return -EINVAL;
	__atomic_store_n(&m->__word, (flags & URSA_SHARED) ? M_SHARED : 0, __ATOMIC_RELEASE);
	return 0;
}

int ursa_mutex_destroy(ursa_mutex_t *m)
{
	if (!m)
		return -EINVAL;
	return (ld_acquire(&m->__word) & M_STATE) == M_FREE ? 0 : -EBUSY;
}

int ursa__mutex_step(ursa_mutex_t *m, struct ursa_waiter *w, struct ursa_wait *out)
{
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		uint32_t s = v & M_STATE, want;
		if (s == M_FREE) {
			if (cas_acq(&m->__word, &v, (v & M_SHARED) | (w->slept ? M_CONTENDED : M_LOCKED)))
				return URSA_STEP_DONE;
			continue;
		}
		if (s == M_HANDED && w->slept) {
			if (cas_acq(&m->__word, &v, (v & M_SHARED) | M_CONTENDED))
				return URSA_STEP_DONE;
			continue;
		}
		/* Locked: announce ourselves (CONTENDED), and after losing
		 * enough races ask for a hand-off (REQ), then sleep. */
		want = s == M_HANDED ? v : (v & ~M_STATE) | M_CONTENDED;
		if (s != M_HANDED && w->slept && w->losses + 1 >= URSA_HANDOFF_AFTER)
			want |= M_REQ;
		if (want != v && !cas_relaxed(&m->__word, &v, want))
			continue;
		if (w->slept)
			w->losses++;
		out->addr = &m->__word;
		out->val = want;
		out->shared = m_shared(v);
		return URSA_STEP_WAIT;
	}
}

int ursa__mutex_abandon(ursa_mutex_t *m, struct ursa_waiter *w)
{
	/* Nothing to undo: a waiter registers nothing but the CONTENDED state,
	 * which only costs the next unlock a spare wake. A HANDED lock meant
	 * for this waiter was claimed by its last step (ursa__block) or its
	 * CQE (a woken ring wait always steps), or is taken back by the
	 * unlocker when its wake found nobody. */
	(void)m;
	(void)w;
	return 0;
}

static int mutex_step(void *m, struct ursa_waiter *w, struct ursa_wait *out)
{
	return ursa__mutex_step(m, w, out);
}

static int mutex_abandon(void *m, struct ursa_waiter *w)
{
	return ursa__mutex_abandon(m, w);
}

static int mutex_lock_slow(ursa_mutex_t *m, clockid_t clk, const struct timespec *abs)
{
	/* Spin while the holder runs: cheaper than a futex round trip when the
	 * critical section is short. Do not spin on HANDED (not ours to take). */
	for (int i = 0; i < URSA_SPIN; i++) {
		uint32_t v = ld_relaxed(&m->__word);
		uint32_t s = v & M_STATE;
		if (s == M_FREE && cas_acq(&m->__word, &v, v | M_LOCKED))
			return 0;
		if (s == M_HANDED)
			break;
		ursa_cpu_relax();
	}
	struct ursa_waiter w = {0};
	return ursa__block(m, mutex_step, mutex_abandon, &w, clk, abs);
}

int ursa__mutex_lock_slow(ursa_mutex_t *m)
{
	if (!m)
		return -EINVAL;
	return mutex_lock_slow(m, CLOCK_MONOTONIC, NULL);
}

int ursa__mutex_trylock_slow(ursa_mutex_t *m)
{
	if (!m)
		return -EINVAL;
	uint32_t v = ld_relaxed(&m->__word);
	while ((v & M_STATE) == M_FREE) {
		if (cas_acq(&m->__word, &v, v | M_LOCKED))
			return 0;
	}
	return -EBUSY;
}

int ursa__mutex_unlock_slow(ursa_mutex_t *m)
{
	if (!m)
		return -EINVAL;
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		uint32_t s = v & M_STATE;
		bool sh = m_shared(v);
		if (s == M_FREE || s == M_HANDED)
			return -EPERM;
		if (s == M_LOCKED) {
			if (cas_rel(&m->__word, &v, v & M_SHARED))
				return 0;
			continue;
		}
		if (v & M_REQ) {
			if (!cas_rel(&m->__word, &v, (v & M_SHARED) | M_HANDED))
				continue;
			if (ursa_k_futex_wake(&m->__word, 1, sh) > 0)
				return 0;
			/* Nobody was asleep to take it: release it instead. */
			v = ld_relaxed(&m->__word);
			while ((v & M_STATE) == M_HANDED) {
				if (cas_rel(&m->__word, &v, v & M_SHARED)) {
					ursa_k_futex_wake(&m->__word, 1, sh);
					break;
				}
			}
			return 0;
		}
		if (!cas_rel(&m->__word, &v, v & M_SHARED))
			continue;
		ursa_k_futex_wake(&m->__word, 1, sh);
		return 0;
	}
}

int ursa_mutex_timedlock(ursa_mutex_t *m, clockid_t clk, const struct timespec *abs)
{
	if (!m)
		return -EINVAL;
	int r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	uint32_t v = 0;
	if (cas_acq(&m->__word, &v, M_LOCKED))
		return 0;
	if ((v & ~M_SHARED) == M_FREE && cas_acq(&m->__word, &v, v | M_LOCKED))
		return 0;
	return mutex_lock_slow(m, clk, abs);
}

/* Exported out-of-line versions of the inline fast paths. */
int ursa_mutex_lock(ursa_mutex_t *m)
{
	return ursa__mutex_lock_fast(m);
}

int ursa_mutex_trylock(ursa_mutex_t *m)
{
	return ursa__mutex_trylock_fast(m);
}

int ursa_mutex_unlock(ursa_mutex_t *m)
{
	return ursa__mutex_unlock_fast(m);
}
