/*
 * tests/models/mutex.pml — the 4-byte mutex of lib/mutex.c (Drepper's
 * three-state mutex plus HANDED hand-off and the REQ bit), with blocking
 * lockers (ursa_mutex_lock / _trylock / _timedlock over ursa__block in
 * lib/time.c) and ring lockers (ursa_mutex_lock_async: lib/async.c
 * op_advance / ursa_handle_cqe) on the same word.
 *
 * Checked (tests/models/run.sh): mutual exclusion (assert in the critical
 * section), no lost wakeup and no deadlock (no invalid end state: every
 * locker finishes its NITER operations), and at the end the word is FREE
 * with nobody asleep (a HANDED lock is never stranded).
 *
 * Memory model: the protocol lives in one word and every change is a CAS
 * on it, so coherence alone orders them; sequential consistency adds
 * nothing the C code relies on.
 *
 * Word (SHARED, bit 31, is constant and left out): bits 0-1 state, bit 2 REQ.
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
#ifndef HANDOFF_AFTER
#define HANDOFF_AFTER 2	/* URSA_HANDOFF_AFTER */
#endif

#define FREE 0
#define LOCKED 1
#define CONTENDED 2
#define HANDED 3
#define REQ 4
#define STATE(v) ((v) & 3)

#define DONE 0
#define WAIT 1

byte m;		/* m->__word */
byte inside;	/* holders now: must never exceed 1 */

/*
 * Every CAS retry loop in lib/mutex.c (load v; compute from v; CAS v ->
 * new; on failure reload and retry) has no side effect in its failed
 * rounds, so it is modelled as ONE atomic read-modify-write at the moment
 * of its successful CAS (where v == m): the same reachable behaviours,
 * many fewer states. Loads that lead to no CAS (the WAIT value read) are
 * atomic reads in the same way.
 */

/* ursa__mutex_step (lib/mutex.c): r = DONE (taken), or WAIT with `want`,
 * the value to sleep on. losses is kept only up to HANDOFF_AFTER - 1: the
 * step only asks whether losses + 1 >= HANDOFF_AFTER. */
#define mutex_step(r)								\
	atomic {								\
		if								\
		:: STATE(m) == FREE ->						\
			m = (slept -> CONTENDED : LOCKED); r = DONE		\
		:: STATE(m) == HANDED && slept ->	/* claim hand-off */	\
			m = CONTENDED; r = DONE					\
		:: else ->							\
			if							\
			:: STATE(m) == HANDED -> want = m /* not ours: sleep */	\
			:: else ->						\
				want = (m & REQ) | CONTENDED;			\
				if						\
				:: slept && losses + 1 >= HANDOFF_AFTER ->	\
					want = want | REQ			\
				:: else						\
				fi						\
			fi;							\
			m = want;						\
			if							\
			:: slept && losses + 1 < HANDOFF_AFTER -> losses++	\
			:: else							\
			fi;							\
			r = WAIT						\
		fi								\
	}

/* ursa__mutex_unlock_fast + ursa__mutex_unlock_slow (lib/mutex.c). */
#define mutex_unlock()								\
	atomic {								\
		assert(STATE(m) == LOCKED || STATE(m) == CONTENDED); /* EPERM */\
		if								\
		:: STATE(m) == LOCKED -> m = FREE; uw = 0  /* fast: 1 -> 0 */	\
		:: STATE(m) == CONTENDED && (m & REQ) -> m = HANDED; uw = 2	\
		:: STATE(m) == CONTENDED && !(m & REQ) -> m = FREE; uw = 1	\
		fi								\
	};									\
	if									\
	:: uw == 1 -> futex_wake(0, 1, cnt, tmp)				\
	:: uw == 2 ->								\
		futex_wake(0, 1, cnt, tmp);					\
		if								\
		:: cnt == 0 ->	/* nobody asleep to take it: release it */	\
			atomic {						\
				if						\
				:: STATE(m) == HANDED -> m = FREE; uw = 1	\
				:: else -> uw = 0 /* a waiter claimed it */	\
				fi						\
			};							\
			if							\
			:: uw == 1 -> futex_wake(0, 1, cnt, tmp)		\
			:: else							\
			fi							\
		:: else								\
		fi								\
	:: else									\
	fi;									\
	uw = 0;									\
	cnt = 0

#define critical_section()							\
	atomic { inside++; assert(inside == 1) };				\
	inside--

/*
 * A locker. ring = false: a thread (ursa_mutex_lock, _trylock, _timedlock).
 * ring = true: an io_uring op (ursa_mutex_lock_async); its FUTEX_WAIT is the
 * same compare-and-queue, its completion runs the same step (handle_cqe ->
 * op_advance), and a cancel or deadline can end it at any CQE.
 * may_stop: this locker may give up (deadline / cancel), at most once.
 */
proctype Locker(bool ring; bool may_stop; bool may_try; byte spur)
{
	byte want, cnt, tmp, r, uw, losses, i;
	byte stops = (may_stop -> 1 : 0);
	bool slept, got;

	for (i : 1 .. NITER) {
		/* Fast path: the inline ursa__mutex_lock_fast CAS (0 -> 1),
		 * or ursa_mutex_trylock (that CAS, -EBUSY on failure). The
		 * spin in mutex_lock_slow is more such CASes: the same
		 * behaviour at a later moment. A ring op starts with a step
		 * (ursa_mutex_lock_async -> op_start/op_launch -> op_advance). */
		if
		:: !ring ->
			atomic {
				if
				:: m == FREE -> m = LOCKED; got = true
				:: else
				fi
			};
			if
			:: got -> goto locked
			:: !got && may_try -> goto next	/* trylock: -EBUSY */
			:: !got -> skip			/* lock / timedlock */
			fi
		:: ring
		fi;
		/* ursa__block (lib/time.c) / op_advance + ursa_handle_cqe
		 * (lib/async.c): step; on WAIT sleep on (m, want) — futex
		 * syscall or FUTEX_WAIT SQE; after any return from that sleep
		 * (woken, -EAGAIN, spurious) slept = 1 and step again. */
		do
		:: mutex_step(r);
			if
			:: r == DONE -> got = true; break
			:: else
			fi;
			/* ursa__block: deadline already past before sleeping;
			 * op_advance: F_CANCEL set, or deadline past, before a
			 * re-arm. ursa__mutex_abandon undoes nothing. */
			if
			:: stops > 0 -> stops--; break
			:: true
			fi;
			futex_wait(0, m, want, (stops > 0), spur, r);
			slept = true;
			want = 0;
			if
			:: r == R_STOPPED ->
				/* -ETIMEDOUT (ursa__block) / CQE -ECANCELED
				 * (linked timeout or cancel): one last step
				 * (a hand-off may be ours), else abandon. */
				stops--;
				mutex_step(r);
				got = (r == DONE);
				break
			:: else
			fi
		od;
		slept = false; losses = 0; want = 0; r = 0;
locked:
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
		 * ring locker that may be cancelled (or time out); and, with
		 * NLOCKERS 3, a blocking timed locker. Spurious returns are
		 * given to one of them (SPUR, default 1). */
		run Locker(false, false, true, 0);
		run Locker(true, true, false, SPUR);
		if
		:: NLOCKERS > 2 -> run Locker(false, true, false, 0)
		:: else
		fi
	}
	_nr_pr == 1;	/* every locker finished: nobody asleep for ever */
	assert(m == FREE);
	assert(len(fq[0]) == 0);
	assert(inside == 0);
}
