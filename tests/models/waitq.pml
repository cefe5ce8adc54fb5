/*
 * tests/models/waitq.pml — the wait queue of lib/waitq.c: per-slot state
 * words (IDLE, QUEUED, WOKEN; each slot's futex), a FIFO list of queued
 * slots under the queue's lock, wakers that choose slots under the lock
 * (QUEUED -> WOKEN, unlinked) and wake their words only after dropping it,
 * and the owner's step / abandon (wait, timeout, cancel). Blocking waiters
 * (ursa_waitq_wait over ursa__block), ring waiters (ursa_waitq_wait_async:
 * lib/async.c; abandon runs only after the wait's CQE) and
 * ursa_waitq_cancel run the same functions.
 *
 * The queue's internal lock is an ursa mutex (checked in mutex.pml); here
 * it is an atomic lock. The list is a channel of slot numbers (FIFO order,
 * removal from the middle with ??).
 *
 * Program (the documented protocol: prepare -> re-check -> wait or cancel):
 * NSLOT waiters each wait for `flushed` to reach their targets 1 .. NTGT;
 * the waker makes the condition true first (flushed += 1), then wakes:
 * sometimes an extra ursa_waitq_wake(n) or ursa_waitq_wake_slot, always
 * ursa_waitq_wake_upto(flushed). Checked:
 *   - no lost wakeup / no deadlock: every waiter reaches its last target
 *     (no invalid end state);
 *   - exactly once: the wakes' counts add up to the waits that returned 0
 *     plus the cancels that returned 1 — each counted slot is consumed by
 *     exactly one wait or cancel, and no wait returns 0 uncounted;
 *   - a slot is IDLE again after each wait / cancel (the next prepare never
 *     sees -EBUSY), the list is empty and nobody sleeps at the end.
 *
 * Memory model: list and keys only under the lock; the WOKEN store is a
 * release read by the owner's acquire load, and the lock orders the
 * waker's condition store before the prepare's re-check: SC is sound.
 */
#ifndef NSLOT
#define NSLOT 2
#endif
#define NADDR NSLOT
#include "futex.pml"

#ifndef NTGT
#define NTGT 2
#endif
#ifndef SPUR
#define SPUR 1
#endif

#define IDLE 0
#define QUEUED 1
#define WOKEN 2

#define DONE 0
#define WAIT 1

byte qlk;			/* q->lock: 0 free, else holder's _pid */
chan list = [NSLOT] of { byte };	/* q->head .. q->tail */
byte st[NSLOT];			/* q->slot[i].state: the futex words */
byte key[NSLOT];		/* q->slot[i].key */
byte flushed;			/* the waiters' condition */
byte counted, consumed;		/* exactly-once accounting */

#define wq_lock() atomic { qlk == 0 -> qlk = _pid }
#define wq_unlock() atomic { assert(qlk == _pid); qlk = 0 }

/* ursa_waitq_prepare: link at the tail, QUEUED. */
#define wq_prepare(s, k)							\
	wq_lock();								\
	assert(st[s] == IDLE);			/* else -EBUSY */		\
	key[s] = k;								\
	list!s;									\
	st[s] = QUEUED;								\
	wq_unlock()

/* ursa__waitq_step: WOKEN -> IDLE, DONE; QUEUED -> WAIT on (st, QUEUED). */
#define wq_step(s, r)								\
	atomic {								\
		assert(st[s] != IDLE);		/* else -EINVAL */		\
		if								\
		:: st[s] == WOKEN -> st[s] = IDLE; consumed++; r = DONE		\
		:: st[s] == QUEUED -> r = WAIT					\
		fi								\
	}

/* ursa__waitq_abandon / ursa_waitq_cancel: res 0 dequeued, 1 woken. */
#define wq_abandon(s, res)							\
	if									\
	:: atomic { st[s] == QUEUED -> skip };					\
		wq_lock();							\
		if								\
		:: st[s] == QUEUED ->						\
			list??eval(s); st[s] = IDLE; res = 0;			\
			wq_unlock()						\
		:: else ->							\
			wq_unlock();						\
			atomic { assert(st[s] == WOKEN);			\
				 st[s] = IDLE; consumed++; res = 1 }		\
		fi								\
	:: atomic { st[s] == WOKEN -> st[s] = IDLE; consumed++; res = 1 }	\
	:: atomic { st[s] == IDLE -> assert(false) }	/* -EINVAL */		\
	fi

/* wq_take under the lock: unlink, QUEUED -> WOKEN, remember the slot. */
#define wq_take(i)								\
	st[i] = WOKEN; chosen = chosen | (1 << i); counted++

/* After the lock is dropped: one futex wake per chosen slot word. */
#define wq_wake_chosen()							\
	for (j : 0 .. NSLOT - 1) {						\
		if								\
		:: chosen & (1 << j) -> futex_wake(j, 1, cnt, tmp); cnt = 0	\
		:: else								\
		fi								\
	};									\
	chosen = 0; j = 0

/* ursa_waitq_wake(q, n): the n oldest, at most as many as were queued. */
#define wq_wake_n(n)								\
	wq_lock();								\
	do									\
	:: len(list) > 0 && m < n -> list?i; wq_take(i); m++			\
	:: len(list) == 0 || m >= n -> break					\
	od;									\
	wq_unlock();								\
	m = 0; i = 0;								\
	wq_wake_chosen()

/* ursa_waitq_wake_upto(q, k): every queued slot with key <= k, in order
 * (one pass over the list, keeping the others in place). */
#define wq_wake_upto(k)								\
	wq_lock();								\
	m = len(list);								\
	do									\
	:: m > 0 ->								\
		list?i;								\
		if								\
		:: key[i] <= k -> wq_take(i)					\
		:: else -> list!i						\
		fi;								\
		m--								\
	:: m == 0 -> break							\
	od;									\
	wq_unlock();								\
	i = 0;									\
	wq_wake_chosen()

/* ursa_waitq_wake_slot(q, s). */
#define wq_wake_slot(s)								\
	wq_lock();								\
	if									\
	:: st[s] == QUEUED -> list??eval(s); wq_take(s)				\
	:: else									\
	fi;									\
	wq_unlock();								\
	wq_wake_chosen()

/*
 * The owner of slot s. may_stop: its waits may time out (blocking) or be
 * cancelled / time out (ring), once. ring and blocking waiters are the
 * same machine here: the ring's FUTEX_WAIT is the same compare-and-queue,
 * its CQE leads to a step (op_advance), and a cancelled op abandons only
 * after its CQE, i.e. after it left the futex queue.
 */
proctype Waiter(byte s; bool may_stop; byte spur)
{
	byte cnt, tmp, r, t, res;
	byte stops = (may_stop -> 1 : 0);

	for (t : 1 .. NTGT) {
		do
		:: flushed >= t -> break
		:: flushed < t ->
			wq_prepare(s, t);
			if
			:: flushed >= t ->	/* re-check: already true */
				wq_abandon(s, res);
				res = 0;
				break
			:: flushed < t ->
				/* ursa__block(wq_step, wq_abandon) */
				do
				:: wq_step(s, r);
					if :: r == DONE -> break :: else fi;
					if
					:: stops > 0 -> stops--;
						wq_abandon(s, res); res = 0; break
					:: true
					fi;
					futex_wait(s, st[s], QUEUED, (stops > 0), spur, r);
					if
					:: r == R_STOPPED ->
						stops--;
						wq_step(s, r);
						if
						:: r != DONE -> wq_abandon(s, res); res = 0
						:: else
						fi;
						break
					:: else
					fi
				od;
				r = 0
			fi
		od
	}
}

proctype Waker()
{
	byte cnt, tmp, i, j, m, k, chosen;

	for (k : 1 .. NTGT) {
		flushed++;	/* make the condition true first */
		if
		:: wq_wake_n(1)
		:: wq_wake_slot(0)
		:: skip
		fi;
		wq_wake_upto(flushed)
	}
}

init {
	atomic {
		run Waiter(0, false, SPUR);	/* blocking, never gives up */
		if :: NSLOT > 1 -> run Waiter(1, true, 0) :: else fi;	/* ring/timed */
		if :: NSLOT > 2 -> run Waiter(2, false, 0) :: else fi;
		run Waker()
	}
	_nr_pr == 1;
	assert(counted == consumed);
	assert(len(list) == 0);
	assert(st[0] == IDLE && st[NSLOT - 1] == IDLE);
	assert(len(fq[0]) == 0 && len(fq[NSLOT - 1]) == 0);
}
