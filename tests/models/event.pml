/*
 * tests/models/event.pml — the 4-byte event of lib/event.c, both kinds.
 * One word, also the futex word. Blocking waiters (ursa_event_wait /
 * _trywait / _timedwait over ursa__block), ring waiters
 * (ursa_event_wait_async) and, for auto-reset, a wait-any-like third party
 * (lib/wait_any.c) run the same steps.
 *
 * AUTO (compile with -DAUTO): word = SET (bit 0) | COUNT of registered
 *   waiters (bits 1+). set: SET on, wake 1 if COUNT > 0; step: consume SET
 *   (and deregister) in one CAS, else register once and WAIT on the value
 *   seen; abandon: COUNT - 1, then wake 1 if SET and COUNT > 0 (pass-on).
 *   Program: NW waiters each consume one set; the setter sets once per
 *   plain waiter, each time after the previous set was consumed (sets do
 *   not accumulate, so an application that must deliver N releases waits
 *   for each to be taken). The third party needs no set: after a wake it
 *   may leave having taken its other object, and if it consumes a set it
 *   sets again (gives it back). Checked: every plain waiter gets its set
 *   (no invalid end state), COUNT == 0 and nobody asleep at the end, and
 *   each set is consumed at most once (consumed <= sets).
 *
 * MANUAL (default): word = SET (bit 0) | WAITERS (bit 1) | COUNT (bits
 *   2-3) | GEN (bits 4+).
 *   set: if not SET: SET, GEN + 1, WAITERS cleared, COUNT kept, and wake
 *   all if WAITERS was set or COUNT > 0; reset: SET off; step: snapshot GEN
 *   on the first call; DONE if SET or GEN moved (then, a separate RMW,
 *   COUNT - 1 if counted); else set WAITERS, COUNT + 1 the first time, and
 *   WAIT on that value; abandon: COUNT - 1 if counted. COUNT (for destroy)
 *   changes the word under sleepers-to-be: checked that it loses nothing.
 *   Program: NW waiters begin waiting (ursa_event_wait: the snapshot is
 *   taken on entry), then the setter sets and, nondeterministically, resets
 *   at once. Checked: every wait in progress when set ran returns, even if
 *   reset followed at once (the header's promise), nobody is left asleep,
 *   and COUNT is 0 at the end (every count undone).
 *
 * Memory model: one word, all changes CAS or RMW: coherence orders them.
 * CAS retry loops are one atomic step (see mutex.pml).
 */
#define NADDR 1
#include "futex.pml"

#ifndef NW
#define NW 3
#endif
#ifndef SPUR
#define SPUR 1
#endif

#define DONE 0
#define WAIT 1

#define SET 1
#define WAITERS 2	/* manual */
#define MCNT_ONE 4	/* manual: COUNT, bits 2-3 */
#define MCNT 12		/* manual */
#define GEN_ONE 16	/* manual */
#define CNT_ONE 2	/* auto */

byte e;		/* e->__word (SHARED and AUTO flag bits left out) */
byte began;	/* manual: waits in progress */
byte sets, consumed;	/* auto */

#ifdef AUTO

/* auto_step (lib/event.c) */
#define ev_step(r)								\
	atomic {								\
		if								\
		:: e & SET ->							\
			e = (e & ~SET) - (registered -> CNT_ONE : 0);		\
			registered = false; consumed++; r = DONE		\
		:: else ->							\
			if							\
			:: !registered -> e = e + CNT_ONE; registered = true	\
			:: else							\
			fi;							\
			want = e; r = WAIT					\
		fi								\
	}

/* ursa__event_abandon, auto-reset: deregister, pass a set on. */
#define ev_abandon()								\
	if									\
	:: registered ->							\
		registered = false;						\
		atomic { e = e - CNT_ONE; tmp = e };				\
		if								\
		:: (tmp & SET) && tmp >= CNT_ONE ->				\
			tmp = 0; futex_wake(0, 1, cnt, tmp); cnt = 0		\
		:: else -> tmp = 0						\
		fi								\
	:: else									\
	fi

/* ursa_event_set, auto-reset; did: it set (false: was already set). */
#define ev_set(did)								\
	atomic {								\
		if								\
		:: e & SET -> tmp = 0; did = false	/* already set */	\
		:: else -> e = e | SET; sets++; did = true;			\
			tmp = (e >= CNT_ONE -> 1 : 0)				\
		fi								\
	};									\
	if									\
	:: tmp == 1 -> futex_wake(0, 1, cnt, tmp); cnt = 0			\
	:: else -> tmp = 0							\
	fi

/* Deliver one release: sets do not accumulate, so an application that
 * must hand out N releases sets when the event is clear and waits until
 * its set was taken. */
#define deliver()								\
	do									\
	:: (e & SET) == 0 -> ev_set(did);					\
		if :: did -> break :: else fi					\
	od;									\
	did = false

/* A waiter: ursa_event_wait (take, then ursa__block) or the async op.
 * may_stop: may time out / be cancelled once (then waits again). any: the
 * wait-any-like third party (see the top). */
proctype Waiter(bool may_stop; bool any; byte spur)
{
	byte cnt, tmp, r, want;
	byte stops = (may_stop -> 1 : 0);
	bool registered, did;

again:
	/* ursa__event_take with an unregistered waiter (trywait) */
	atomic {
		if
		:: e & SET -> e = e & ~SET; consumed++; r = DONE
		:: else -> r = WAIT
		fi
	};
	if :: r == DONE -> goto out :: else fi;
	do
	:: ev_step(r);
		if :: r == DONE -> goto out :: else fi;
		if
		:: stops > 0 -> stops--; ev_abandon(); goto again
		:: true
		fi;
		futex_wait(0, e, want, (stops > 0 || any), spur, r);
		want = 0;
		if
		:: any && (r == R_WOKEN || r == R_STOPPED) ->
			ev_abandon();	/* took its other object */
			r = WAIT;
			goto out
		:: !any && r == R_STOPPED ->
			stops--;
			ev_step(r);
			if :: r == DONE -> goto out :: else fi;
			ev_abandon();
			goto again
		:: r != R_STOPPED
		fi
	od;
out:
	assert(!registered);
	if
	:: any && r == DONE -> deliver()	/* give the set back */
	:: else
	fi
}

proctype Setter(byte n)
{
	byte cnt, tmp, k;
	bool did;
	for (k : 1 .. n) {
		deliver();
		consumed >= sets	/* wait until it was taken */
	}
}

init {
	atomic {
		run Waiter(false, false, SPUR);
		if :: NW > 1 -> run Waiter(true, false, 0) :: else fi;
		if :: NW > 2 -> run Waiter(false, true, 0) :: else fi;
		if :: NW > 3 -> run Waiter(true, false, 0) :: else fi;
		run Setter((NW > 2 -> NW - 1 : NW))
	}
	_nr_pr == 1;
	assert(consumed <= sets);
	assert(e == 0);
	assert(len(fq[0]) == 0);
}

#else /* MANUAL */

/* manual_step (lib/event.c); the GEN snapshot is taken on entry. DONE
 * is seen by a load; the count is undone by a later RMW (manual_leave). */
#define ev_step(r)								\
	atomic {								\
		if								\
		:: (e & SET) || (e & ~15) != aux -> r = DONE			\
		:: else -> e = e | WAITERS;					\
			if							\
			:: !counted -> e = e + MCNT_ONE; counted = true		\
			:: else							\
			fi;							\
			want = e; r = WAIT					\
		fi								\
	};									\
	if									\
	:: r == DONE -> ev_leave()						\
	:: else									\
	fi

/* manual_leave: uncount (DONE or abandon). */
#define ev_leave()								\
	if									\
	:: counted -> atomic { e = e - MCNT_ONE; counted = false }		\
	:: else									\
	fi

proctype Waiter(bool may_stop; byte spur)
{
	byte cnt, tmp, r, want, aux;
	byte stops = (may_stop -> 1 : 0);
	bool counted;

	/* event_wait: load; SET -> 0; else the wait begins: snapshot GEN */
	atomic {
		if
		:: e & SET -> r = DONE
		:: else -> aux = e & ~15; r = WAIT
		fi;
		began++
	};
	if :: r == DONE -> goto out :: else fi;
	do
	:: ev_step(r);
		if :: r == DONE -> break :: else fi;
		/* a waiter that gives up undoes its count (abandon) and is
		 * no longer "in progress" */
		if
		:: stops > 0 -> stops--; ev_leave(); break
		:: true
		fi;
		futex_wait(0, e, want, (stops > 0), spur, r);
		want = 0;
		if
		:: r == R_STOPPED -> stops--; ev_step(r);
			if :: r == WAIT -> ev_leave() :: else fi;
			break
		:: else
		fi
	od;
out:
	assert(!counted)
}

proctype Setter()
{
	byte cnt, tmp;
	began == NW;	/* every wait is in progress */
	atomic {
		if
		:: e & SET -> tmp = 0
		:: else ->
			tmp = (e & (WAITERS | MCNT) -> 1 : 0);
			e = ((e + GEN_ONE) & ~15) | (e & MCNT) | SET
		fi
	};
	if
	:: tmp == 1 -> futex_wake(0, MAXPROC, cnt, tmp)
	:: else -> tmp = 0
	fi;
	if
	:: atomic { e = e & ~SET }	/* ursa_event_reset at once */
	:: skip
	fi
}

init {
	atomic {
		run Waiter(false, SPUR);
		if :: NW > 1 -> run Waiter(true, 0) :: else fi;
		if :: NW > 2 -> run Waiter(false, 0) :: else fi;
		run Setter()
	}
	_nr_pr == 1;
	assert(len(fq[0]) == 0);
	assert((e & MCNT) == 0);
}

#endif
