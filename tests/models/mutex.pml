/*
 * tests/models/mutex.pml — the 4-byte mutex of lib/mutex.c: Drepper's
 * three-state mutex plus the HANDED hand-off state, the REQ bit and the
 * COUNT of registered waiters, with blocking lockers (ursa_mutex_lock /
 * _trylock / _timedlock over ursa__block in lib/time.c) and ring lockers
 * (ursa_mutex_lock_async: lib/async.c op_advance / ursa_handle_cqe) on the
 * same word.
 *
 * Checked (tests/models/run.sh): mutual exclusion (assert in the critical
 * section), no lost wakeup and no deadlock (no invalid end state: every
 * locker finishes its NITER operations), and at the end the word is 0 —
 * FREE, no REQ, COUNT 0 (no registration leaked, a HANDED lock never
 * stranded) — with nobody asleep.
 *
 * The bounded sleep (struct ursa_wait.bounded: a blocking waiter that
 * sleeps on HANDED wakes after URSA_HANDED_SLEEP_MS and steps again,
 * lib/time.c) is modelled as a sleep that may end at any time and goes on
 * stepping. Ring waiters have no such bound (lib/async.c arms a plain
 * FUTEX_WAIT). With -DNO_BOUND the bound is left out for blocking waiters
 * too, to see whether progress depends on it.
 *
 * Found by this model (and fixed in lib/mutex.c since): a ring newcomer
 * could sleep for ever on a HANDED lock. A ring op that had set REQ was
 * cancelled and abandoned (COUNT 0, REQ left behind); the holder's unlock
 * turned CONTENDED|REQ into HANDED and woke nobody; the same ring thread's
 * next lock op, a newcomer on HANDED, registered (COUNT 1) and armed
 * FUTEX_WAIT; the unlocker's take-back then saw COUNT 1 ("a registered
 * waiter will claim it") and left it HANDED — nobody could take it and
 * nobody would wake the sleeper (tests/fault/mutex_handoff_repro.c does
 * it in C). The protocol modelled now is the fixed one: ring lockers count
 * as having slept from their first step, so they claim a HANDED lock
 * instead of sleeping on it; only ring waiters set REQ, and a requester
 * that gives up withdraws it and takes back a hand-off kept for it. With
 * -DNO_BOUND (blocking waiters' bounded sleep on HANDED not used as an
 * escape) it must pass too: the bound is for vanished claimers only.
 *
 * Memory model: the protocol lives in one word and every change is a CAS
 * or an atomic RMW on it, so coherence alone orders them; sequential
 * consistency adds nothing the C code relies on.
 *
 * Word (SHARED, bit 31, is constant and left out): bits 0-1 state, bit 2
 * REQ, bits 3+ COUNT.
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
#ifndef HANDOFF_AFTER
#define HANDOFF_AFTER 2	/* URSA_HANDOFF_AFTER */
#endif

#define FREE 0
#define LOCKED 1
#define CONTENDED 2
#define HANDED 3
#define REQ 4
#define CNT_ONE 8
#define STATE(v) ((v) & 3)
#define CNT(v) ((v) & ~7)

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

/* m_taken(v): the state a locker stores when it takes a FREE lock. */
#define TAKEN(v) (CNT(v) > 0 -> CONTENDED : LOCKED)

/* ursa__mutex_take: FREE -> taken (deregistering); HANDED -> CONTENDED if
 * registered or slept (claim). ok = taken. A ring locker counts as having
 * slept from its first step (lib/async.c op_start). */
#define CAN_CLAIM (registered || slept)
#define mutex_take(ok)								\
	atomic {								\
		if								\
		:: STATE(m) == FREE ->						\
			m = m - (registered -> CNT_ONE : 0);			\
			m = m | TAKEN(m); registered = false; rq = false;	\
			ok = true						\
		:: STATE(m) == HANDED && CAN_CLAIM ->				\
			m = ((m - (registered -> CNT_ONE : 0)) & ~3) | CONTENDED; \
			registered = false; rq = false; ok = true		\
		:: else -> ok = false						\
		fi								\
	}

/* ursa__mutex_step: r = DONE (taken), or WAIT with `want`, the value to
 * sleep on (registered). Only ring waiters request a hand-off (REQ), after
 * losing enough races; losses is kept only up to HANDOFF_AFTER - 1 (the
 * step only asks whether losses + 1 >= HANDOFF_AFTER). The first take and
 * the loop's take are one atomic step here (a failed take changes
 * nothing). bnd: a blocking waiter sleeping on HANDED bounds its sleep. */
#define mutex_step(r)								\
	mutex_take(ok);								\
	if									\
	:: ok -> r = DONE							\
	:: else ->								\
		atomic {							\
			if						\
			:: STATE(m) == FREE || (STATE(m) == HANDED && CAN_CLAIM) -> \
				/* freed meanwhile: take it (take's CAS) */	\
				m = m - (registered -> CNT_ONE : 0);		\
				if						\
				:: STATE(m) == FREE -> m = m | TAKEN(m)		\
				:: else -> m = (m & ~3) | CONTENDED		\
				fi;						\
				registered = false; rq = false; r = DONE	\
			:: else ->						\
				bnd = (STATE(m) == HANDED && !ring && BOUND);	\
				if						\
				:: STATE(m) == HANDED -> want = m		\
				:: else ->					\
					want = (m & ~3) | CONTENDED;		\
					if					\
					:: ring && slept &&			\
					   losses + 1 >= HANDOFF_AFTER ->	\
						want = want | REQ; rq = true	\
					:: else					\
					fi					\
				fi;						\
				if						\
				:: !registered -> want = want + CNT_ONE		\
				:: else						\
				fi;						\
				m = want;					\
				registered = true;				\
				if						\
				:: slept && losses + 1 < HANDOFF_AFTER -> losses++ \
				:: else						\
				fi;						\
				r = WAIT					\
			fi							\
		}								\
	fi;									\
	ok = false

/* m_take_back(m, force): HANDED (with COUNT 0, unless force) -> FREE,
 * wake 1. */
#define take_back(force)							\
	atomic {								\
		if								\
		:: STATE(m) == HANDED && (force || CNT(m) == 0) ->		\
			m = m & ~3; uw = 1					\
		:: else -> uw = 0						\
		fi								\
	};									\
	if									\
	:: uw == 1 -> futex_wake(0, 1, cnt, tmp)				\
	:: else									\
	fi;									\
	uw = 0; cnt = 0

/* ursa__mutex_abandon: deregister (a requester also withdraws REQ); a
 * hand-off kept for us, or for nobody, is taken back. */
#define mutex_abandon()								\
	if									\
	:: registered ->							\
		atomic {							\
			m = (m - CNT_ONE) & ~(rq -> REQ : 0);			\
			uw = (STATE(m) == HANDED && (rq || CNT(m) == 0) -> 1 : 0); \
			registered = false; rq = false				\
		};								\
		if								\
		:: uw == 1 -> take_back(true)					\
		:: else								\
		fi								\
	:: else									\
	fi

/* ursa__mutex_unlock_fast + ursa__mutex_unlock_slow (lib/mutex.c). */
#define mutex_unlock()								\
	atomic {								\
		assert(STATE(m) == LOCKED || STATE(m) == CONTENDED); /* EPERM */\
		if								\
		:: STATE(m) == LOCKED -> m = m & ~3; uw = 0	/* fast: 1 -> 0 */\
		:: STATE(m) == CONTENDED && (m & REQ) ->			\
			m = (m & ~(3 | REQ)) | HANDED; uw = 2			\
		:: STATE(m) == CONTENDED && !(m & REQ) -> m = m & ~3; uw = 1	\
		fi								\
	};									\
	if									\
	:: uw == 1 -> futex_wake(0, 1, cnt, tmp)				\
	:: uw == 2 ->								\
		futex_wake(0, 1, cnt, tmp);					\
		if								\
		:: cnt == 0 -> take_back(false)	/* unless the requester */\
		:: else				/* will claim it */		\
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
	bool slept, got, ok, registered, bnd, rq;

	for (i : 1 .. NITER) {
		/* Fast path: the inline ursa__mutex_lock_fast CAS (0 -> 1), or
		 * trylock (that CAS, then trylock_slow's FREE -> m_taken: the
		 * same as a take by an unregistered waiter), -EBUSY on failure.
		 * mutex_lock_slow's spin is more such takes: the same behaviour
		 * at a later moment. A ring op starts with a step
		 * (ursa_mutex_lock_async -> op_start/op_launch -> op_advance). */
		/* A ring op counts as having slept from its first step
		 * (lib/async.c op_start): it claims a HANDED lock. */
		slept = ring;
		if
		:: !ring ->
			mutex_take(got);
			if
			:: got -> goto locked
			:: !got && may_try -> goto next	/* trylock: -EBUSY */
			:: !got -> skip			/* lock / timedlock */
			fi
		:: ring -> slept = true	/* lib/async.c op_start */
		fi;
		/* ursa__block (lib/time.c) / op_advance + ursa_handle_cqe
		 * (lib/async.c): step; on WAIT sleep on (m, want) — futex
		 * syscall or FUTEX_WAIT SQE; after any return from that sleep
		 * (woken, -EAGAIN, spurious, bounded-sleep expiry) slept = 1
		 * and step again. */
		do
		:: mutex_step(r);
			if
			:: r == DONE -> got = true; break
			:: else
			fi;
			/* ursa__block: deadline already past before sleeping;
			 * op_advance: F_CANCEL set, or deadline past, before a
			 * re-arm: ursa__mutex_abandon. */
			if
			:: stops > 0 -> stops--; mutex_abandon(); break
			:: true
			fi;
			futex_wait(0, m, want, (stops > 0 || bnd), spur, r);
			slept = true;
			want = 0;
			if
			:: r == R_STOPPED && bnd ->
				/* the bound expired: step again (lib/time.c) */
				bnd = false
			:: r == R_STOPPED && !bnd ->
				/* -ETIMEDOUT (ursa__block) / CQE -ECANCELED
				 * (linked timeout or cancel): one last step
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
		slept = false; losses = 0; want = 0; r = 0; bnd = false;
locked:
		assert(!registered);
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
		run Locker(RING, true, false, SPUR);
		if
		:: NLOCKERS > 2 -> run Locker(false, true, false, 0)
		:: else
		fi
	}
	_nr_pr == 1;	/* every locker finished: nobody asleep for ever */
	assert(m == 0);	/* FREE, no REQ, COUNT 0 */
	assert(len(fq[0]) == 0);
	assert(inside == 0);
}
