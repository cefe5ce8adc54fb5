/*
 * tests/models/latch.pml — the countdown latch of lib/latch.c: __count (the
 * futex word; waiters sleep while it is above 0) and __waiters (registered
 * waiters), the Dekker pair between the count_down that opens the latch
 * ("count -= n; load waiters") and a waiter's step ("waiters += 1; load
 * count"). Blocked threads and ring waiters run the same step; a waiter may
 * time out / be cancelled once (then it gives up: abandon).
 *
 * Checked: no lost wakeup (no waiter asleep for ever: no invalid end
 * state), nobody released early (a waiter that returns 0 saw count 0), no
 * registration leaked (waiters == 0 at the end: what destroy checks), and
 * no count_down touches a destroyed latch: the one that opens it pins it
 * with its CAS (lib/latch.c, "Pins") and unpins last; once every waiter
 * has returned, init destroys it as ursa_latch_destroy does (nobody
 * registered, no pin) and marks it freed, and the opener's looks after its
 * CAS assert it was not (-DBREAK=2: no pin, rejected).
 *
 * Memory model: lib/latch.c makes the four operations of the Dekker pair
 * seq_cst, so sequential consistency is what the C code provides.
 * -DBREAK=1 drops the waiters check (count_down never wakes): must fail.
 * -DBREAK=2: the opener takes no pin: must fail.
 */
#define NADDR 1
#include "futex.pml"

#ifndef NW
#define NW 3
#endif
#ifndef NDOWN
#define NDOWN 2
#endif
#ifndef BREAK
#define BREAK 0
#endif

byte count = NDOWN;	/* l->__count */
byte nwait;		/* l->__waiters */
bool pinned;		/* l->__waiters' pin */
byte finished;
byte wdone;		/* ghost: waiters that returned */
bool freed;		/* ghost: destroyed after they all had */

#define LIVE assert(!freed)

/* count_down(1): the CAS, then (if it opened the latch) the waiters load. */
proctype Downer()
{
	byte cnt, tmp, c;
	bool pin;
	/* The pin, taken before the CAS that it knows opens the latch (here
	 * with it: seen no later). */
	atomic {
		pin = (count == 1 && BREAK != 2);
		if :: pin -> pinned = true :: else fi;
		count--; c = count
	};
#if BREAK == 1
	skip;
#else
	if
	:: c == 0 ->
		if
		:: atomic { nwait > 0 -> LIVE }; futex_wake(0, 255, cnt, tmp)
		:: atomic { nwait == 0 -> LIVE }
		fi
	:: else
	fi;
#endif
	atomic { if :: pin -> LIVE; pinned = false :: else fi };
	finished++
}

proctype Waiter(bool may_stop)
{
	byte r, seen, spur = 1;
	bool registered, stops = may_stop;
	if :: count == 0 -> goto out :: else fi;	/* trywait fast path */
	do
	:: /* step */
		if :: !registered -> atomic { nwait++; registered = true } :: else fi;
		atomic { seen = count };
		if
		:: seen == 0 -> atomic { nwait--; registered = false }; goto out
		:: else
		fi;
		futex_wait(0, count, seen, stops, spur, r);
		if
		:: r == R_STOPPED -> atomic { nwait--; registered = false }; goto gaveup
		:: else	/* woken, -EAGAIN or spurious: step again */
		fi
	od;
out:
	assert(count == 0);
gaveup:
	assert(!registered);
	wdone++;
	finished++
}

init {
	byte i;
	atomic {
		i = 0;
		do
		:: i < NW -> run Waiter(i == 0); i++
		:: i >= NW -> break
		od;
		i = 0;
		do
		:: i < NDOWN -> run Downer(); i++
		:: i >= NDOWN -> break
		od
	}
	/* Every waiter returned: destroy (it waits for the pin) and free. */
	atomic { wdone == NW && nwait == 0 && !pinned -> freed = true };
	(finished == NW + NDOWN);
	assert(nwait == 0 && !pinned);
	assert(no_sleepers())
}
