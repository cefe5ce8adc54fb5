/*
 * tests/models/cond.pml — the condition variable of lib/cond.c: a sequence
 * word (+1 per signal/broadcast that found a registered waiter) and a count
 * of registered waiters. Waiters register and snapshot the sequence while
 * holding the mutex (ursa__cond_begin), unlock it, sleep while the sequence
 * equals the snapshot (ursa__cond_step), re-lock. Blocking waiters
 * (ursa_cond_wait / _timedwait) and ring waiters (ursa_cond_wait_async:
 * lib/async.c stage 0 on the condvar, stage 1 re-taking the mutex) run the
 * same steps.
 *
 * The mutex is modelled as an atomic lock (its own protocol is checked in
 * mutex.pml); what matters here is that begin happens under it and that
 * producers change the predicate under it.
 *
 * The program checked is the classic one that exposes lost signals: NCONS
 * consumers each take one item (lock; while items == 0 wait; items--;
 * unlock), NPROD producers each add one (lock; items++; signal inside or
 * outside the lock, or broadcast; unlock). Checked: every consumer finishes
 * (no invalid end state: a signal lost while a consumer sleeps with an item
 * available leaves it asleep for ever), and at the end items == 0, no waiter
 * is still registered (ursa_cond_destroy's -EBUSY test) and nobody sleeps.
 *
 * Memory model: signal does "load waiters; seq += 1" and begin does
 * "waiters += 1; snapshot seq", all seq_cst in lib/cond.c, and the
 * predicate is protected by the mutex: sequential consistency is what the
 * C code provides.
 */
#define NADDR 1
#include "futex.pml"

#ifndef NCONS
#define NCONS 2
#endif
#ifndef NPROD
#define NPROD 2
#endif
#ifndef SPUR
#define SPUR 1
#endif

#define DONE 0
#define WAIT 1

byte mtx;	/* the mutex: 0 free, else holder's _pid */
byte items;	/* the predicate, under mtx */
byte seq;	/* c->__seq (the futex word) */
byte nwait;	/* c->__waiters count (SHARED bit left out) */

#define lock() atomic { mtx == 0 -> mtx = _pid }
#define unlock() atomic { assert(mtx == _pid); mtx = 0 }

/* cond_wake(c, n) (lib/cond.c): signal n = 1, broadcast n = all. */
#define cond_wake(n)								\
	if									\
	:: atomic { nwait > 0 -> seq++ };					\
		futex_wake(0, n, cnt, tmp);					\
		cnt = 0								\
	:: atomic { nwait == 0 -> skip }	/* nobody registered: no call */\
	fi

/* ursa__cond_step: DONE once the sequence moved since begin. */
#define cond_step(r)								\
	atomic {								\
		if								\
		:: seq != aux || !registered ->					\
			if :: registered -> registered = false; nwait--		\
			   :: else fi;						\
			r = DONE						\
		:: else -> r = WAIT						\
		fi								\
	}

/* ursa__cond_abandon: 1 if a signal came since begin (the wait is then
 * reported as woken: a signal whose wake this waiter took is not lost). */
#define cond_abandon(res)							\
	atomic {								\
		if								\
		:: registered ->						\
			res = (seq != aux -> 1 : 0);				\
			registered = false; nwait--				\
		:: else -> res = 0						\
		fi								\
	}

/*
 * A consumer. may_stop: its waits may time out (ursa_cond_timedwait) or be
 * cancelled / time out in the ring (ursa_cond_wait_async), once.
 */
proctype Consumer(bool may_stop; byte spur)
{
	byte cnt, tmp, r, aux;
	byte stops = (may_stop -> 1 : 0);
	bool registered;

	lock();
	do
	:: items > 0 -> break
	:: items == 0 ->
		/* ursa__cond_begin, holding m (seq_cst increment and load) */
		atomic { nwait++; aux = seq; registered = true };
		unlock();
		/* ursa__block(c, cond_step, cond_abandon) / op_advance */
		do
		:: cond_step(r);
			if :: r == DONE -> break :: else fi;
			if
			:: stops > 0 -> stops--; cond_abandon(r); break
			:: true
			fi;
			futex_wait(0, seq, aux, (stops > 0), spur, r);
			if
			:: r == R_STOPPED ->
				stops--;
				cond_step(r);
				if :: r != DONE -> cond_abandon(r) :: else fi;
				break
			:: else
			fi
		od;
		r = 0;
		/* every return holds m again (blocking: ursa__mutex_lock_fast;
		 * async: stage 1, the mutex step) */
		lock()
	od;
	atomic { assert(mtx == _pid && items > 0); items-- };
	unlock()
}

/* A producer: how it signals is chosen nondeterministically. */
proctype Producer()
{
	byte cnt, tmp;

	lock();
	items++;
	if
	:: cond_wake(1); unlock()		/* signal holding m */
	:: unlock(); cond_wake(1)		/* signal after unlocking */
	:: cond_wake(MAXPROC); unlock()	/* broadcast */
	fi
}

init {
	atomic {
		/* A consumer that never gives up (spurious wakeups), one that
		 * may time out or be cancelled; the producers. */
		run Consumer(false, SPUR);
		if :: NCONS > 1 -> run Consumer(true, 0) :: else fi;
		if :: NCONS > 2 -> run Consumer(false, 0) :: else fi;
		run Producer();
		if :: NPROD > 1 -> run Producer() :: else fi;
		if :: NPROD > 2 -> run Producer() :: else fi
	}
	_nr_pr == 1;
	assert(items == NPROD - NCONS);
	assert(nwait == 0);
	assert(len(fq[0]) == 0);
}
