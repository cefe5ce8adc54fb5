/* SPDX-License-Identifier: MIT */
/*
 * lib/sem.c — the 8-byte counting semaphore. Spin model: tests/models/sem.pml.
 *
 * Two words:
 *
 *   __value    bits 0-30 the free units, 0..URSA_SEM_VALUE_MAX; bit 31 REG
 *              (waiters may be registered: look at __waiters). The futex
 *              word: waiters sleep while it is REG (no unit, REG set).
 *   __waiters  bit 31 SHARED (constant after init); bits 27-30 the spin
 *              hint (lib/internal.h: how long a waiter spins before it
 *              registers); bit 26 WOKEN (a woken waiter has not stepped
 *              yet); bit 25 HANDED (one unit, not in __value, kept for a
 *              waiter that has slept); bit 24 REQ (a waiter that has waited
 *              URSA_FAIR_NS asks for a hand-off); bits 21-23 PINS (posts
 *              that may still look at the semaphore after their unit became
 *              takeable: "Pins" below); bits 0-20 the number of registered
 *              waiters: blocked threads, ring waiters (lib/async.c) and
 *              wait-any callers (lib/wait_any.c) that may be asleep on
 *              __value or about to be.
 *
 * Transitions:
 *
 *   trywait / take:  units > 0: CAS value -> value - 1 (REG kept). No
 *                    syscall. A registered waiter that takes then
 *                    deregisters.
 *   post, fast:      REG clear: CAS value -> value + 1 (-EOVERFLOW at the
 *                    maximum, unchanged). Nothing after the CAS.
 *   post, slow:      REG set: take a pin (CAS __waiters + PIN, none when
 *                    all 7 are taken); then REQ (and no unit free, no
 *                    hand-off pending): CAS __waiters REQ -> HANDED |
 *                    WOKEN, and wake one unless WOKEN was set (a woken
 *                    waiter on its way claims it). Else CAS value -> value
 *                    + 1 (seq_cst; -EOVERFLOW as above), then load
 *                    __waiters (seq_cst): waiters registered and not
 *                    WOKEN: set WOKEN, wake one (the designated waker).
 *                    Last, drop the pin. A post that finds WOKEN already
 *                    set, or that posts again the semaphore this thread
 *                    posted last, runs the turn clock (lib/mutex.c,
 *                    "Turns": after URSA_SEM_TURN_NS, 25 us, of such posts
 *                    the poster yields, so the woken waiter gets a CPU;
 *                    "Turns" below says why shorter than the mutex's 1 ms,
 *                    and why the same semaphore).
 *   step (waiter):   take from value if it can; else, once it has slept,
 *                    claim HANDED if set (deregistering and clearing WOKEN
 *                    in the same CAS); else register (count + 1) and, once
 *                    it has slept, clear WOKEN (it may be the woken one),
 *                    and set REQ once it has waited URSA_FAIR_NS, in one
 *                    seq_cst CAS; then set REG (fetch-or, seq_cst; a load
 *                    when already set), take if that saw a unit, else WAIT
 *                    on (&value, REG).
 *   leave:           deregister (count - 1) in one CAS, which also clears
 *                    WOKEN once the waiter has slept, its own REQ, and,
 *                    when it was the last registered waiter, HANDED (the
 *                    unit goes back to value: "give-back"). The last one
 *                    also clears REG (with the give-back's unit, in one
 *                    CAS), then looks at the count again (seq_cst): a
 *                    waiter that registered meanwhile gets REG back, and
 *                    a wake if units came in while REG was clear (posts
 *                    then took the fast path: no wake).
 *   pass-on:         a waiter that has slept and leaves (took a unit,
 *                    claimed, gave up) may have been the woken one, or
 *                    have consumed a wake: a hand-off still pending, or
 *                    units in value with others registered, get a
 *                    designated wake from it.
 *   take-back:       the designated wake found nobody asleep: clear WOKEN,
 *                    and HANDED if still set, putting that unit in value;
 *                    then, units free and waiters registered: wake one
 *                    plainly (posts that saw WOKEN did not wake).
 *   count 0:         WOKEN and REQ are cleared; HANDED is taken back.
 *   destroy:         -EBUSY while waiters are registered or a unit is
 *                    handed; waits while a post holds a pin.
 *
 * REG. A post with nobody registered must not look at the semaphore after
 * its increment: the waiter it served may already have returned, and
 * destroyed and freed it (POSIX allows that as soon as sem_wait returns;
 * glibc's bug 12674 was this). So whether to look is decided by the
 * increment itself: REG lives in the word it changes. A waiter registers
 * (__waiters) before it sets REG, and sets it with an atomic
 * read-modify-write of __value that also sees the units: a fast post whose
 * CAS came first has its unit seen (taken); one that comes after finds
 * REG and goes slow, and its look at __waiters after its increment
 * sees the registration (which happened before the REG that the post
 * saw). REG is cleared only by the waiter that made the count 0, with the
 * look-again above: a waiter that registered and set REG before that
 * clear (and maybe slept, expecting REG) is seen by the look, gets REG
 * back and, if units came meanwhile, a wake; one that sets REG after it
 * sets it again; one that sleeps expecting REG after the clear gets
 * -EAGAIN. A REG left set with nobody registered (the look-again raced
 * with the newcomer's own leave) only sends posts the slow way until the
 * next last waiter leaves.
 *
 * Pins. A slow post looks at the semaphore after its unit became takeable
 * (its increment, or its hand-off): the Dekker load, the WOKEN CAS, the
 * take-back. The waiter that takes the unit may return, destroy the
 * semaphore and free it meanwhile, so the post takes a pin first and
 * drops it as its last access, and ursa_sem_destroy waits while a pin is
 * held (as the mutex's unlock: lib/mutex.c, "pins"). With all 7 pins taken
 * a post waits for one to go (ursa__pin, lib/internal.h), as destroy would
 * wait for them. Pins still held after a second (processes killed inside a
 * post to a URSA_SHARED semaphore) are dead: destroy says -EBUSY, and a
 * post that found them all taken goes on without one.
 *
 * Why no wakeup is lost. The Dekker pair: the waiter does W1 = "register"
 * then R1 = "set REG, seeing value"; the slow poster does W2 = "value++"
 * then R2 = "load __waiters", all four seq_cst, so they sit in one total
 * order (the fast poster: "REG" above). If R2
 * misses W1, then R1 sees the post; if R1 misses W2, the poster sees the
 * waiter. Between R1 and the sleep, the kernel compares __value with 0
 * under the futex bucket lock (with REG: a clear of REG counts as a
 * change), so a post either makes the sleep return
 * -EAGAIN or finds the sleeper queued. Invariant: every waiter asleep on
 * __value with units free or handed is seen to by WOKEN (the woken waiter
 * will step: take, claim or pass on when it leaves), or by a poster or
 * leaver between its CAS and its wake; a wake that finds nobody asleep
 * takes WOKEN (and HANDED) back and looks again. A woken sleeper always
 * steps or leaves: the unit it was woken for is consumed, or passed on.
 *
 * Pass-on covers sleepers woken that do not step to take — a timed-out
 * wait (ursa__block steps once more, but a post may land after that
 * step), a cancelled ring wait whose CQE still said "woken", a wait-any
 * that was woken here but took another object, or an old kernel's WAITV
 * that let one wait-any consume wakes on several entries.
 *
 * Fairness (include/ursa/sem.h). With one wake in flight a sleeper gets a
 * chance only when the woken waiter before it has stepped, while threads
 * that keep posting and waiting take the units from value; a waiter could
 * starve. So a waiter that has waited URSA_FAIR_NS (1 ms; with more than 7
 * registered, URSA_FAIR_PER_WAITER_NS each, as the mutex's: lib/mutex.c,
 * "Hand-offs") sets REQ when it steps, and the next post hands its unit
 * to the woken waiter instead: HANDED is invisible to trywait, the spin
 * and waiters that have not slept (newcomers cannot barge), and the
 * kernel's futex queue is FIFO, so the woken waiter is the longest
 * asleep. Each hand-off serves one sleeper; a requester that goes back to
 * sleep is served within one turn of the queue after its request.
 *
 * Turns. A thread that posts and waits again takes the unit back before
 * the woken waiter runs, and keeps it until its turn clock makes it yield:
 * the others get in about once per turn. With the mutex's 1 ms turn the
 * least-served thread of a 0.3 s run got 0.32-0.46 of the mean at 32
 * threads with 1 us sections (glibc 0.75-0.93); with 100 us, 0.63-0.72,
 * and 0.80-0.86 at 16 (0.60-0.72 before), for about 8% of the matrix's sem
 * throughput (bench/README.md, "The semaphore's turn"); 25 us now (below).
 * The clock changes no word: the protocol and its model are the same.
 *   The clock first ran only for posts that found an earlier post's woken
 * waiter still on its way. With short sections the woken waiter often
 * runs at once, finds the unit taken back and sleeps again, so the next
 * post wakes another and the clock stopped at almost every post: a
 * thread kept the unit for as long as the scheduler let it run (32
 * threads on 2 CPUs, empty sections: 0-1 turn yields per thread in 0.3 s,
 * the most-served thread 3 times the mean, the least-served 0.47). So a
 * post to the semaphore this thread posted last (with waiters registered
 * both times) runs the clock too; a post to another semaphore stops it,
 * as before, so a thread that posts one waiter's semaphore after
 * another's (PostgreSQL's backends), each post waking its waiter, does
 * not yield for that. Measured (6+6 alternating runs of the matrix's sem
 * rows, bench/README.md, "The semaphore's turn, post after post"; then
 * 3+3 alternating runs with the change built in): the least-served share
 * at 16-32 threads 0.54-0.76 -> 0.74-0.91 with empty sections and
 * 0.55-0.83 -> 0.84-0.90 with 100 ns (glibc 0.83-0.98); 100 ns at 8-32
 * threads 1.10-1.30x glibc -> 1.35-1.69x; the sem rows' geometric mean
 * 1.71-1.75 -> 1.80-1.84x. Its cost: 1 us at 2 threads 1.07-1.16x ->
 * 1.04-1.11x.
 *   The turn is 25 us since then (4+4 alternating runs of the sem rows
 * against 100 us, bench/README.md, "The semaphore's turn: 100 us", last
 * paragraph): with 100 ns sections the least-served share at 16 / 32
 * threads 0.86-0.92 / 0.83-0.87 -> 0.93-0.94 / 0.91-0.92, glibc's level,
 * at the same throughput; 1 us at 8 threads 1.35-1.38x -> 1.26-1.31x, the
 * rows' geometric mean 1.75-1.83 -> 1.71-1.84.
 *
 * Limits: a registered waiter that vanishes without leaving (its process
 * killed, its ring torn down with the wait in flight) leaves the count
 * raised (destroy says -EBUSY), and if it was the woken one, posts do not
 * wake: blocked threads that sleep while WOKEN or HANDED is set bound that
 * sleep (URSA_HANDED_SLEEP_MS), then step and take its place. Hand-offs
 * happen only with value 0, and a post counts a pending hand-off against
 * the maximum (a hand-off can stay pending for long: a ring waiter's CQE
 * waits for its event loop), so value + HANDED stays within
 * URSA_SEM_VALUE_MAX unless 2^31 posts land between a poster's look at
 * value and its hand-off. At most 2^21 - 1 waiters may be registered at
 * once (threads, ring ops and wait-anys together).
 */
#include "lib/internal.h"
#include "lib/trace.h"

#define S_REG	0x80000000u /* __value bit 31: waiters may be registered */
#define S_UNITS 0x7fffffffu /* __value bits 0-30: the free units */

#define S_SHARED 0x80000000u
#define S_EST 0x78000000u /* bits 27-30: the spin hint (lib/internal.h) */
#define S_EST_SHIFT 27
#define S_WOKEN	    0x04000000u /* bit 26: a woken waiter has not stepped yet */
#define S_HANDED    0x02000000u /* bit 25: one unit kept for a slept waiter */
#define S_REQ	    0x01000000u /* bit 24: a waiter asks for a hand-off */
#define S_PINS	    0x00e00000u /* bits 21-23: posts that may look again */
#define S_PIN_ONE   0x00200000u
#define S_COUNT	    0x001fffffu /* bits 0-20: registered waiters */

_Static_assert(URSA_SEM_VALUE_MAX == S_UNITS, "the units are __value's bits 0-30");
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
	/* A post's pin: that post is between its increment (or hand-off) and
	 * its last look at the semaphore; let it finish (microseconds: a
	 * futex wake) before the caller may free the memory ("Pins"). */
	return ursa__destroy_wait(&s->__waiters, S_COUNT | S_HANDED, S_PINS);
}

int ursa_sem_value(ursa_sem_t *s)
{
	if (!s)
		return -EINVAL;
	/* A unit being handed to a waiter is that waiter's already (as
	 * POSIX's sem_post gives a unit to a blocked waiter): not counted,
	 * as trywait cannot take it. */
	return (int)(ld_relaxed(&s->__value) & S_UNITS);
}

static void s_take_back(ursa_sem_t *s);

/* Waiters are registered and a unit is free or handed: unless a woken
 * waiter is on its way (WOKEN: it will step, and pass on what it does not
 * take), set WOKEN and wake one; if that wake finds nobody asleep, take
 * back. w: a recent load of __waiters. True if a woken waiter was already
 * on its way (WOKEN was set). */
static bool s_wake_one(ursa_sem_t *s, uint32_t w)
{
	do {
		if (!(w & S_COUNT))
			return false;
		if (w & S_WOKEN)
			return true;
	} while (!cas_seqcst(&s->__waiters, &w, w | S_WOKEN));
	if (ursa_k_futex_wake(&s->__value, 1, w & S_SHARED) == 0)
		s_take_back(s);
	return false;
}

/* The count went to 0 with w's deregistration: clear REG, putting a
 * hand-off given back (gb) into value in the same CAS; then look at the
 * count again (seq_cst): a waiter that registered meanwhile may have set
 * REG before our clear and slept expecting it, and posts while REG was
 * clear did not wake. Give it REG back, and a wake if units are free
 * ("REG" at the top of the file). */
static void s_unregister(ursa_sem_t *s, uint32_t gb)
{
	uint32_t v = ld_relaxed(&s->__value);
	while (!cas_seqcst(&s->__value, &v, (v & ~S_REG) + gb))
		;
	uint32_t w = __atomic_load_n(&s->__waiters, __ATOMIC_SEQ_CST);
	if (!(w & S_COUNT))
		return;
	v = __atomic_fetch_or(&s->__value, S_REG, __ATOMIC_SEQ_CST);
	if (v & S_UNITS)
		s_wake_one(s, __atomic_load_n(&s->__waiters, __ATOMIC_SEQ_CST));
}

/* Our designated wake found nobody asleep: the registered waiters are on
 * their way to take or to sleep, and none of them will clear WOKEN for
 * us. Clear it, and put a pending hand-off back into value (its claimer
 * would have been the one we woke). Posts that saw WOKEN did not wake:
 * units free and waiters registered get one plain wake. */
static void s_take_back(ursa_sem_t *s)
{
	uint32_t w = ld_relaxed(&s->__waiters);
	while (!cas_seqcst(&s->__waiters, &w, w & ~(S_WOKEN | S_HANDED)))
		;
	if (w & S_HANDED)
		__atomic_fetch_add(&s->__value, 1, __ATOMIC_SEQ_CST);
	w = __atomic_load_n(&s->__waiters, __ATOMIC_SEQ_CST);
	if ((w & S_COUNT) && (__atomic_load_n(&s->__value, __ATOMIC_SEQ_CST) & S_UNITS))
		ursa_k_futex_wake(&s->__value, 1, w & S_SHARED);
}

/* A waiter asked for a hand-off: keep this post's unit for the woken
 * waiter (HANDED). False: no request, or a unit is free or already handed
 * (post into value). w: a recent load of __waiters. */
static bool s_hand_off(ursa_sem_t *s, uint32_t w)
{
	if (ld_relaxed(&s->__value) & S_UNITS)
		return false;
	do {
		if ((w & (S_REQ | S_HANDED)) != S_REQ || !(w & S_COUNT))
			return false;
	} while (!cas_seqcst(&s->__waiters, &w, (w & ~S_REQ) | S_HANDED | S_WOKEN));
	if (!(w & S_WOKEN) && ursa_k_futex_wake(&s->__value, 1, w & S_SHARED) == 0)
		s_take_back(s);
	return true;
}

/* Add one to value (REG kept), unless that would pass the maximum. *v: a
 * recent load of value. reg: fail (false, *v loaded) if REG is set. */
static inline __attribute__((always_inline)) int s_add(ursa_sem_t *s, uint32_t *v, bool reg)
{
	do {
		if (reg && (*v & S_REG))
			return 1;
		/* A unit kept for a waiter (HANDED) counts: its waiter may
		 * give it back into value (a wait-any that took another
		 * object, a cancel), which must not pass the maximum. */
		uint32_t u = *v & S_UNITS;
		if (u >= URSA_SEM_VALUE_MAX - 1 &&
		    (u >= URSA_SEM_VALUE_MAX || (ld_relaxed(&s->__waiters) & S_HANDED)))
			return -EOVERFLOW;
	} while (!cas_seqcst(&s->__value, v, *v + 1));
	return 0;
}

/* The post with waiters registered (REG): pinned, so that the waiter it
 * serves may return and destroy the semaphore meanwhile ("Pins"). */
static __attribute__((noinline)) int s_post_slow(ursa_sem_t *s)
{
	uint32_t pin = ursa__pin(&s->__waiters, S_PINS, S_PIN_ONE);
	uint32_t w = ld_relaxed(&s->__waiters);
	int r = 0;
	if (unlikely(w & S_REQ) && s_hand_off(s, w)) {
		ursa__turn_stop();
		goto out;
	}
	uint32_t v = ld_relaxed(&s->__value);
	r = s_add(s, &v, false);
	if (r)
		goto out;
	/* seq_cst after the seq_cst CAS: the Dekker pair with the waiter's
	 * registration (see the top of this file). */
	w = __atomic_load_n(&s->__waiters, __ATOMIC_SEQ_CST);
	if (!(w & S_COUNT))
		goto out;
	/* Posting while an earlier post's woken waiter has not run yet, or
	 * posting again the semaphore this thread posted last while waiters
	 * are registered (it took the unit back in between: the waiters it
	 * woke lost it to this thread): after a while of this, let them run
	 * (lib/mutex.c, "Turns"; "Turns" above). A post that wakes one on a
	 * semaphore other than the one posted last starts the clock afresh:
	 * a semaphore per waiter (PostgreSQL's backends) wakes at nearly
	 * every post, and a thread that posts one waiter's semaphore after
	 * another's is not keeping anyone out. */
	bool again = ursa__turn.posted == s;
	ursa__turn.posted = s;
	bool yield = s_wake_one(s, w) || again;
	ursa__unpin(&s->__waiters, pin);
	if (yield)
		ursa__let_woken_run_ns(URSA_SEM_TURN_NS);
	else
		ursa__turn_stop();
	return 0;
out:
	ursa__unpin(&s->__waiters, pin);
	return r;
}

int ursa_sem_post(ursa_sem_t *s)
{
	if (!s)
		return -EINVAL;
	/* Nobody registered (REG clear): one CAS, and not a look after it. */
	uint32_t v = ld_relaxed(&s->__value);
	int r = s_add(s, &v, true);
	return r <= 0 ? r : s_post_slow(s);
}

/* __waiters v after w deregisters (count - 1): it clears WOKEN once it has
 * slept (it may be the woken one) and its own REQ; with nobody left
 * registered WOKEN and REQ go, and HANDED (the caller gives it back). */
static inline uint32_t s_left(uint32_t v, const struct ursa_waiter *w)
{
	uint32_t n = v - 1;
	if (w->slept)
		n &= ~S_WOKEN;
	if (w->aux & URSA_W_REQ)
		n &= ~S_REQ;
	return (n & S_COUNT) ? n : n & ~(S_WOKEN | S_REQ | S_HANDED);
}

static inline void s_forget(struct ursa_waiter *w)
{
	w->registered = 0;
	w->aux &= ~(URSA_W_REQ | URSA_W_STAMPED);
}

/* After a waiter that may have consumed a wake (it slept) took a unit,
 * claimed one or gave up: a hand-off still pending needs a woken waiter;
 * units free with others registered are passed on (posts that saw its
 * WOKEN did not wake). left: __waiters after it deregistered. */
static void s_pass_on(ursa_sem_t *s, uint32_t left)
{
	if ((left & S_COUNT) &&
	    ((left & S_HANDED) || (__atomic_load_n(&s->__value, __ATOMIC_SEQ_CST) & S_UNITS)))
		s_wake_one(s, left);
}

/* Deregister w, after it took a unit or gave up (seq_cst: loads of value
 * after it see every post that saw WOKEN set). A hand-off left with
 * nobody to claim it goes back into value; a waiter that has slept passes
 * on. */
static void s_leave(ursa_sem_t *s, struct ursa_waiter *w)
{
	uint32_t v = ld_relaxed(&s->__waiters), n;
	do
		n = s_left(v, w);
	while (!cas_seqcst(&s->__waiters, &v, n));
	s_forget(w);
	if (!(n & S_COUNT))
		s_unregister(s, (v & S_HANDED) ? 1 : 0); /* and give a hand-off back */
	else if (w->slept)
		s_pass_on(s, n);
}

/* A registered waiter that has slept claims a pending hand-off: the unit
 * is its own, in the CAS that deregisters it. 0 or -EBUSY (none). */
static int s_claim(ursa_sem_t *s, struct ursa_waiter *w)
{
	uint32_t v = ld_relaxed(&s->__waiters), n;
	do {
		if (!(v & S_HANDED))
			return -EBUSY;
		n = s_left(v & ~S_HANDED, w);
	} while (!cas_seqcst(&s->__waiters, &v, n));
	s_forget(w);
	if (!(n & S_COUNT))
		s_unregister(s, 0);
	else
		s_pass_on(s, n);
	return 0;
}

static int sem_take(void *obj, struct ursa_waiter *w)
{
	ursa_sem_t *s = obj;
	uint32_t v = ld_relaxed(&s->__value);
	while (v & S_UNITS) {
		if (cas_acq(&s->__value, &v, v - 1)) {
			if (w->registered)
				s_leave(s, w);
			return 0;
		}
	}
	/* Only a registered waiter that has slept may claim a hand-off:
	 * newcomers (trywait, the spin, a first step) cannot barge. */
	if (w->registered && w->slept && s_claim(s, w) == 0)
		return 0;
	return -EBUSY;
}

static int sem_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	ursa_sem_t *s = obj;
	bool asked = false, req = false;
	for (;;) {
		if (sem_take(s, w) == 0)
			return URSA_STEP_DONE;
		if (w->registered && !w->slept)
			break; /* registered in this step; value went back to 0 */
		if (!asked) {
			/* The first registration starts the waiter's clock;
			 * the time to wait grows with the queue (lib/mutex.c,
			 * "Hand-offs"). */
			uint32_t nw = ld_relaxed(&s->__waiters) & S_COUNT;
			req = ursa__waited_fair(w, nw) && w->slept;
			asked = true;
		}
		/* Register, and once we have slept clear WOKEN (we may be the
		 * woken waiter: posts wake again), and ask for a hand-off, in
		 * one seq_cst CAS; then look at the count once more (seq_cst):
		 * the waiter's half of the Dekker pair. A hand-off that comes
		 * meanwhile is claimed first. */
		uint32_t v = ld_relaxed(&s->__waiters), n;
		bool claim = false;
		do {
			claim = (v & S_HANDED) && w->registered && w->slept;
			if (claim)
				break;
			n = v + (w->registered ? 0 : 1);
			if (w->slept)
				n &= ~S_WOKEN;
			if (req && !(v & S_HANDED))
				n |= S_REQ;
		} while (!cas_seqcst(&s->__waiters, &v, n));
		if (claim)
			continue;
		w->registered = 1;
		if ((n & S_REQ) && !(v & S_REQ))
			w->aux |= URSA_W_REQ;
		/* REG, after the registration ("REG" at the top): a post
		 * before it added a unit we see here; one after goes slow. */
		uint32_t x = __atomic_load_n(&s->__value, __ATOMIC_SEQ_CST);
		if (!(x & S_REG))
			x = __atomic_fetch_or(&s->__value, S_REG, __ATOMIC_SEQ_CST);
		if (!(x & S_UNITS))
			break;
	}
	/* A blocked thread bounds a sleep that waits on someone else's turn
	 * (the woken waiter, a hand-off's claimer): if that one vanished, it
	 * steps and takes its place. */
	out->bound_us =
		(ld_relaxed(&s->__waiters) & (S_WOKEN | S_HANDED)) ? URSA_HANDED_SLEEP_MS * 1000u : 0;
	out->addr = &s->__value;
	out->val = S_REG;
	out->shared = s_shared(s);
	return URSA_STEP_WAIT;
}

static int sem_abandon(void *obj, struct ursa_waiter *w)
{
	ursa_sem_t *s = obj;
	if (!w->registered)
		return 0;
	s_leave(s, w); /* and pass on a wake it may have consumed (top of the file) */
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
 * lock-like semaphore under contention): it counts as paying off.
 *   It looks at __value after each yield. Looking after every 8th, as a
 * lock's waiter does (ursa_k_lock_spin), ran a lock-like semaphore with
 * empty sections 1.3-2x faster, but two threads passing a turn through two
 * semaphores 3x slower on 2 CPUs and 7x on one: the partner that posts
 * runs during the spinner's yields, and the spinner does not look until
 * the 8th (bench/README.md, "The semaphore looks less often").
 * A semaphore is a signal first. */
int ursa__sem_spin(ursa_sem_t *s, bool timed)
{
	struct ursa_waiter none = {0};
	uint32_t w = ld_relaxed(&s->__waiters);
	unsigned est = ursa__spin_est((w & S_EST) >> S_EST_SHIFT);
	int budget = ursa__spin_budget(est);
	bool busy = false; /* a unit was there, and another waiter took it */
	for (int i = 0;; i++) {
		if (ld_relaxed(&s->__value) & S_UNITS) {
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
static bool sem_is_shared(const void *obj)
{
	return s_shared(obj);
}

const struct ursa_step_ops ursa__sem_ops = {
	.name = "sem",
	.step = sem_step,
	.abandon = sem_abandon,
	.take = sem_take,
	.shared = sem_is_shared,
};

int ursa_sem_wait_async(struct io_uring *r, ursa_sem_t *s, struct ursa_op *op)
{
	return ursa__op_start(r, op, &ursa__sem_ops, s, NULL, 0);
}
