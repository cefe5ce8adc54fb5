/*
 * tests/models/sem.pml — the counting semaphore of lib/sem.c: __value (the
 * futex word; waiters sleep while it is 0) and __waiters (registered
 * waiters), the Dekker pair between post ("value += 1; load waiters") and a
 * waiter's registration ("waiters += 1; load value"), and abandon's pass-on
 * wake. Blocking waiters (ursa_sem_wait / _trywait / _timedwait over
 * ursa__block), ring waiters (ursa_sem_wait_async: lib/async.c) and a
 * wait-any-like waiter (lib/wait_any.c: woken here, it may leave having
 * taken another object, without stepping) run the same steps.
 *
 * Checked: no lost wakeup / no deadlock (every waiter that needs a unit
 * gets one: no invalid end state), units conserved (value at the end ==
 * posts - units taken), no registration leaked (waiters == 0, what
 * ursa_sem_destroy checks), nobody asleep.
 *
 * Memory model: lib/sem.c makes all four operations of the Dekker pair
 * seq_cst (post's CAS and load; the waiter's fetch_add and load; abandon's
 * sub_fetch and load), so sequential consistency is what the C code
 * provides. CAS retry loops are one atomic step (see mutex.pml).
 */
#define NADDR 1
#include "futex.pml"

#ifndef NWAITERS
#define NWAITERS 3	/* 2 plain waiters + 1 wait-any-like */
#endif
#ifndef SPUR
#define SPUR 1
#endif

#define DONE 0
#define WAIT 1

byte value;	/* s->__value */
byte nwait;	/* s->__waiters count */
byte taken;	/* units taken, all waiters */
byte posts;	/* units posted */

/* ursa__sem_take: value > 0: value - 1, deregister. */
#define sem_take(ok)								\
	atomic {								\
		if								\
		:: value > 0 -> value--; taken++; ok = true;			\
			if :: registered -> registered = false; nwait--		\
			   :: else fi						\
		:: else -> ok = false						\
		fi								\
	}

/* ursa__sem_step: take; else register (seq_cst) and look once more. */
#define sem_step(r)								\
	do									\
	:: sem_take(ok);							\
		if								\
		:: ok -> r = DONE; break					\
		:: !ok && registered -> r = WAIT; break				\
		:: !ok && !registered ->					\
			atomic { registered = true; nwait++ };			\
			if							\
			:: atomic { value == 0 -> r = WAIT }; break		\
			:: atomic { value != 0 -> skip }	/* retake */	\
			fi							\
		fi								\
	od

/* ursa__sem_abandon: deregister; if units are left and others wait, wake
 * one (a wake this waiter consumed is passed on). */
#define sem_abandon()								\
	if									\
	:: registered ->							\
		registered = false;						\
		atomic { nwait--; left = nwait };				\
		if								\
		:: atomic { left > 0 && value > 0 -> skip };			\
			futex_wake(0, 1, cnt, tmp)				\
		:: atomic { !(left > 0 && value > 0) -> skip }			\
		fi								\
	:: else									\
	fi;									\
	left = 0; cnt = 0

/* ursa_sem_post. */
#define sem_post()								\
	atomic { value++; posts++ };						\
	if									\
	:: atomic { nwait > 0 -> skip }; futex_wake(0, 1, cnt, tmp); cnt = 0	\
	:: atomic { nwait == 0 -> skip }					\
	fi

/*
 * A waiter that needs one unit. may_stop: its wait may time out / be
 * cancelled once (then it waits again: it still needs the unit).
 * any: wait-any-like, a third party that needs no unit: after being woken
 * it may leave at once, having taken another object (ursa__wait_any_try ->
 * finish -> release -> ursa__sem_abandon); if it does take a unit it gives
 * it back (posts it), as an application returning a resource would. The
 * posts are exactly the units the plain waiters need, so a wake it
 * swallows and does not pass on strands a plain waiter.
 */
proctype Waiter(bool may_stop; bool any; byte spur)
{
	byte cnt, tmp, r, left;
	byte stops = (may_stop -> 1 : 0);
	bool registered, ok;

again:
	/* ursa_sem_wait: trywait first (and the spin: more takes). */
	sem_take(ok);
	if :: ok -> r = DONE; goto out :: else fi;
	do
	:: sem_step(r);
		if :: r == DONE -> goto out :: else fi;
		if
		:: stops > 0 -> stops--; sem_abandon(); goto again
		:: true
		fi;
		futex_wait(0, value, 0, (stops > 0 || any), spur, r);
		if
		:: r == R_WOKEN && any ->	/* took another object */
			sem_abandon();
			r = WAIT;
			goto out
		:: r == R_STOPPED && any ->	/* woken by its other object */
			sem_abandon();
			r = WAIT;
			goto out
		:: r == R_STOPPED && !any ->
			stops--;
			sem_step(r);
			if :: r == DONE -> goto out :: else fi;
			sem_abandon();
			goto again
		:: r != R_STOPPED	/* step again */
		fi
	od;
out:
	assert(!registered);
	if
	:: any && r == DONE -> sem_post()	/* give the unit back */
	:: else
	fi
}

proctype Poster()
{
	byte cnt, tmp;
	sem_post()
}

init {
	atomic {
		/* A waiter that never gives up (spurious wakeups), one that may
		 * time out or be cancelled, and the wait-any-like third party;
		 * one post per plain waiter. */
		run Waiter(false, false, SPUR);
		run Poster();
		if :: NWAITERS > 1 -> run Waiter(true, false, 0); run Poster() :: else fi;
		if :: NWAITERS > 2 -> run Waiter(false, true, 0) :: else fi
	}
	_nr_pr == 1;
	assert(value == posts - taken);
	assert(nwait == 0);
	assert(len(fq[0]) == 0);
}
