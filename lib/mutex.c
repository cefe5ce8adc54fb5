/* SPDX-License-Identifier: MIT */
/*
 * lib/mutex.c — the 4-byte mutex.
 *
 * One futex word. Uncontended it is 0 (or SHARED): the lock sets LOCKED with
 * one inline bit-test-and-set and the unlock is one inline compare-and-swap
 * LOCKED -> 0 (include/ursa/mutex.h); everything else comes here. Drepper's
 * futex mutex ("Futexes Are Tricky") with the sleepers mark split from the
 * lock bit and nsync's designated waker: an unlock wakes only when a wake
 * can matter.
 *
 * Transitions (every one a CAS on the word, but the newcomer's inline
 * bit-test-and-set, which changes nothing on a held word):
 *   newcomer:   free -> LOCKED (SLEEPERS and WOKEN left as they are).
 *   waiter:     registers (COUNT + 1) in the CAS that makes it sleep,
 *               deregisters in the CAS that takes the lock or gives up.
 *               Before sleeping it sets SLEEPERS; taking with other waiters
 *               registered it sets SLEEPERS too (its unlock sees to them);
 *               once it has slept, each step clears WOKEN (it may be the
 *               woken one). A waiter that has waited URSA_FAIR_NS, or a ring
 *               waiter that lost URSA_HANDOFF_AFTER races, sets REQ.
 *   unlock:     REQ: -> HANDED, wake 1 (the hand-off); SLEEPERS and not
 *               WOKEN: -> free, clear SLEEPERS, set WOKEN, wake 1; else
 *               -> free, no wake (nobody asleep, or the woken waiter has
 *               not run yet and will see to the others when it does).
 *               An unlock that wakes takes a pin (PINS + 1) in its
 *               release and drops it in its last CAS, after the wake (the
 *               fix-up below, or the hand-off's take-back): destroy waits
 *               while the mutex is free with a pin, so the unlocker never
 *               touches a mutex destroyed and freed as soon as it was free,
 *               as POSIX allows (before the pins, the fix-up could write
 *               into such memory). PINS full (7 unlocks in that window at
 *               once): the unlock waits for one to go, holding the mutex
 *               (a waker that went on without one could touch the mutex
 *               after a destroy no pin held back); pins that stay a
 *               second (left by processes killed in that window) are
 *               dead: it takes none, as every unlock did before. A pin
 *               that stays for a second makes destroy say -EBUSY.
 *   HANDED:     only a registered or slept waiter claims it (-> LOCKED;
 *               a ring waiter starts as a newcomer too: its first step
 *               registers);
 *               newcomers cannot barge: LOCKED stays set with HANDED, so
 *               "free" is LOCKED clear, and a newcomer's bit-test-and-set
 *               finds the mutex held. Nobody left to claim it: -> free.
 *   COUNT 0:    SLEEPERS, WOKEN and REQ are cleared (nobody waits).
 *
 * Invariant (no lost wakeup): every waiter asleep on the word is seen to by
 * SLEEPERS (the holder's unlock wakes), by WOKEN (a woken waiter will step
 * and set SLEEPERS again), by HANDED (its claimer sets SLEEPERS), or by an
 * unlocker between its CAS and its wake. If that wake finds nobody asleep,
 * the unlocker clears WOKEN again (m_fixup). The proof is the spin model
 * tests/models/mutex.pml (threads, a cancellable ring waiter, wait-any
 * pass-on), checked exhaustively by make check.
 *
 * The inline lock (include/ursa/mutex.h, since URSA_0.2) is a
 * bit-test-and-set of LOCKED, not a compare-and-swap from 0: while waiters
 * are registered the word is never 0, so the swap failed on a free mutex
 * and the lock took a second locked instruction here. That is the usual
 * case under contention: a holder re-taking the mutex while others sleep,
 * or, on one CPU, while the waiter it woke waits for the CPU. It needs
 * LOCKED set on a handed-off mutex (HANDED, above); a program built before
 * URSA_0.2 compares with the same values as before. Measured
 * (bench/README.md, "The mutex's inline lock"): lock+unlock in a loop with
 * a waiter registered 28-31 ns -> 20-23 ns, free about 10 ns before and
 * after, a process-shared one 19.1-19.5 -> 14.1-14.4 ns; one CPU, empty
 * sections, 4 / 8 threads 0.94-1.00 / 0.88x glibc's rate -> 1.07-1.09 /
 * 0.91-0.92x; 2 CPUs, a yield in the section, 3-5% faster at 2, 8 and 16
 * threads; the other mutex and condvar rows within their spread. The
 * unlock stays a compare-and-swap, two locked instructions when waiters
 * are registered (a `lock btr` and a load took 12.3 ns there, but 3 ns
 * more than the swap on a free mutex, and would release before it could
 * hand off).
 *
 * Turns: a thread that has kept releasing the mutex with WOKEN set (its
 * own wake, or one still on its way) for URSA_TURN_NS (1 ms) yields the
 * CPU (sched_yield), then counts again. The woken waiter is often runnable
 * but queued behind threads that keep re-taking the mutex on the CPUs it
 * needs; the yield lets it run. The thread looks at the clock at every
 * URSA_TURN_LOOK_EVERY-th such release, and a release that finds no woken
 * waiter (on the slow path) stops the clock. It changes no word: the
 * protocol above and its model are the same with or without it.
 *   Measured on 2 CPUs (bench/README.md, "Turns" and "Turns by time"):
 * every 16th such release cost a fifth of the throughput with 1 us
 * sections; every 256th (092ffd3 to 2a375cd) fell to 0.69-0.97x glibc's
 * at 4-16 threads with 0.3-0.8 us sections that store to memory (each
 * yield is a context switch, and such code runs slower after one here);
 * never yielding let the least-served thread's share fall below glibc's
 * (0.07 of the mean at 32 threads, glibc 0.13). After 1 ms of the clock:
 * 1.03-1.56x glibc on those sections at 4-32 threads, the least-served
 * share 0.34-0.89 (glibc 0.15-0.90). Turns of 100 or 250 us raised that
 * share with 1 us sections at 16-32 threads to 0.68-0.84 but cost 10-20%
 * at 4-8 threads, under glibc's rate at 8 ("The mutex's turn").
 *
 * Hand-offs: a blocked waiter asks (REQ) once it has waited URSA_FAIR_NS
 * (1 ms), or URSA_FAIR_PER_WAITER_NS (131 us) for each registered waiter
 * when that is longer (more than 7 waiting). Each hand-off leaves the mutex
 * unused for a wake-up latency and sends its last holder to sleep. With a
 * fixed 1 ms, a queue whose turns come round more slowly than that (32
 * threads on 2 CPUs, the holder yielding in the section) had nearly every
 * woken waiter ask: 12-25 thousand hand-offs a second, half the
 * throughput gone and the least-served thread's share lower, not higher
 * (bench/README.md, "Hand-offs scaled by the queue"). Scaled, the
 * hand-offs stay near 1/URSA_FAIR_PER_WAITER_NS a second per mutex, as
 * parking_lot's per-lock fairness timer keeps them, with the bound
 * stated in include/ursa/mutex.h. The ask is the waiter's timing alone:
 * the spin model takes it as a free choice at every step.
 *
 * Spinning (mutex_lock_slow): a newcomer that finds the mutex held first
 * spins, taking it if it sees it free (the newcomer's transition, so the
 * spin changes no protocol). On 8 or more CPUs an untimed locker watches
 * the word with PAUSE backoff whether or not waiters sleep, until a
 * hand-off is under way; then, on any machine, it yields while nobody
 * sleeps (on one CPU for at most URSA_K_SPIN_NS, 300 us), and then sleeps
 * (kernel/arch.h says why and what was measured).
 * Barging past sleepers stays bounded by the hand-off (Fairness in
 * include/ursa/mutex.h): the spin stops at HANDED.
 *
 * Limits: a registered waiter that vanishes without giving up (its process
 * killed, its ring torn down with the wait in flight) leaves COUNT raised
 * (destroy says -EBUSY), and if it was the woken one or the hand-off's
 * claimer, the others wait for it: blocked threads that sleep while WOKEN
 * or HANDED is set bound that sleep (URSA_HANDED_SLEEP_MS) and then take
 * its place; ring waiters do not. Re-initialise such a mutex.
 */
#include "kernel/proc.h"
#include "lib/internal.h"
#include "lib/trace.h"

#define M_SHARED URSA__MUTEX_SHARED /* bit 31: process-shared (constant) */
#define M_CNT 0x7fffff00u	    /* bits 8-30: registered waiters */
#define M_CNT_ONE 0x100u
#define M_PINS 0xe0u	 /* bits 5-7: unlocks between release and last look */
#define M_PIN_ONE 0x20u
#define M_REQ 0x10u	 /* a waiter asks for a hand-off */
#define M_HANDED 0x8u	 /* held for the registered waiters (with LOCKED) */
#define M_WOKEN 0x4u	 /* a woken waiter has not stepped yet */
#define M_SLEEPERS 0x2u	 /* a waiter may sleep: unlock must wake one */
#define M_LOCKED 0x1u	 /* held */
#define M_HELD (M_LOCKED | M_HANDED)

_Static_assert(sizeof(ursa_mutex_t) == 4, "ursa_mutex_t must be 4 bytes");
_Static_assert(_Alignof(ursa_mutex_t) == 4, "ursa_mutex_t must be 4-byte aligned");
_Static_assert(URSA__MUTEX_SHARED == 0x80000000u, "the shared flag is bit 31");

static inline bool m_shared(uint32_t v)
{
	return v & M_SHARED;
}

/* Tidy a new value: with nobody registered nobody sleeps or asks. */
static inline uint32_t m_tidy(uint32_t n)
{
	return (n & M_CNT) ? n : n & ~(M_SLEEPERS | M_WOKEN | M_REQ);
}

static void m_fixup(ursa_mutex_t *m, uint32_t pin);

/* We set WOKEN (and cleared SLEEPERS): wake one, and if nobody was asleep
 * take WOKEN back. pin: an unlock's pin to drop here (M_PIN_ONE), or 0.
 * True if our wake woke a waiter. */
static bool m_wake_designated(ursa_mutex_t *m, bool sh, uint32_t pin)
{
	bool woke = ursa_k_futex_wake(&m->__word, 1, sh) > 0;
	if (!woke)
		m_fixup(m, pin);
	else
		ursa__unpin(&m->__word, pin);
	return woke;
}

/* After a designated wake that found nobody asleep: nobody will clear
 * WOKEN. Sleepers since our CAS set SLEEPERS themselves; if the
 * lock is free with SLEEPERS set, one of them slept and was not woken (its
 * holder's unlock saw WOKEN): wake again, keeping WOKEN. Each round needs
 * a new sleeper, so this ends. The last CAS also drops `pin` (an unlock's
 * pin, M_PIN_ONE, or 0): after it the caller touches nothing. */
static void m_fixup(ursa_mutex_t *m, uint32_t pin)
{
	bool nobody = true; /* no wake of ours has found a sleeper yet */
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		if (nobody && (v & M_WOKEN) && !(v & M_HELD) && (v & M_SLEEPERS)) {
			if (!cas_relaxed(&m->__word, &v, v & ~M_SLEEPERS))
				continue;
			if (ursa_k_futex_wake(&m->__word, 1, m_shared(v)) > 0)
				nobody = false;
			v = ld_relaxed(&m->__word);
			continue;
		}
		uint32_t n = v - pin;
		if (nobody && (v & M_WOKEN))
			n = m_tidy(n & ~M_WOKEN);
		if (n == v || cas_rel(&m->__word, &v, n))
			return;
	}
}

/* Free a HANDED lock nobody is going to claim. Unless `force`, only when no
 * waiter is registered (a registered waiter in transit will claim it).
 * pin: as m_fixup's (the hand-off's unlock, whose wake found nobody). */
static void m_take_back(ursa_mutex_t *m, bool force, uint32_t pin)
{
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		uint32_t n = v - pin;
		if ((v & M_HANDED) && (force || !(v & M_CNT))) {
			n = m_tidy(n & ~(M_HANDED | M_LOCKED));
			if (n & M_CNT)
				n = (n & ~M_SLEEPERS) | M_WOKEN;
		}
		if (n != v && !cas_rel(&m->__word, &v, n))
			continue;
		/* (With a pin, not forced: freed only with nobody registered, so
		 * no wake follows the pin's release.) */
		if (!(n & M_HANDED) && (v & M_HANDED) && (n & M_CNT))
			m_wake_designated(m, m_shared(v), 0);
		return;
	}
}

int ursa_mutex_init(ursa_mutex_t *m, unsigned flags)
{
	if (!m || ((uintptr_t)m & (_Alignof(ursa_mutex_t) - 1)) || (flags & ~URSA_SHARED))
		return -EINVAL;
	__atomic_store_n(&m->__word, (flags & URSA_SHARED) ? M_SHARED : 0, __ATOMIC_RELEASE);
	return 0;
}

bool ursa__pin_wait(unsigned i)
{
	if (i == 64 + 1000)
		return false;
	if (i < 64)
		sched_yield();
	else
		ursa_k_nap_us(1000); /* no cancellation point: an unlock waits here */
	return true;
}

int ursa__destroy_wait(uint32_t *word, uint32_t busy, uint32_t pins)
{
	for (unsigned i = 0;; i++) {
		uint32_t v = ld_acquire(word);
		if (v & busy)
			return -EBUSY;
		if (!(v & pins))
			return 0;
		if (!ursa__pin_wait(i))
			return -EBUSY;
	}
}

int ursa_mutex_destroy(ursa_mutex_t *m)
{
	if (!m)
		return -EINVAL;
	/* Unlocked, with an unlock's pin: that unlock is between its release
	 * and its last look at the word; let it finish (microseconds: a
	 * futex wake) before the caller may free the memory. A pin that stays
	 * a second (its process killed there, a URSA_SHARED mutex): -EBUSY,
	 * as for a waiter that vanished. */
	return ursa__destroy_wait(&m->__word, M_HELD | M_CNT, M_PINS);
}

static int mutex_take(void *obj, struct ursa_waiter *w)
{
	ursa_mutex_t *m = obj;
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		bool claim = (v & M_HANDED) && (w->registered || w->slept);
		if ((v & M_HELD) && !claim)
			return -EBUSY;
		uint32_t n = (v - (w->registered ? M_CNT_ONE : 0)) & ~M_HANDED;
		n |= M_LOCKED;
		if (w->registered && w->slept)
			n &= ~M_WOKEN; /* we may be the woken one: our turn is over */
		if (w->aux & URSA_W_REQ)
			n &= ~M_REQ;
		/* Taking it while others wait (or claiming a hand-off, whose
		 * unlock cleared SLEEPERS): our unlock must see to them. */
		if ((w->registered || claim) && (n & M_CNT))
			n |= M_SLEEPERS;
		if (cas_acq(&m->__word, &v, m_tidy(n)))
			break;
	}
	w->registered = 0;
	w->aux &= ~(URSA_W_REQ | URSA_W_STAMPED);
	return 0;
}

/* Should this waiter ask for a hand-off now (v: the word it found)? Once
 * it has asked, it asks at every step. A blocked waiter asks once it has
 * waited URSA_FAIR_NS, or URSA_FAIR_PER_WAITER_NS for each waiter
 * registered if that is longer ("Hand-offs" at the top of the file). */
static bool m_wants_handoff(struct ursa_waiter *w, uint32_t v)
{
	if (w->aux & URSA_W_REQ)
		return true;
	if ((w->aux & URSA_W_RING) && w->slept && w->losses + 1 >= URSA_HANDOFF_AFTER)
		return true;
	return ursa__waited_fair(w, (v & M_CNT) / M_CNT_ONE);
}

static int mutex_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	ursa_mutex_t *m = obj;
	if (mutex_take(m, w) == 0)
		return URSA_STEP_DONE;
	bool req = false, asked = false;
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		if (!(v & M_HELD) || ((v & M_HANDED) && (w->registered || w->slept))) {
			if (mutex_take(m, w) == 0)
				return URSA_STEP_DONE;
			v = ld_relaxed(&m->__word);
			continue;
		}
		/* Held: announce ourselves (SLEEPERS, registered), ask for a
		 * hand-off if we have waited long enough, and sleep on exactly
		 * the value we stored. Once we have slept we may be the woken
		 * waiter: clear WOKEN (SLEEPERS, set here, now sees to the
		 * others). A newcomer sleeping on HANDED waits for the claimer. */
		uint32_t n = v | M_SLEEPERS;
		if (!w->registered)
			n += M_CNT_ONE;
		if (w->registered && w->slept)
			n &= ~M_WOKEN;
		if (!(v & M_HANDED) && !asked) {
			req = m_wants_handoff(w, v);
			asked = true;
		}
		if (req && !(v & M_HANDED))
			n |= M_REQ;
		if (n != v && !cas_relaxed(&m->__word, &v, n))
			continue;
		w->registered = 1;
		if (req && !(v & M_HANDED))
			w->aux |= URSA_W_REQ;
		if (w->slept)
			w->losses++;
		out->addr = &m->__word;
		out->val = n;
		out->shared = m_shared(v);
		/* A blocked thread bounds a sleep that waits on someone else's
		 * turn (a hand-off's claimer, a woken waiter): if that one
		 * vanished, it costs a delay, then we step and take its place. */
		out->bound_us = (n & (M_HANDED | M_WOKEN)) && !(w->aux & URSA_W_RING)
					? URSA_HANDED_SLEEP_MS * 1000u
					: 0;
		return URSA_STEP_WAIT;
	}
}

static int mutex_abandon(void *obj, struct ursa_waiter *w)
{
	ursa_mutex_t *m = obj;
	if (!w->registered)
		return 0;
	bool requester = w->aux & URSA_W_REQ;
	uint32_t v = ld_relaxed(&m->__word), n;
	/* Deregister; a requester also withdraws its REQ (another waiter that
	 * still starves sets it again at its next step). */
	do
		n = m_tidy((v - M_CNT_ONE) & ~(requester ? M_REQ : 0));
	while (!cas_acqrel(&m->__word, &v, n));
	w->registered = 0;
	w->aux &= ~(URSA_W_REQ | URSA_W_STAMPED);
	/* A hand-off kept for us, or for nobody: take it back. */
	if ((n & M_HANDED) && (requester || !(n & M_CNT)))
		m_take_back(m, true, 0);
	return 0;
}

static void mutex_pass_on(ursa_mutex_t *m)
{
	/* Wait-any took another object after a sleep that may have consumed
	 * a wake of this word, or made us its woken waiter: see to the
	 * others as the woken waiter would have. Never take the lock: a
	 * hand-off stays for its registered claimers. */
	uint32_t v = ld_relaxed(&m->__word);
	for (;;) {
		if (!(v & M_CNT))
			return; /* nobody else waits */
		if (v & M_HANDED) {
			/* Its wake may have been ours: wake a registered
			 * sleeper to claim it; if none is asleep, the
			 * registered waiters in transit will. */
			ursa_k_futex_wake(&m->__word, 1, m_shared(v));
			return;
		}
		if (v & M_LOCKED) {
			/* The holder's unlock wakes, unless WOKEN (maybe ours)
			 * says not to. */
			if (!(v & M_WOKEN) ||
			    cas_relaxed(&m->__word, &v, (v & ~M_WOKEN) | M_SLEEPERS))
				return;
			continue;
		}
		/* Free with waiters: wake one, as an unlock would. */
		if (cas_relaxed(&m->__word, &v, (v & ~M_SLEEPERS) | M_WOKEN)) {
			m_wake_designated(m, m_shared(v), 0);
			return;
		}
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

static int mutex_lock_slow(ursa_mutex_t *m, clockid_t clk, const struct timespec *abs, bool eager)
{
	/* Spin, taking the word when it is free (the newcomer's transition),
	 * until a hand-off is under way. On many CPUs an untimed locker first
	 * watches the word with PAUSE backoff, sleepers or not; then, on any
	 * machine, it spins while nobody sleeps (kernel/arch.h: yields, looking
	 * after every 8th, or `eager` after each; PAUSEs for a timed locker).
	 * Once a waiter sleeps (SLEEPERS), queue behind them instead. */
	int looks = !abs && ursa_k_backoff_wanted() ? URSA_K_BACKOFF_LOOKS : 0;
	unsigned b = 1;
	uint64_t t0 = 0; /* when the yields began (kernel/arch.h) */
	for (int i = 0;;) {
		uint32_t v = ld_relaxed(&m->__word);
		if (!(v & M_HELD)) {
			if (cas_acq(&m->__word, &v, v | M_LOCKED))
				return 0;
			continue;
		}
		if (v & M_HANDED)
			break;
		if (looks > 0) {
			looks--;
			b = ursa_k_backoff(b);
			continue;
		}
		if (v & M_SLEEPERS)
			break;
		if (!(eager ? ursa_k_spin(i++, abs != NULL)
			    : ursa_k_lock_spin(i++, abs != NULL, &t0, false)))
			break;
	}
	struct ursa_waiter w = {0};
	URSA_TRACE(mutex_wait_begin, m);
	int r = ursa__block(m, &ursa__mutex_ops, &w, clk, abs);
	URSA_TRACE(mutex_wait_end, m, r);
	return r;
}

/* The inline lock's bit-test-and-set found the mutex held (URSA_0.2). */
int ursa__mutex_lock_held(ursa_mutex_t *m)
{
	if (!m)
		return -EINVAL;
	return mutex_lock_slow(m, CLOCK_MONOTONIC, NULL, false);
}

/* The inline lock of a program built before URSA_0.2: its compare-and-swap
 * from 0 failed, which a free mutex with waiters registered also fails;
 * mutex_lock_slow's first look takes that one. */
int ursa__mutex_lock_slow(ursa_mutex_t *m)
{
	return ursa__mutex_lock_held(m);
}

int ursa__mutex_relock(ursa_mutex_t *m)
{
	/* mutex_lock_slow's first look takes a free mutex. */
	return mutex_lock_slow(m, CLOCK_MONOTONIC, NULL, true);
}

/* The inline trylock's bit-test-and-set found bit 0 set: held (a handed-off
 * mutex included), and it changed nothing. */
int ursa__mutex_trylock_held(ursa_mutex_t *m)
{
	return m ? -EBUSY : -EINVAL;
}

/* Before URSA_0.2 (ursa__mutex_lock_slow says why). */
int ursa__mutex_trylock_slow(ursa_mutex_t *m)
{
	if (!m)
		return -EINVAL;
	uint32_t v = ld_relaxed(&m->__word);
	while (!(v & M_HELD)) {
		if (cas_acq(&m->__word, &v, v | M_LOCKED))
			return 0;
	}
	return -EBUSY;
}

/* We released the mutex (or posted a semaphore) with a woken waiter on its
 * way (WOKEN). A thread that keeps re-taking it, on a CPU the woken waiter
 * is queued for, starves it: once this thread has released so for
 * URSA_TURN_NS, it yields the CPU (top of the file, "Turns"). Every
 * URSA_TURN_LOOK_EVERY-th such release (ursa__let_woken_run, lib/internal.h)
 * looks at the clock here; ursa__turn.since is when it first looked in
 * this run of such releases (0: not timing); a release that finds no woken
 * waiter ends the run (ursa__turn_stop). An uncontended release (the
 * inline fast path) does not: the next run may then yield once early. */
__thread struct ursa__turn_state ursa__turn;

void ursa__turn_look(uint64_t turn_ns)
{
	uint64_t now = ursa_k_now_ns();
	if (!ursa__turn.since) {
		ursa__turn.since = now;
	} else if (now - ursa__turn.since >= turn_ns) {
		ursa__turn.since = 0;
		sched_yield();
	}
}

int ursa__mutex_unlock_slow(ursa_mutex_t *m)
{
	if (!m)
		return -EINVAL;
	uint32_t v = ld_relaxed(&m->__word);
	unsigned pin_waits = 0;
	bool pin_dead = false;
	for (;;) {
		bool sh = m_shared(v);
		if ((v & M_HELD) != M_LOCKED)
			return -EPERM; /* free, or HANDED (held for the waiters) */
		uint32_t n = m_tidy(v & ~M_LOCKED);
		/* An unlock that wakes looks at the word again after its wake.
		 * Its release takes a pin, and its last look drops it: a thread
		 * that then takes, unlocks and destroys the mutex (POSIX lets
		 * it free the memory at once) has its destroy wait for the pin,
		 * so we never touch a destroyed mutex. The pins are full (7
		 * unlocks in that window at once): wait, holding the mutex,
		 * for one to go (ursa__pin_wait, as destroy waits for them);
		 * pins that stay a second are dead (processes killed there, a
		 * URSA_SHARED mutex): go without one, as every unlock did
		 * before the pins. */
		uint32_t pin = M_PIN_ONE;
		if ((v & M_PINS) == M_PINS) {
			bool wakes = (n & M_REQ) || ((n & M_SLEEPERS) && !(n & M_WOKEN));
			if (wakes && !pin_dead) {
				pin_dead = !ursa__pin_wait(pin_waits++);
				v = ld_relaxed(&m->__word);
				continue;
			}
			pin = 0;
		}
		if (n & M_REQ) {
			/* A waiter starves: hand the lock to the waiters. */
			n = (n & ~(M_SLEEPERS | M_REQ)) | M_HANDED | M_LOCKED;
			if (!cas_rel(&m->__word, &v, n + pin))
				continue;
			URSA_TRACE(mutex_handoff, m);
			ursa__turn_stop();
			/* If the wake found nobody, take it back, unless a
			 * registered waiter will claim it; drop the pin. */
			if (ursa_k_futex_wake(&m->__word, 1, sh) <= 0)
				m_take_back(m, false, pin);
			else
				ursa__unpin(&m->__word, pin);
			return 0;
		}
		if ((n & M_SLEEPERS) && !(n & M_WOKEN)) {
			n = (n & ~M_SLEEPERS) | M_WOKEN;
			if (!cas_rel(&m->__word, &v, n + pin))
				continue;
			if (m_wake_designated(m, sh, pin))
				ursa__let_woken_run();
			return 0;
		}
		/* Nobody asleep, or the woken waiter has not run yet. */
		if (cas_rel(&m->__word, &v, n)) {
			if (n & M_WOKEN)
				ursa__let_woken_run();
			else
				ursa__turn_stop();
			return 0;
		}
	}
}

int ursa_mutex_timedlock(ursa_mutex_t *m, clockid_t clk, const struct timespec *abs)
{
	if (!m)
		return -EINVAL;
	int r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	if (!ursa__mutex_test_and_set(m))
		return 0;
	return mutex_lock_slow(m, clk, abs, false);
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
	return (ld_relaxed(&m->__word) & M_HELD) != 0;
}

/* The mutex's step table (lib/step.h). A ring locker starts as a newcomer,
 * as a blocked one does: its first step cannot claim a hand-off (before,
 * an event loop that unlocked and started a new lock op took every
 * hand-off a starving waiter asked for); from its first CQE on it counts
 * as having slept. */
static bool mutex_is_shared(const void *obj)
{
	return m_shared(ld_relaxed(&((const ursa_mutex_t *)obj)->__word));
}

const struct ursa_step_ops ursa__mutex_ops = {
	.name = "mutex",
	.step = mutex_step,
	.abandon = mutex_abandon,
	.take = mutex_take,
	.release = mutex_release,
	.shared = mutex_is_shared,
	.ring = {.aux = URSA_W_RING},
};

int ursa_mutex_lock_async(struct io_uring *r, ursa_mutex_t *m, struct ursa_op *op)
{
	return ursa__op_start(r, op, &ursa__mutex_ops, m, NULL, 0);
}
