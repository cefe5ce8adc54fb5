/* SPDX-License-Identifier: MIT */
/*
 * lib/mutex.c — the 4-byte mutex.
 *
 * The word (one futex, 32 bits):
 *
 *   bit 31      SHARED   process-shared (constant after init)
 *   bits 3-30   COUNT    registered waiters: waiters that have announced
 *                        themselves (their step said WAIT) and have not
 *                        finished (taken the lock or given up)
 *   bit 2       REQ      a starving waiter asks for a hand-off
 *   bits 0-1    state    0 FREE, 1 LOCKED, 2 CONTENDED, 3 HANDED
 *
 *   FREE       unlocked.
 *   LOCKED     locked, no sleeper has announced itself: unlock needs no wake.
 *   CONTENDED  locked, waiters may sleep: unlock must wake one.
 *   HANDED     locked on behalf of the registered waiters; the first of
 *              them to step claims it (HANDED -> CONTENDED). Newcomers
 *              treat it as locked, so they cannot barge.
 *
 * Uncontended, the word is 0 (or SHARED): lock and unlock are one inline
 * compare-and-swap each (include/ursa/mutex.h). Anything else goes out of
 * line. This is Drepper's three-state mutex ("Futexes Are Tricky", mutex3)
 * plus a hand-off state and a waiter count. Transitions:
 *
 *   lock fast:   0 -> LOCKED                           (inline CAS)
 *   unlock fast: LOCKED -> 0                           (inline CAS)
 *   waiter step: FREE -> LOCKED, or CONTENDED when COUNT (less itself) > 0
 *                (others may sleep, so the next unlock must wake);
 *                LOCKED -> CONTENDED, then sleep while word == that value;
 *                HANDED -> CONTENDED if registered (claim), else sleep;
 *                it registers (COUNT + 1) in the CAS that announces it and
 *                deregisters in the CAS that takes the lock; after
 *                URSA_HANDOFF_AFTER lost races it also sets REQ.
 *   unlock slow: CONTENDED -> FREE, wake 1;
 *                CONTENDED|REQ -> HANDED, wake 1. If the wake found nobody
 *                asleep and COUNT is 0, take it back (HANDED -> FREE, and
 *                wake 1 for any newcomer that slept on HANDED meanwhile);
 *                if COUNT > 0, a registered waiter is between two sleeps
 *                (a ring waiter whose CQE is on its way, a thread back from
 *                a spurious wake) and will claim it at its next step.
 *   abandon:     a registered waiter that gives up deregisters; if that
 *                leaves HANDED with COUNT 0, it takes the hand-off back.
 *
 * Why no wakeup is lost: a waiter sleeps only on a value with state
 * CONTENDED or HANDED that it saw or stored; the kernel compares it under
 * the hash-bucket lock, so an unlock that changes the word first makes the
 * sleep return -EAGAIN, and an unlock after it finds the waiter queued and
 * wakes it. Every sleeper is registered, so any state with sleepers has
 * COUNT > 0 and is CONTENDED or HANDED, never LOCKED: a locker that takes
 * the lock while others are registered stores CONTENDED. (When COUNT is 0
 * it stores LOCKED, so the last waiter's unlock makes no wake syscall.) A HANDED lock is never stranded: the
 * unlocker woke a sleeper (whose next step claims it — a woken thread or
 * ring waiter always steps), or a registered waiter will step, or the last
 * party to see COUNT 0 (unlocker or abandoner) takes it back.
 *
 * Ring waiters (lib/async.c) run the same step: their FUTEX_WAIT SQE
 * sleeps on the same value, and a woken ring waiter stores CONTENDED like a
 * woken thread, so the next sleeper's wake is never lost. Starvation: a
 * ring waiter's wake reaches it late (CQE, task_work, the loop's turn), and
 * under churn its re-armed FUTEX_WAIT often finds the word already changed
 * (-EAGAIN), so it is rarely asleep when an unlock wakes. After
 * URSA_HANDOFF_AFTER lost races it sets REQ; the next unlock hands the lock
 * to a sleeper or, the waiter being registered, keeps it HANDED until the
 * waiter's next step claims it. Running threads cannot take a HANDED lock,
 * so a starving waiter gets the lock within a few unlocks — parking_lot's
 * eventual fairness, counted in lost races instead of time.
 *
 * Limits: a registered waiter that vanishes without giving up — its process
 * killed, or its io_uring torn down with the wait in flight — leaves COUNT
 * raised: destroy then says -EBUSY, and a hand-off may wait for a claimer
 * that never comes. Blocked newcomers recover from that by themselves (a
 * sleep on HANDED is bounded to URSA_HANDED_SLEEP_MS; after it they are
 * registered and claim it); re-initialise a mutex whose ring was torn down
 * with lock ops in flight.
 */
#include "lib/internal.h"

#define M_SHARED URSA__MUTEX_SHARED
#define M_REQ 0x4u
#define M_STATE 0x3u
#define M_FREE 0u
#define M_LOCKED 1u
#define M_CONTENDED 2u
#define M_HANDED 3u
#define M_CNT_ONE 0x8u
#define M_CNT 0x7ffffff8u

/* Lost races before a waiter asks for a hand-off. */
#define URSA_HANDOFF_AFTER 2

_Static_assert(sizeof(ursa_mutex_t) == 4, "ursa_mutex_t must be 4 bytes");
_Static_assert(_Alignof(ursa_mutex_t) == 4, "ursa_mutex_t must be 4-byte aligned");

static inline bool m_shared(uint32_t v)
{
	return v & M_SHARED;
}

/* The state a locker stores when it takes a FREE lock (v without its own
 * registration): CONTENDED while other waiters are registered. */
static inline uint32_t m_taken(uint32_t v)
{
	return (v & M_CNT) ? M_CONTENDED : M_LOCKED;
}

/* A HANDED lock nobody is going to claim (no sleeper was woken, no waiter
 * is registered) goes back to FREE; wake one newcomer that may have gone to
 * sleep on HANDED meanwhile. */
static void m_take_back(ursa_mutex_t *m)
{
	uint32_t v = ld_relaxed(&m->__word);
	while ((v & M_STATE) == M_HANDED && !(v & M_CNT)) {
		if (cas_rel(&m->__word, &v, v & ~M_STATE)) {
			ursa_k_futex_wake(&m->__word, 1, m_shared(v));
			return;
		}
	}
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
	return (ld_acquire(&m->__word) & (M_STATE | M_CNT)) == 0 ? 0 : -EBUSY;
}

int ursa__mutex_take(ursa_mutex_t *m, struct ursa_waiter *w)
{
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		uint32_t s = v & M_STATE, dereg = w->registered ? M_CNT_ONE : 0;
		if (s == M_FREE) {
			if (cas_acq(&m->__word, &v, (v - dereg) | m_taken(v - dereg)))
				break;
		} else if (s == M_HANDED && w->registered) {
			if (cas_acq(&m->__word, &v, ((v - dereg) & ~M_STATE) | M_CONTENDED))
				break;
		} else {
			return -EBUSY;
		}
	}
	w->registered = 0;
	return 0;
}

int ursa__mutex_step(ursa_mutex_t *m, struct ursa_waiter *w, struct ursa_wait *out)
{
	if (ursa__mutex_take(m, w) == 0)
		return URSA_STEP_DONE;
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		uint32_t s = v & M_STATE, want;
		if (s == M_FREE || (s == M_HANDED && w->registered)) {
			if (ursa__mutex_take(m, w) == 0)
				return URSA_STEP_DONE;
			v = ld_relaxed(&m->__word);
			continue;
		}
		/* Locked: announce ourselves (CONTENDED, registered), ask for a
		 * hand-off (REQ) after losing enough races, then sleep on
		 * exactly the value we stored or saw. */
		bool newcomer = !w->registered;
		want = s == M_HANDED ? v : (v & ~M_STATE) | M_CONTENDED;
		if (s != M_HANDED && w->slept && w->losses + 1 >= URSA_HANDOFF_AFTER)
			want |= M_REQ;
		if (newcomer)
			want += M_CNT_ONE;
		if (want != v && !cas_relaxed(&m->__word, &v, want))
			continue;
		w->registered = 1;
		if (w->slept)
			w->losses++;
		out->addr = &m->__word;
		out->val = want;
		out->shared = m_shared(v);
		/* A newcomer on HANDED bounds its sleep, so a hand-off whose
		 * claimers vanished (killed, ring torn down) costs a delay, not
		 * a deadlock: after it the waiter is registered and may claim. */
		out->bounded = s == M_HANDED && newcomer;
		return URSA_STEP_WAIT;
	}
}

int ursa__mutex_abandon(ursa_mutex_t *m, struct ursa_waiter *w)
{
	if (!w->registered)
		return 0;
	uint32_t v = __atomic_fetch_sub(&m->__word, M_CNT_ONE, __ATOMIC_ACQ_REL) - M_CNT_ONE;
	w->registered = 0;
	if ((v & M_STATE) == M_HANDED && !(v & M_CNT))
		m_take_back(m);
	return 0;
}

void ursa__mutex_pass_on(ursa_mutex_t *m)
{
	/* A wake on this word may have been consumed by a waiter that took
	 * something else (wait-any): make sure the next sleeper hears of it. */
	uint32_t v = ld_relaxed(&m->__word);
	if ((v & M_STATE) == M_FREE) {
		ursa_k_futex_wake(&m->__word, 1, m_shared(v));
	} else if ((v & M_STATE) == M_HANDED) {
		/* Claim it as a registered waiter would, then unlock: the
		 * unlock hands it on or frees it. If the CAS fails, another
		 * waiter claimed it: nothing to pass on. */
		if (cas_acq(&m->__word, &v, (v & ~M_STATE) | M_CONTENDED))
			ursa__mutex_unlock_slow(m);
	}
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
		if (s == M_FREE && cas_acq(&m->__word, &v, v | m_taken(v)))
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
		if (cas_acq(&m->__word, &v, v | m_taken(v)))
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
			/* No sleeper announced; registered waiters are awake. */
			if (cas_rel(&m->__word, &v, v & ~M_STATE))
				return 0;
			continue;
		}
		if (v & M_REQ) {
			if (!cas_rel(&m->__word, &v, (v & ~(M_STATE | M_REQ)) | M_HANDED))
				continue;
			if (ursa_k_futex_wake(&m->__word, 1, sh) <= 0)
				m_take_back(m); /* unless a registered waiter will claim it */
			return 0;
		}
		if (!cas_rel(&m->__word, &v, v & ~M_STATE))
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
		return 0; /* process-shared, uncontended */
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
