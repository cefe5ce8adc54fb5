/* SPDX-License-Identifier: MIT */
/*
 * lib/mutex.c — the 4-byte mutex.
 *
 * The word (one futex, 32 bits):
 *
 *   bit 31      SHARED   process-shared (constant after init)
 *   bits 3-30   COUNT    registered waiters: every waiter whose step
 *                        said WAIT, until it takes the lock or gives up
 *   bit 2       REQ      a starving ring waiter asks for a hand-off
 *   bits 0-1    state    0 FREE, 1 LOCKED, 2 CONTENDED, 3 HANDED
 *
 *   FREE       unlocked.
 *   LOCKED     locked, no waiter registered: unlock needs no wake.
 *   CONTENDED  locked, waiters may sleep: unlock must wake one.
 *   HANDED     locked on behalf of the waiters: the first registered or
 *              woken waiter to step claims it (HANDED -> CONTENDED).
 *              Newcomers treat it as locked, so they cannot barge.
 *
 * Uncontended, the word is 0 (or SHARED): lock and unlock are one inline
 * compare-and-swap each (include/ursa/mutex.h). Anything else goes out of
 * line. This is Drepper's three-state mutex ("Futexes Are Tricky", mutex3)
 * plus a hand-off state and a waiter count. Transitions:
 *
 *   lock fast:   0 -> LOCKED                           (inline CAS)
 *   unlock fast: LOCKED -> 0                           (inline CAS)
 *   waiter step: FREE -> LOCKED, or CONTENDED when COUNT (less itself) > 0;
 *                LOCKED -> CONTENDED, then sleep while word == that value;
 *                HANDED -> CONTENDED if registered or it has slept (claim),
 *                else sleep on HANDED;
 *                it registers (COUNT + 1) in the CAS that announces it and
 *                deregisters in the CAS that takes the lock; a ring waiter
 *                that has lost URSA_HANDOFF_AFTER races also sets REQ.
 *   unlock slow: CONTENDED -> FREE, wake 1;
 *                CONTENDED|REQ -> HANDED, wake 1. If the wake found nobody
 *                asleep: COUNT 0 -> take it back (HANDED -> FREE, wake 1);
 *                COUNT > 0 -> keep it: the requester is a registered ring
 *                waiter between two waits (its CQE on its way), and claims
 *                it at its next step.
 *   abandon:     deregister; a requester also clears REQ. If that leaves a
 *                HANDED lock with COUNT 0, or the abandoner was the
 *                requester, take the hand-off back.
 *
 * Why no wakeup is lost: a waiter sleeps only on a value it saw or stored,
 * with state CONTENDED or HANDED; the kernel compares it under the
 * hash-bucket lock, so an unlock that changes the word first makes the
 * sleep return -EAGAIN, and an unlock after it finds the waiter queued and
 * wakes it. Every sleeper is registered, so COUNT > 0 while anyone may
 * sleep, and a locker that takes a FREE lock then stores CONTENDED: its
 * unlock wakes the next. (With COUNT 0 it stores LOCKED, so the last
 * waiter's unlock makes no wake syscall.) A HANDED lock is never stranded:
 * the unlocker woke a sleeper (whose next step claims it — a woken thread or
 * ring waiter always steps), or the registered requester will step and
 * claim it, or the requester gave up and took it back, or COUNT is 0 and the
 * unlocker took it back.
 *
 * Ring waiters (lib/async.c) run the same step: their FUTEX_WAIT SQE
 * sleeps on the same value, and a woken ring waiter stores CONTENDED like a
 * woken thread, so the next sleeper's wake is never lost. Starvation: a
 * ring waiter's wake reaches it late (CQE, task_work, the loop's turn), and
 * under churn its re-armed FUTEX_WAIT often finds the word already changed
 * (-EAGAIN), so it is rarely asleep when an unlock wakes; without help it
 * loses every race to running threads. Ring waiters count as having slept
 * from their first step (they may claim a hand-off, and never sleep on
 * HANDED), and after URSA_HANDOFF_AFTER lost races one sets REQ: the next
 * unlock hands the lock to a sleeper or keeps it HANDED until the ring
 * waiter's next step claims it. Running threads cannot take a HANDED lock,
 * so a starving ring waiter gets the lock within a few unlocks —
 * parking_lot's eventual fairness, counted in lost races instead of time.
 * Blocked threads do not ask for hand-offs: the kernel queues them in FIFO
 * order and an unlock wakes the oldest, as with glibc.
 *
 * The spin model tests/models/mutex.pml checks these rules exhaustively
 * for three lockers (threads and a ring waiter that may be cancelled);
 * it found a hang in an earlier version (a newcomer asleep on HANDED
 * counted as a claimer).
 *
 * Limits: a registered waiter that vanishes without giving up — its process
 * killed, or its io_uring torn down with the wait in flight — leaves COUNT
 * raised (destroy then says -EBUSY; unlocks make a spare wake), and if it
 * was a requester, a hand-off may wait for a claim that never comes.
 * Blocked threads recover from that by themselves (a sleep on HANDED is
 * bounded to URSA_HANDED_SLEEP_MS; after it they have slept and claim it),
 * and ring lockers claim a HANDED lock at once; a wait-any in a ring has no
 * such bound. Re-initialise a mutex whose ring was torn down with lock ops
 * in flight.
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

/* A HANDED lock nobody is going to claim goes back to FREE; wake one
 * sleeper (one that slept on HANDED meanwhile, or any other). Unless
 * `force`, only when no waiter is registered (a registered ring requester
 * in transit will claim it). */
static void m_take_back(ursa_mutex_t *m, bool force)
{
	uint32_t v = ld_relaxed(&m->__word);
	while ((v & M_STATE) == M_HANDED && (force || !(v & M_CNT))) {
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

static int mutex_take(void *obj, struct ursa_waiter *w)
{
	ursa_mutex_t *m = obj;
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		uint32_t s = v & M_STATE, dereg = w->registered ? M_CNT_ONE : 0;
		if (s == M_FREE) {
			if (cas_acq(&m->__word, &v, (v - dereg) | m_taken(v - dereg)))
				break;
		} else if (s == M_HANDED && (w->registered || w->slept)) {
			if (cas_acq(&m->__word, &v, ((v - dereg) & ~M_STATE) | M_CONTENDED))
				break;
		} else {
			return -EBUSY;
		}
	}
	w->registered = 0;
	w->aux &= ~URSA_W_REQ;
	return 0;
}

static int mutex_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	ursa_mutex_t *m = obj;
	if (mutex_take(m, w) == 0)
		return URSA_STEP_DONE;
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		uint32_t s = v & M_STATE, want;
		if (s == M_FREE || (s == M_HANDED && (w->registered || w->slept))) {
			if (mutex_take(m, w) == 0)
				return URSA_STEP_DONE;
			v = ld_relaxed(&m->__word);
			continue;
		}
		/* Locked: announce ourselves (CONTENDED, registered), ask for a
		 * hand-off (REQ) after losing enough races if we are a ring
		 * waiter, then sleep on exactly the value we stored or saw.
		 * Every sleeper is registered, so COUNT > 0 whenever anyone
		 * may sleep. A blocked thread that sleeps on HANDED bounds its
		 * sleep: if the hand-off's claimer vanished (a killed process,
		 * a torn-down ring), it costs a delay, not a deadlock — after
		 * it the thread has slept and claims the lock itself. */
		want = s == M_HANDED ? v : (v & ~M_STATE) | M_CONTENDED;
		bool req = s != M_HANDED && (w->aux & URSA_W_RING) && w->slept &&
			   w->losses + 1 >= URSA_HANDOFF_AFTER;
		if (req)
			want |= M_REQ;
		if (!w->registered)
			want += M_CNT_ONE;
		if (want != v && !cas_relaxed(&m->__word, &v, want))
			continue;
		w->registered = 1;
		if (req)
			w->aux |= URSA_W_REQ;
		if (w->slept)
			w->losses++;
		out->addr = &m->__word;
		out->val = want;
		out->shared = m_shared(v);
		out->bounded = s == M_HANDED && !(w->aux & URSA_W_RING);
		return URSA_STEP_WAIT;
	}
}

static int mutex_abandon(void *obj, struct ursa_waiter *w)
{
	ursa_mutex_t *m = obj;
	if (!w->registered)
		return 0;
	bool requester = w->aux & URSA_W_REQ;
	uint32_t v = ld_relaxed(&m->__word);
	/* Deregister; a requester also withdraws its REQ (another ring waiter
	 * that still starves sets it again after its next lost race). */
	while (!cas_acqrel(&m->__word, &v, (v - M_CNT_ONE) & ~(requester ? M_REQ : 0)))
		;
	v = (v - M_CNT_ONE) & ~(requester ? M_REQ : 0);
	w->registered = 0;
	w->aux &= ~URSA_W_REQ;
	/* A hand-off kept for us, or for nobody: take it back. */
	if ((v & M_STATE) == M_HANDED && (requester || !(v & M_CNT)))
		m_take_back(m, true);
	return 0;
}

static void mutex_pass_on(ursa_mutex_t *m)
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

/* Wait-any leaves without this mutex: deregister, and once it has slept
 * (before that it consumed nothing), pass on a wake it may have taken. */
static void mutex_release(void *obj, struct ursa_waiter *w)
{
	mutex_abandon(obj, w);
	if (w->slept)
		mutex_pass_on(obj);
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
	return ursa__block(m, &ursa__mutex_ops, &w, clk, abs);
}

int ursa__mutex_lock_nospin(ursa_mutex_t *m)
{
	if (ursa__mutex_cas(m, 0, 1, __ATOMIC_ACQUIRE))
		return 0;
	struct ursa_waiter w = {0};
	return ursa__block(m, &ursa__mutex_ops, &w, CLOCK_MONOTONIC, NULL);
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
				m_take_back(m, false); /* unless the requester will claim it */
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

bool ursa__mutex_is_shared(const ursa_mutex_t *m)
{
	return m_shared(ld_relaxed(&m->__word));
}

bool ursa__mutex_is_locked(const ursa_mutex_t *m)
{
	return (ld_relaxed(&m->__word) & M_STATE) != M_FREE;
}

/* The mutex's step table (lib/step.h). A ring locker's wake reaches it
 * late: it may claim a hand-off from its first step, and never sleeps on
 * a HANDED mutex (top of the file). */
const struct ursa_step_ops ursa__mutex_ops = {
	.name = "mutex",
	.step = mutex_step,
	.abandon = mutex_abandon,
	.take = mutex_take,
	.release = mutex_release,
	.ring = {.slept = 1, .aux = URSA_W_RING},
};

int ursa_mutex_lock_async(struct io_uring *r, ursa_mutex_t *m, struct ursa_op *op)
{
	return ursa__op_start(r, op, &ursa__mutex_ops, m, NULL, 0);
}
