/*
 * tests/models/cond.pml — the condition variable of lib/cond.c: a sequence
 * word (+1 per signal/broadcast that found an unsignalled waiter), a count
 * of registered waiters (REG) and of signalled ones not yet gone (SIG).
 * Waiters snapshot the sequence and then register while holding the mutex
 * (cond_begin), unlock it, sleep while the sequence equals the snapshot
 * (cond_step), re-lock. A signal acts only while REG > SIG. Blocking
 * waiters (ursa_cond_wait / _timedwait) and ring waiters
 * (ursa_cond_wait_async: lib/async.c stage 0 on the condvar, stage 1
 * re-taking the mutex) run the same steps.
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
 * is still registered (ursa_cond_destroy's -EBUSY test), SIG is 0 and
 * nobody sleeps.
 *
 * Memory model: the signal's CAS on the counts and increment of the
 * sequence, and the waiter's snapshot and registering CAS, are all seq_cst
 * in lib/cond.c (one total order, each a separate step here), and the
 * predicate is protected by the mutex: sequential consistency is what the
 * C code provides.
 *
 * -DBREAK=2 leaves out the clamp SIG <= REG: an unsignalled waiter that
 * gives up between a signal's two steps leaves SIG above REG, and the next
 * waiter's signal is skipped; the model must find it.
 *
 * -DBREAK=1 registers before taking the snapshot: a signal from a producer
 * that already unlocked can then count this waiter (SIG + 1) and move the
 * sequence before the snapshot sees it, so no later signal wakes it; the
 * model must find that lost wakeup.
 *
 * -DANYORDER: the kernel's futex queue is FIFO only among waiters of one
 * priority; it queues real-time waiters first. Here a wake picks any
 * sleeper whose bitset meets its own, so every order is explored. A waiter
 * sleeps with the bit of its snapshot's generation (seq mod 4 here, mod 32
 * in C), and a waiter that was woken but finds no signal since its
 * snapshot (a signal's wake that the kernel gave it instead of an older
 * waiter: it came after the signal's increment and before its wake) passes
 * one wake on to the other generations. -DBREAK=3 leaves that out: a
 * consumer then sleeps for ever with an item there, counted as signalled
 * (found by review with a SCHED_FIFO waiter; three consumers and three
 * producers show it).
 */
#define NADDR 1
#include "futex.pml"

#ifndef NCONS
#define NCONS 2
#endif
#ifndef NPROD
#define NPROD 2
#endif
#ifndef BREAK
#define BREAK 0
#endif
#ifndef SPUR
#define SPUR 1
#endif

#define DONE 0
#define WAIT 1

byte mtx;	/* the mutex: 0 free, else holder's _pid */
byte items;	/* the predicate, under mtx */
byte seq;	/* c->__seq (the futex word) */
byte nwait;	/* c->__waiters REG (SHARED bit left out) */
byte nsig;	/* c->__waiters SIG */

#ifdef ANYORDER
bool asleep[MAXPROC];	/* on seq, with its bits in sbits */
byte sbits[MAXPROC];
#define GENBIT(g) (1 << ((g) % 4))
#define ALLBITS 15

/* ursa_k_futex_wait_bits on seq */
#define futex_wait_b(val, b, may_stop, spur, res)				\
	if									\
	:: atomic { seq == val -> asleep[_pid] = true; sbits[_pid] = b }	\
		if								\
		:: atomic { woken[_pid] -> woken[_pid] = false; res = R_WOKEN }	\
		:: atomic { may_stop && asleep[_pid] ->				\
			asleep[_pid] = false; res = R_STOPPED }			\
		fi								\
	:: atomic { seq != val -> res = R_EAGAIN }				\
	:: atomic { spur > 0 -> spur--; res = R_EINTR }				\
	fi

/* ursa_k_futex_wake_bits on seq: up to n sleepers whose bits meet mask,
 * each one chosen among them in any order. */
#define futex_wake_b(n, mask, cnt)						\
	atomic {								\
		cnt = 0;							\
		do								\
		:: cnt >= n -> break						\
		:: cnt < n ->							\
			wm = 0; wi = 0;						\
			do							\
			:: wi < MAXPROC ->					\
				if						\
				:: asleep[wi] && (sbits[wi] & (mask)) -> wm++	\
				:: else						\
				fi;						\
				wi++						\
			:: else -> break					\
			od;							\
			if :: wm == 0 -> break :: else fi;			\
			select (wk : 1 .. wm);					\
			wi = 0;							\
			do							\
			:: asleep[wi] && (sbits[wi] & (mask)) && wk == 1 ->	\
				asleep[wi] = false; woken[wi] = true; cnt++; break \
			:: asleep[wi] && (sbits[wi] & (mask)) && wk > 1 ->	\
				wk--; wi++					\
			:: else -> wi++						\
			od							\
		od;								\
		wi = 0; wk = 0; wm = 0						\
	}
#endif

#define lock() atomic { mtx == 0 -> mtx = _pid }
#define unlock() atomic { assert(mtx == _pid); mtx = 0 }

/* cond_wake(c, all) (lib/cond.c): signal n = 1, broadcast n = all. The
 * CAS on the counts, then the increment, then the wake. */
#define cond_wake(n)								\
	if									\
	:: atomic { nwait > nsig ->						\
		if :: n == 1 -> nsig++ :: else -> nsig = nwait fi;		\
		assert(nsig <= nwait) };					\
		seq++;								\
		WAKE(n, cnt);							\
		cnt = 0								\
	:: atomic { nwait <= nsig -> skip }	/* nobody unsignalled: no call */\
	fi

#ifdef ANYORDER
#define WAKE(n, cnt) futex_wake_b(n, ALLBITS, cnt)
#else
#define WAKE(n, cnt) futex_wake(0, n, cnt, tmp)
#endif

/* Leave: REG - 1, and SIG - 1 if signalled and SIG > 0; SIG <= REG. */
#define cond_leave(signalled)							\
	registered = false; nwait--;						\
	if :: (signalled) && nsig > 0 -> nsig-- :: else fi;			\
	if :: nsig > nwait && BREAK != 2 -> nsig = nwait :: else fi

/* ursa__cond_step: DONE once the sequence moved since begin; else (with
 * ANYORDER) a waiter woken with no signal since its snapshot passes the
 * wake on to the other generations. */
#if defined(ANYORDER) && BREAK != 3
#define PASS_ON()								\
	if :: wk0 -> futex_wake_b(1, ALLBITS & ~GENBIT(aux), cnt); cnt = 0	\
	   :: else fi
#else
#define PASS_ON() skip
#endif
#define cond_step(r)								\
	atomic {								\
		if								\
		:: seq != aux || !registered ->					\
			if :: registered -> cond_leave(true)			\
			   :: else fi;						\
			r = DONE						\
		:: else -> PASS_ON(); r = WAIT					\
		fi;								\
		wk0 = false							\
	}

/* ursa__cond_abandon: 1 if a signal came since begin (the wait is then
 * reported as woken: a signal whose wake this waiter took is not lost). */
#define cond_abandon(res)							\
	atomic {								\
		if								\
		:: registered ->						\
			res = (seq != aux -> 1 : 0);				\
			cond_leave(res == 1)					\
		:: else -> res = 0						\
		fi								\
	}

/*
 * A consumer. may_stop: its waits may time out (ursa_cond_timedwait) or be
 * cancelled / time out in the ring (ursa_cond_wait_async), once.
 */
proctype Consumer(bool may_stop; byte spur)
{
	byte cnt, tmp, r, aux, wi, wk, wm;
	byte stops = (may_stop -> 1 : 0);
	bool registered, wk0;	/* wk0: the last sleep ended in a wake */

	lock();
	do
	:: items > 0 -> break
	:: items == 0 ->
		/* cond_begin, holding m: snapshot, then register (seq_cst) */
#if BREAK == 1
		atomic { nwait++; registered = true };
		aux = seq;
#else
		aux = seq;
		atomic { nwait++; registered = true };
#endif
		unlock();
		/* ursa__block(c, cond_step, cond_abandon) / op_advance */
		do
		:: cond_step(r);
			if :: r == DONE -> break :: else fi;
			if
			:: stops > 0 -> stops--; cond_abandon(r); break
			:: true
			fi;
#ifdef ANYORDER
			futex_wait_b(aux, GENBIT(aux), (stops > 0), spur, r);
#else
			futex_wait(0, seq, aux, (stops > 0), spur, r);
#endif
			wk0 = (r == R_WOKEN);
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
	byte cnt, tmp, wi, wk, wm;

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
	assert(nwait == 0 && nsig == 0);	/* and SIG <= REG throughout: */
	assert(len(fq[0]) == 0);
#ifdef ANYORDER
	byte i;
	for (i : 0 .. MAXPROC - 1) {
		assert(!asleep[i])
	}
#endif
}
