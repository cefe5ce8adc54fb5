/*
 * tests/models/mutex.pml — the 4-byte mutex of lib/mutex.c: a lock bit, the
 * SLEEPERS mark, the designated-waker bit WOKEN, the HANDED hand-off, the
 * REQ bit and the COUNT of registered waiters, with blocking lockers
 * (ursa_mutex_lock / _trylock / _timedlock over ursa__block in lib/time.c),
 * a ring locker (ursa_mutex_lock_async: lib/async.c) that may be cancelled,
 * and (-DANY) a blocking wait-any over the mutex and another object that
 * may take the other object instead, passing on (mutex_release).
 *
 * Checked (tests/models/run.sh): mutual exclusion (assert in the critical
 * section); no sleeper stranded and no deadlock (no invalid end state:
 * every locker finishes its NITER operations — a waiter asleep with nobody
 * to wake it blocks for ever); at the end the word is 0 (no registration,
 * mark or request leaked, no hand-off stranded) with nobody asleep; and
 * that a hand-off made for a requester ends only in a claim by a waiter
 * that still waits, or in a take-back (assert on `reqd`).
 *
 * The wake economy is the point of this protocol: an unlock wakes only with
 * SLEEPERS set and WOKEN clear, so a woken waiter that has not run yet
 * keeps every other unlock out of the kernel. Whether that strands anyone
 * is what this model answers, with -DNO_BOUND too: there, the blocked
 * waiters' bounded sleep (a sleep on a HANDED or WOKEN word ends after
 * URSA_HANDED_SLEEP_MS, lib/time.c) is not used as an escape, so progress
 * must come from the protocol alone. With it, the bounded sleep is a sleep
 * that may end at any time.
 *
 * When a waiter asks for a hand-off (REQ): after it has waited URSA_FAIR_NS
 * (or URSA_FAIR_PER_WAITER_NS per registered waiter, if longer), or (ring)
 * lost URSA_HANDOFF_AFTER races. Modelled as a free choice at any step of a
 * waiter that has slept (every timing is explored); once it asks it keeps
 * asking at each step until it takes the lock or gives up, as the C code
 * does (m_wants_handoff: URSA_W_REQ makes it stick, since the scaled time
 * can grow with the queue).
 *
 * History: an earlier model found a ring newcomer stranded on HANDED (fixed
 * in fd48f8a; tests/fault/mutex_handoff_repro.c). Deliberately broken
 * variants this model rejects (try them with -DBREAK=n): 1 a slept waiter
 * does not clear WOKEN; 2 no fix-up when the designated wake finds nobody;
 * 3 a taker with others registered does not set SLEEPERS; 4 wait-any's
 * pass-on claims and unlocks a HANDED lock (the issue 12 defect: with -DANY
 * the requester's hand-off is given away — caught by the hand-off assert);
 * 5 the hand-off leaves LOCKED clear, as before URSA_0.2, under the inline
 * bit-test-and-set (a newcomer takes the handed-off mutex); 7 a ring locker
 * counts as having slept from its first step, as before (a newcomer ring op
 * claims a hand-off: the assert on the ghost `fresh`, a locker that has not
 * registered in this acquisition).
 *
 * Pins: an unlock that wakes takes a pin (PINS, bits 5-7) in its release
 * and drops it in its last step after the wake (fix-up or take-back), so
 * destroy, which waits while the mutex is free with a pin, never lets the
 * memory go while an unlock may still touch it. The model checks that the
 * pins are protocol-neutral (every run ends with m == 0, so no pin leaks;
 * no transition reads them but the unlock's wait below). An unlock that
 * will wake and finds all pins taken waits, holding the mutex, for one to
 * go (lib/mutex.c; pins that stay a second, dead, are not modelled). With
 * 3 lockers the 7 are never all taken; -DPINCAP=1 makes a second waking
 * unlock meet its one pin taken: no deadlock comes of the wait. That no
 * unlock touches a destroyed mutex is tests/fault/unlock_destroy.c's check
 * (and the sem and rwlock models' PINCAP runs').
 *
 * Not modelled: the unlocker's occasional sched_yield() after its release
 * ("Turns" in lib/mutex.c). It changes no word and no futex queue, and the
 * model already lets any process be delayed at any point.
 *
 * Memory model: the protocol lives in one word and every change is a CAS
 * or an atomic RMW on it, so coherence alone orders them; sequential
 * consistency adds nothing the C code relies on. Every CAS retry loop has
 * no side effect in its failed rounds and is modelled as one atomic step.
 *
 * Word (SHARED, bit 31, is constant and left out): bit 0 LOCKED, 1
 * SLEEPERS, 2 WOKEN, 3 HANDED, 4 REQ, 5-7 PINS, bits 8+ COUNT. HANDED is always set
 * with LOCKED (INV, checked after every change of either): the inline lock
 * is a bit-test-and-set of LOCKED, which takes the mutex iff LOCKED was
 * clear and changes nothing otherwise, i.e. the newcomer's take below.
 */
#include "futex.pml"

#ifndef NLOCKERS
#define NLOCKERS 3
#endif
#ifndef NITER
#define NITER 2
#endif
#ifndef SPUR
#define SPUR 1
#endif
#ifndef BREAK
#define BREAK 0
#endif
#ifdef NO_RING
#define RING false	/* the second locker blocks instead */
#else
#define RING true
#endif
#ifdef NO_BOUND
#define BOUND false
#else
#define BOUND true
#endif
#ifdef ANY
#define ANY_OTHER 1	/* times the wait-any may take its other object */
#else
#define ANY_OTHER 0
#endif

#define L 1
#define S 2
#define W 4
#define H 8
#define REQ 16
#define PIN_ONE 32	/* bits 5-7: PINS, unlocks between release and last look */
#define PINS 224
#ifndef PINCAP
#define PINCAP 7	/* the 3 bits' 7 pins */
#endif
/* The unlock's wait for a pin (lib/mutex.c): it would wake (REQ, or
 * SLEEPERS without WOKEN) and all PINCAP pins are taken. */
#define PIN_FREE()								\
	(!((TIDY(m & ~L) & REQ) || ((TIDY(m & ~L) & S) && !(TIDY(m & ~L) & W))) || \
	 (m & PINS) < PINCAP * PIN_ONE)
#define CNT_ONE 256
#define HELD (L | H)
/* A handed-off mutex keeps LOCKED, so HELD is LOCKED. */
#define INV() assert(BREAK == 5 || !(m & H) || (m & L))
/* What a take finds taken: the newcomer's bit-test-and-set (unregistered,
 * not slept) looks at LOCKED alone, every other take at HELD; the same while
 * INV holds. -DBREAK=5: the old hand-off, HANDED without LOCKED. */
#define TAKEN (BREAK == 5 && !registered && !slept -> L : HELD)
#define CNT(v) ((v) & ~255)
/* m_tidy: with nobody registered nobody sleeps or asks. */
#define TIDY(v) (CNT(v) > 0 -> (v) : ((v) & ~(S | W | REQ)))

#define DONE 0
#define WAIT 1

int m;		/* m->__word */
byte inside;	/* holders now: must never exceed 1 */
bool reqd;	/* the last unlock handed off for a requester still waiting */

/* ursa__mutex_take, as one atomic step: the free lock, or a hand-off to
 * claim (registered or slept waiters only). ok = taken. */
#define CAN_CLAIM ((m & H) && (registered || slept))
#define mutex_take(ok)								\
	atomic {								\
		if								\
		:: (m & TAKEN) && !CAN_CLAIM -> ok = false			\
		:: else ->							\
			assert(!(m & H) || registered || slept);		\
			/* newcomers cannot take a handed-off mutex */	\
			assert(!(m & H) || !fresh);				\
			n = ((m - (registered -> CNT_ONE : 0)) & ~H) | L;	\
			if							\
			:: registered && slept && BREAK != 1 -> n = n & ~W			\
			:: else							\
			fi;							\
			if							\
			:: rq -> n = n & ~REQ					\
			:: else							\
			fi;							\
			if							\
			:: (registered || (m & H)) && CNT(n) > 0 && BREAK != 3 -> \
				n = n | S					\
			:: else							\
			fi;							\
			m = TIDY(n); n = 0; reqd = false;			\
			registered = false; rq = false; ok = true;		\
			INV()							\
		fi								\
	}

/* mutex_step: taken (r = DONE), or announce and say what to sleep on
 * (r = WAIT, `want`, `bnd`: a blocking waiter bounds a sleep on a HANDED or
 * WOKEN word). The take and the announcement are one atomic step: a
 * failed take changes nothing. */
#define mutex_step(r)								\
	atomic {								\
		if								\
		:: !(m & HELD) || CAN_CLAIM ->					\
			mutex_take(ok); assert(ok); ok = false; r = DONE	\
		:: else ->							\
			n = m | S;						\
			if							\
			:: !registered -> n = n + CNT_ONE			\
			:: else							\
			fi;							\
			if							\
			:: registered && slept && BREAK != 1 -> n = n & ~W			\
			:: else							\
			fi;							\
			if	/* once a waiter asks, it asks at each step */	\
			:: !(m & H) && slept && rq -> n = n | REQ		\
			:: !(m & H) && slept && !rq -> n = n | REQ; rq = true	\
			:: (m & H) || !slept || !rq -> skip			\
			fi;							\
			m = n; want = n; n = 0; INV();				\
			registered = true; fresh = false;			\
			bnd = ((want & (H | W)) && !ring && BOUND);		\
			r = WAIT						\
		fi								\
	}

/* After a designated wake: if it found nobody (fx0 = 1), m_fixup(pin),
 * whose last step drops the unlock's pin (PIN_ONE or 0); if it found a
 * sleeper (fx0 = 0), the pin's drop alone (ursa__unpin, one subtraction). */
#define fixup(pin)								\
	do									\
	:: atomic {								\
		if								\
		:: fx0 == 1 && (m & W) && !(m & HELD) && (m & S) ->		\
			m = m & ~S; fx = 2					\
		:: fx0 == 1 && (m & W) && !((m & W) && !(m & HELD) && (m & S)) ->	\
			m = TIDY((m - (pin)) & ~W); fx = 1			\
		:: fx0 != 1 || !(m & W) -> m = m - (pin); fx = 1		\
		fi								\
	   };									\
		if								\
		:: fx == 1 -> break						\
		:: else ->							\
			futex_wake(0, 1, cnt, tmp);				\
			if							\
			:: cnt > 0 -> fx0 = 0					\
			:: else							\
			fi							\
		fi								\
	od;									\
	fx = 0; fx0 = 0; cnt = 0

/* m_wake_designated(unpin): wake 1 after setting WOKEN; nobody: fix up;
 * an unlock's wake drops its pin in the same last step. */
#define wake_designated(pin)							\
	futex_wake(0, 1, cnt, tmp);						\
	if									\
	:: cnt == 0 && BREAK != 2 -> cnt = 0; fx0 = 1; fixup(pin)		\
	:: cnt == 0 && BREAK == 2 -> cnt = 0; fx0 = 0; fixup(pin)		\
	:: cnt > 0 && (pin) > 0 -> cnt = 0; fx0 = 0; fixup(pin)		\
	:: cnt > 0 && (pin) == 0 -> cnt = 0					\
	fi

/* m_take_back(force, pin): free a HANDED lock nobody will claim; the same
 * step drops the unlock's pin (with a pin, force is false: no wake after). */
#define take_back(force, pin)							\
	atomic {								\
		if								\
		:: (m & H) && (force || CNT(m) == 0) ->				\
			n = TIDY((m - (pin)) & ~(H | L));			\
			if							\
			:: CNT(n) > 0 -> n = (n & ~S) | W; uw = 1		\
			:: else -> uw = 0					\
			fi;							\
			m = n; n = 0; reqd = false; INV()			\
		:: else -> m = m - (pin); uw = 0				\
		fi								\
	};									\
	if									\
	:: uw == 1 -> assert((pin) == 0); uw = 0; wake_designated(0)	\
	:: else									\
	fi

/* mutex_abandon: deregister (a requester withdraws REQ); a hand-off kept
 * for us, or for nobody, is taken back. */
#define mutex_abandon()								\
	if									\
	:: registered ->							\
		atomic {							\
			m = TIDY((m - CNT_ONE) & ~(rq -> REQ : 0));		\
			uw = ((m & H) && (rq || CNT(m) == 0) -> 1 : 0);		\
			registered = false; rq = false				\
		};								\
		if								\
		:: uw == 1 -> uw = 0; take_back(true, 0)			\
		:: else								\
		fi								\
	:: else									\
	fi

/* mutex_pass_on (wait-any leaving without the mutex, having slept). */
#define pass_on()								\
	atomic {								\
		if								\
		:: CNT(m) == 0 -> uw = 0					\
		:: CNT(m) > 0 && (m & H) && BREAK != 4 -> uw = 3		\
		:: CNT(m) > 0 && (m & H) && BREAK == 4 ->			\
			/* the old code: claim, then unlock */			\
			assert(!reqd);						\
			m = (m & ~H) | L; uw = 4				\
		:: CNT(m) > 0 && (m & L) && !(m & H) ->			\
			if							\
			:: m & W -> m = (m & ~W) | S				\
			:: else							\
			fi;							\
			uw = 0							\
		:: CNT(m) > 0 && !(m & HELD) -> m = (m & ~S) | W; uw = 2	\
		fi								\
	};									\
	if									\
	:: uw == 3 -> uw = 0; futex_wake(0, 1, cnt, tmp); cnt = 0		\
	:: uw == 2 -> uw = 0; wake_designated(0)				\
	:: uw == 4 -> uw = 0; mutex_unlock()					\
	:: uw == 0								\
	fi

/* ursa__mutex_unlock_fast + ursa__mutex_unlock_slow. */
#define mutex_unlock()								\
	atomic {								\
		/* an unlock that will wake waits, holding the mutex, while	\
		 * all PINCAP pins are taken */				\
		PIN_FREE() ->							\
		assert((m & HELD) == L);	/* else -EPERM */		\
		n = TIDY(m & ~L);						\
		/* an unlock that wakes takes a pin (never more than 2 here	\
		 * with 3 lockers; -DPINCAP=1 makes the second wait) */	\
		if								\
		:: n & REQ ->							\
			m = ((n & ~(S | REQ)) | H | (BREAK == 5 -> 0 : L)) + PIN_ONE; \
			uw = 2; reqd = true					\
		:: !(n & REQ) && (n & S) && !(n & W) -> m = ((n & ~S) | W) + PIN_ONE; uw = 1 \
		:: else -> m = n; uw = 0					\
		fi;								\
		assert((m & PINS) != PINS);					\
		n = 0; INV()							\
	};									\
	/* After the release the unlocker touches the word only while its \
	 * pin is there (destroy waits for the pins: POSIX lets the	\
	 * mutex be destroyed and freed as soon as it is unlocked). */	\
	if									\
	:: uw == 1 -> uw = 0; wake_designated(PIN_ONE)			\
	:: uw == 2 ->								\
		uw = 0;								\
		futex_wake(0, 1, cnt, tmp);					\
		if								\
		:: cnt == 0 -> cnt = 0; take_back(false, PIN_ONE)		\
		:: else -> cnt = 0; fx0 = 0; fixup(PIN_ONE)			\
		fi								\
	:: uw == 0								\
	fi

#define critical_section()							\
	atomic { inside++; assert(inside == 1) };				\
	inside--

/*
 * A locker. ring = false: a thread (ursa_mutex_lock, _trylock, _timedlock,
 * or with any = true a wait-any). ring = true: an io_uring op; its
 * FUTEX_WAIT is the same compare-and-queue, its completion runs the same
 * step, and a cancel or deadline can end it at any CQE.
 * may_stop: this locker may give up (deadline / cancel), at most once.
 */
proctype Locker(bool ring; bool may_stop; bool may_try; byte spur; byte other)
{
	int want, n;
	byte cnt, tmp, r, uw, fx, fx0, i;
	byte stops = (may_stop -> 1 : 0);
	bool slept, got, ok, registered, bnd, rq;
	bool fresh;	/* ghost: not registered yet in this acquisition */

	for (i : 1 .. NITER) {
		/* -DBREAK=7: a ring op counts as having slept from its first
		 * step (before: it took a handed-off mutex as a newcomer). */
		slept = (BREAK == 7 && ring);
		fresh = true;
		if
		:: !ring ->
			/* the inline CAS / trylock_slow / the newcomer spin:
			 * takes by an unregistered waiter */
			mutex_take(got);
			if
			:: got -> goto locked
			:: !got && may_try -> goto next	/* trylock: -EBUSY */
			:: !got -> skip
			fi
		:: ring -> skip
		fi;
		do
		:: /* wait-any: the other object is ours first (its try
		    * runs in index order); release the mutex. */
			other > 0 && !got ->
			other--;
			mutex_abandon();
			if
			:: slept -> pass_on()
			:: else
			fi;
			break
		:: true ->
			mutex_step(r);
			if
			:: r == DONE -> got = true; break
			:: else
			fi;
			if
			:: stops > 0 -> stops--; mutex_abandon(); break
			:: true
			fi;
			/* other > 0: the other object's wake may end the sleep */
			futex_wait(0, m, want, (stops > 0 || bnd || other > 0), spur, r);
			slept = true;
			want = 0;
			if
			:: r == R_STOPPED && (bnd || other > 0) ->
				bnd = false	/* the bound, or the other object */
			:: r == R_STOPPED && !bnd && other == 0 ->
				/* -ETIMEDOUT / CQE -ECANCELED: one last step
				 * (a hand-off may be ours), else abandon. */
				stops--;
				mutex_step(r);
				if
				:: r == DONE -> got = true
				:: else -> mutex_abandon()
				fi;
				break
			:: r != R_STOPPED -> bnd = false
			fi
		od;
		slept = false; want = 0; r = 0; bnd = false;
locked:
		assert(!registered && !rq);
		if
		:: got ->
			got = false;
			critical_section();
			mutex_unlock()
		:: else
		fi;
next:
		skip
	}
}

init {
	atomic {
		/* A blocking locker that never gives up and may trylock; a
		 * ring locker that may be cancelled (or time out); with
		 * NLOCKERS 3 a blocking timed locker, or (-DANY) a blocking
		 * wait-any over the mutex and another object. */
		run Locker(false, false, true, 0, 0);
		run Locker(RING, true, false, SPUR, 0);
		if
		:: NLOCKERS > 2 -> run Locker(false, ANY_OTHER == 0, false, 0, ANY_OTHER)
		:: else
		fi
	}
	_nr_pr == 1;	/* every locker finished: nobody asleep for ever */
	assert(m == 0);	/* free, no marks, no REQ, COUNT 0 */
	assert(len(fq[0]) == 0);
	assert(inside == 0);
}
