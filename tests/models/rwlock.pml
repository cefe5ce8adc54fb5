/*
 * tests/models/rwlock.pml — the reader-writer lock of lib/rwlock.c (Rust
 * std's futex RwLock in ursa's step model): readers sleep on __state,
 * writers on the __notify counter; wake_writer_or_readers, with the write
 * unlock's read phase (phase-fair: the readers that wait go before the
 * writers that wait, the last of them waking a writer); writer abandon
 * passing a wake on, or clearing a phantom WRITERS_WAITING. Blocking
 * threads (ursa_rwlock_{rd,wr}lock, try*, timed*) and ring ops
 * (ursa_rwlock_{rd,wr}lock_async, lib/async.c) run the same steps. The
 * woken writer (WRITER_WOKEN): no other writer is woken until it steps;
 * a wake that found nobody takes the bit back. -DNO_BOUND takes the
 * blocked writers' bounded sleeps away, so that no lost writer wake can
 * hide behind a sleep that ends by itself. The writers' hand-off: a writer
 * that has slept may ask (REQ, a free choice at any later step: it has
 * waited long, or a ring writer lost its races); a writer wake that finds
 * REQ leaves the lock HANDED (a count value) instead of free, and only a
 * writer that has slept claims it; a hand-off wake that finds nobody
 * frees the lock again (-DBREAK=5: it does not), a writer that gives up
 * leaves it (the woken writer always steps before it gives up, as every
 * woken waiter here does, and claims it), and with nobody registered it
 * goes free (TIDY).
 *
 * Checked (tests/models/run.sh): readers and writers exclude each other and
 * writers each other (asserts in the critical sections); no lost wakeup or
 * deadlock (no invalid end state); at the end __state is 0 — no waiting
 * bit survives its waiters ("a quiescent lock always reads 0", which
 * ursa_rwlock_destroy relies on) — and nobody sleeps. And no unlock
 * touches a destroyed lock: an unlock that will wake takes a pin (in
 * __notify, lib/rwlock.c "Pins") with its release and drops it after its
 * wakes; once every operation has released the lock or given up, init
 * destroys it as ursa_rwlock_destroy does (once no pin is held, __state
 * must read 0: destroy says 0) and marks it freed, and every step of a
 * waker asserts it was not (-DBREAK=6: the unlocks take no pin, rejected;
 * -DBREAK=7: destroy does not wait for a pin when it sees a bit, as before
 * stop 48, and may say -EBUSY: rejected; -DBREAK=8: a read unlock that
 * saw no bit at its load subtracts without a pin, as it did before:
 * rejected). With -DPINCAP=1 two unlocks meet the pins all taken: the
 * second waits for one to go, as ursa__pin does (-DBREAK=9: it goes on
 * without one, as before: rejected).
 *
 * Memory model: every change of __state is a read-modify-write, so
 * coherence orders them. The one cross-word argument — a writer's
 * "WRITERS_WAITING set; seq = load __notify (acquire); re-load __state"
 * against the unlocker's "clear WRITERS_WAITING (RMW); __notify += 1
 * (release); wake" — is the message-passing pattern release/acquire makes
 * sequentially consistent, so SC is sound here.
 *
 * As in mutex.pml, every CAS retry loop is one atomic read-modify-write at
 * its successful CAS (failed rounds have no side effects).
 */
#define NADDR 2
#include "futex.pml"

#ifndef NITER
#define NITER 2
#endif
#ifndef NWRITERS
#define NWRITERS 2
#endif
#ifndef NREADERS
#define NREADERS 1
#endif
#ifndef SPUR
#define SPUR 1
#endif
#ifndef PINCAP
#define PINCAP 7	/* RW_PINS: 3 bits */
#endif
#ifndef BREAK
#define BREAK 0
#endif
/* Which writers may ask for a hand-off: -DREQ_ALL both (minutes more),
 * else the ring writer only (make check's bound). */
#ifdef REQ_ALL
#define REQ_BY(ring) true
#else
#define REQ_BY(ring) (ring)
#endif

/* __state: count in bits 0-2 (0 unlocked, 1..MAXR readers, WL write-locked),
 * READERS_WAITING bit 3, WRITERS_WAITING bit 4, WRITER_FIRST bit 5,
 * WAITERS (registered waiters: from their first WAIT step until they take
 * the lock or give up; destroy says -EBUSY while it is not 0) bits 6-8,
 * WRITER_WOKEN (a woken writer has not stepped yet: no other writer is
 * woken meanwhile) bit 9, REQ (a writer asks for a hand-off) bit 10; count
 * HANDED: the lock is held for the woken writer. */
#define WL 7
#define HANDED 6	/* count: held for the woken writer (a hand-off) */
#define MAXR 5
#define RW 8
#define WW 16
#define FIRST 32
#define WAITING (RW | WW)
#define CNT_ONE 64
#define CNT(s) ((s) & 448)
#define WOKEN 512
#define REQ 1024	/* a writer asks for a hand-off */
#define COUNT(s) ((s) & 7)
/* rw_tidy: with nobody registered, no woken writer is on its way, nobody
 * asks, and a hand-off has nobody to claim it (the lock goes free). */
#define TIDY(s) (CNT(s) == 0 ->							\
	(COUNT(s) == HANDED -> (s) & ~(WOKEN | REQ | 7) : (s) & ~(WOKEN | REQ)) : (s))
#define UNLOCKED(s) (COUNT(s) == 0)
/* rw_read_lockable: not write-locked (nor full), no reader asleep, and
 * joining readers only while no waiting writer said WRITER_FIRST (FIRST
 * counts only with WW). -DBREAK=2: FIRST refuses a free lock too (a
 * reader sleeps on the free lock a write unlock left for the readers it
 * woke, shutting them out: everyone sleeps). */
#define LOCKABLE_WAITED(s) (COUNT(s) < MAXR && ((s) & RW) == 0)
#if BREAK == 2
#define LOCKABLE(s) (LOCKABLE_WAITED(s) && ((s) & (WW | FIRST)) != (WW | FIRST))
#else
#define LOCKABLE(s) (LOCKABLE_WAITED(s) &&						\
	(COUNT(s) == 0 || ((s) & (WW | FIRST)) != (WW | FIRST)))
#endif
/* rd_step's rule (rd_lockable): a registered reader (it has announced
 * itself: a write unlock's phase-fair wake may be for it) is not held back
 * by WRITER_FIRST, so every reader woken for a read phase gets in, not
 * only the first (lib/rwlock.c). That is fairness, not liveness: with the
 * newcomers' rule for all the model passes too, so no BREAK variant. */
#define RD_LOCKABLE(s) (registered -> LOCKABLE_WAITED(s) : LOCKABLE(s))

/* -DBREAK=1: a waker leaves WRITER_FIRST behind when it clears
 * WRITERS_WAITING (the model must find the bit outliving its writers). */
#if BREAK == 1
#define WAKE_CLEARS (WW)
#else
#define WAKE_CLEARS (WW | FIRST)
#endif

#if BREAK == 3
#define WAKE_TAKE_BACK skip
#else
#define WAKE_TAKE_BACK state = state & ~WOKEN
#endif
/* A hand-off whose wake found nobody asleep frees the lock again (a
 * registered reader could not claim it, so it is not left for whoever is
 * registered, as the mutex's is): the writer that asked may be between its
 * announcement and its sleep, and give up there. -DBREAK=5: the waker only
 * takes WRITER_WOKEN back and leaves the lock handed (the model must find
 * the waiters behind it asleep for ever). */
#if BREAK == 5
#define HAND_TAKE_BACK state = state & ~WOKEN
#else
#define HAND_TAKE_BACK state = TIDY((state - HANDED) & ~WOKEN)
#endif

#define A_STATE 0
#define A_NOTIFY 1

#define DONE 0
#define WAIT 1

short state;	/* l->__state */
byte pins;	/* l->__notify's PINS */
byte nrel;	/* ghost: operations that released the lock or gave up */
bool freed;	/* ghost: destroyed once all had, and the lock was free */

/* A waker's step: the lock was not destroyed under it. */
#define LIVE assert(!freed)
byte notify;	/* l->__notify (bit 0, SHARED, left out; +1 per bump) */
byte readers, writers;	/* inside now */

/*
 * wake_writer_or_readers(l, s, assume_ww, readers_first) (lib/rwlock.c);
 * `aw` is assume_ww, `rf` readers_first (a write unlock: waiting readers
 * go next, keeping WRITERS_WAITING and WRITER_FIRST; if no reader was
 * asleep, go on as a read unlock would). Each round decides on the current
 * __state (the collapsed CAS loop); a writer wake is: set WRITER_WOKEN with
 * the clear, __notify += 1 (release), wake 1 on __notify; while
 * WRITER_WOKEN is set no other writer is woken (but by `aw`). A writer
 * wake that finds nobody asleep takes WRITER_WOKEN back and looks again.
 * -DBREAK=3: it does not take the bit back (the model must find the
 * writers asleep for ever behind a woken writer that does not exist).
 */
#define RF(s) (rf && ((s) & RW))
#define wake_writer_or_readers(aw, rf)						\
	do									\
	:: atomic {								\
		LIVE;								\
		if								\
		:: !UNLOCKED(state) -> act = 0	/* locked again: its unlock */	\
		:: UNLOCKED(state) && RF(state) ->				\
			state = state & ~RW; act = 5;				\
			hadww = (state & WW) != 0				\
		:: UNLOCKED(state) && !RF(state) && (state & WW) &&		\
		   (state & WOKEN) && !aw ->					\
			act = 0	/* the woken writer sees to the others */	\
		:: UNLOCKED(state) && !RF(state) &&				\
		   (((state & WW) && !(state & WOKEN)) || aw) ->		\
			hand = (state & REQ) != 0;				\
			state = (state & ~(WAKE_CLEARS | REQ)) | WOKEN |	\
				(hand -> HANDED : 0); act = 1			\
		:: UNLOCKED(state) && !RF(state) && !((state & WW) || aw) &&	\
		   (state & RW) ->						\
			state = state & ~RW; act = 2				\
		:: UNLOCKED(state) && !RF(state) && !((state & WW) || aw) &&	\
		   !(state & RW) ->						\
			act = 0							\
		fi								\
	   };									\
		if								\
		:: act == 0 -> break						\
		:: act == 5 ->							\
			rf = false;						\
			futex_wake(A_STATE, MAXPROC, cnt, tmp);			\
			if							\
			:: cnt > 0 || !hadww -> break				\
			:: else	/* no reader asleep: a writer's turn */		\
			fi							\
		:: act == 1 ->							\
			aw = false;						\
			atomic { LIVE; notify++ };				\
			futex_wake(A_NOTIFY, 1, cnt, tmp);			\
			if							\
			:: cnt > 0 -> break					\
			:: else	/* nobody asleep: WOKEN back, look again */	\
				atomic {					\
					LIVE;					\
					if					\
					:: hand && COUNT(state) == HANDED ->	\
						HAND_TAKE_BACK			\
					:: hand && COUNT(state) != HANDED ->	\
						/* claimed meanwhile */		\
						act = 0				\
					:: !hand -> WAKE_TAKE_BACK		\
					fi					\
				};						\
				if						\
				:: act == 0 -> break				\
				:: else -> hand = false				\
				fi						\
			fi							\
		:: act == 2 ->							\
			futex_wake(A_STATE, MAXPROC, cnt, tmp);			\
			break							\
		fi								\
	od;									\
	act = 0; cnt = 0; hadww = false; rf = false; hand = false

/* rd_step (lib/rwlock.c): take a read lock, or set READERS_WAITING and WAIT
 * on (__state, that value). (count == MAX_READERS, -EAGAIN, is out of
 * reach with this few readers.) */
#define rd_step(r)								\
	atomic {								\
		if								\
		:: RD_LOCKABLE(state) ->					\
			state = TIDY(state + 1 - (registered -> CNT_ONE : 0));	\
			registered = false; r = DONE				\
		:: else ->							\
			state = (state | RW) + (registered -> 0 : CNT_ONE);	\
			registered = true; want = state; r = WAIT		\
		fi								\
	}

/* rd_abandon: deregister (one RMW), then, as an unlock would, wake whoever
 * waits on an unlocked lock. Every woken reader steps before it gives up
 * (the timed-out sleep's last step, the ring op's STOPPING step), and a
 * registered reader's step takes any lock not write-locked, so a write
 * unlock's read phase never rests on a reader that gives up; the pass-on
 * covers paths that give up without that step (-EFAULT) at the cost of a
 * spare wake. The model passes without it, so no BREAK variant drops it. */
#define RD_PASS_ON 3
#define rd_abandon()								\
	atomic {								\
		if								\
		:: registered -> state = TIDY(state - CNT_ONE); registered = false; \
			act = (UNLOCKED(state) && (state & WAITING) -> RD_PASS_ON : 0) \
		:: else								\
		fi								\
	};									\
	if									\
	:: act == 3 -> act = 0; aw = false; rf = false;				\
		wake_writer_or_readers(aw, rf)					\
	:: else -> act = 0							\
	fi

/* wr_step, in its three atomic parts: take (dropping WRITER_FIRST; a
 * registered writer sets WRITERS_WAITING if others are registered) or
 * announce (with WRITER_FIRST once `first`: a ring writer from the start,
 * a blocked one after its bounded sleep ran out); snapshot __notify
 * (acquire); re-load __state and decide. Once it has slept, a writer may
 * be the woken one: both clear WRITER_WOKEN (-DBREAK=4: the announcement
 * does not). */
#if BREAK == 4
#define ANNOUNCE_CLEARS 0
#else
#define ANNOUNCE_CLEARS WOKEN
#endif
#define wr_step(r)								\
	do									\
	:: atomic {								\
		if								\
		:: UNLOCKED(state) || (COUNT(state) == HANDED && slept) ->	\
			state = TIDY(((state - (registered -> CNT_ONE : 0)) &	\
				~(FIRST | (slept -> WOKEN : 0) |		\
				  (req -> REQ : 0))) | WL |			\
				(registered && CNT(state) > CNT_ONE -> WW : 0));	\
			registered = false; r = DONE				\
		:: else ->							\
			state = ((state | WW | (first -> FIRST : 0) |		\
				 (req -> REQ : 0)) &				\
				~(slept -> ANNOUNCE_CLEARS : 0)) +		\
				(registered -> 0 : CNT_ONE);			\
			registered = true; r = WAIT				\
		fi								\
	   };									\
		if								\
		:: r == DONE -> break						\
		:: else								\
		fi;								\
		want = notify;			/* seq = ld_acquire(notify) */	\
		if								\
		:: atomic { UNLOCKED(state) || !(state & WW) -> want = 0 }	\
			/* released, or a waker at work: try again */		\
		:: atomic { !UNLOCKED(state) && (state & WW) -> skip };		\
			break			/* WAIT on (notify, seq) */	\
		fi								\
	od

/* wr_abandon: deregister (one RMW), then decide on the current __state
 * (the collapsed CAS loop): unlocked, act as an unlocker that assumes
 * writers wait; handed, nothing (the woken writer claims it); write-locked,
 * make sure WRITERS_WAITING is set; read-locked,
 * clear both bits and WRITER_FIRST, then wake every writer (after a bump)
 * and, if readers were waiting, every reader. */
#define wr_abandon()								\
	if									\
	:: registered ->							\
		registered = false;						\
		state = TIDY((state - CNT_ONE) &				\
			~((slept -> WOKEN : 0) | (req -> REQ : 0)));		\
		atomic {							\
			if							\
			:: UNLOCKED(state) -> act = 3				\
			:: COUNT(state) == HANDED ->				\
				act = 0	/* the woken writer's: it claims */	\
			:: COUNT(state) == WL -> state = state | WW; act = 0	\
			:: !UNLOCKED(state) && COUNT(state) != WL &&		\
			   COUNT(state) != HANDED ->				\
				hadrw = (state & RW) != 0;			\
				state = state & ~(WAITING | FIRST | WOKEN); act = 4 \
			fi							\
		};								\
		if								\
		:: act == 3 -> act = 0; aw = true; rf = false;			\
			wake_writer_or_readers(aw, rf)				\
		:: act == 4 -> act = 0;						\
			notify++;						\
			futex_wake(A_NOTIFY, MAXPROC, cnt, tmp);		\
			if							\
			:: hadrw -> futex_wake(A_STATE, MAXPROC, cnt, tmp)	\
			:: else							\
			fi;							\
			cnt = 0; hadrw = false					\
		:: else								\
		fi								\
	:: else									\
	fi

/* rdunlock / wrunlock (fast paths and *_slow). An unlock that will wake
 * (the last reader with a waiting bit; a writer with one) pins the lock
 * before its release (here with it: the pin is seen no later) and unpins
 * after its wakes. */
#define PIN(c)									\
	pin = (c) && BREAK != 6 && pins < PINCAP;				\
	if :: pin -> pins++ :: else fi

/* ursa__pin: an unlock that will pin waits, before its release, while all
 * PINCAP pins are taken (pins that stay, dead, are not modelled: it then
 * goes on without one, as -DBREAK=9 always does). The guard opens each
 * release step below. */
#define PIN_FREE(c)	(!(c) || pins < PINCAP || BREAK == 9 || BREAK == 6)

#define UNPIN()									\
	atomic { LIVE; if :: pin -> pins-- :: else fi; pin = false }

#if BREAK == 8
/* -DBREAK=8: the read unlock as it was, a load and, if it saw no waiting
 * bit, a subtraction that decides nothing more (no pin) but may
 * still make it the last reader out with a bit set in between: rejected
 * (its wake touches a lock its writer took, unlocked and destroyed). */
#define RD_RELEASE()								\
	if									\
	:: !(state & WAITING) ->						\
		atomic {							\
			assert(COUNT(state) >= 1 && COUNT(state) != WL);	\
			pin = false; state--; nrel++;				\
			act = (UNLOCKED(state) && (state & WAITING) -> 3 : 0)	\
		}								\
	:: else ->								\
		atomic {							\
			PIN_FREE(COUNT(state) == 1 && (state & WAITING)) ->	\
			assert(COUNT(state) >= 1 && COUNT(state) != WL);	\
			PIN(COUNT(state) == 1 && (state & WAITING));		\
			state--; nrel++;					\
			act = (UNLOCKED(state) && (state & WAITING) -> 3 : 0)	\
		}								\
	fi
#else
/* The compare-and-swap: it pins, or not, on the value it releases. */
#define RD_RELEASE()								\
	atomic {								\
		PIN_FREE(COUNT(state) == 1 && (state & WAITING)) ->		\
		assert(COUNT(state) >= 1 && COUNT(state) != WL);		\
		PIN(COUNT(state) == 1 && (state & WAITING));			\
		state--; nrel++;						\
		act = (UNLOCKED(state) && (state & WAITING) -> 3 : 0)		\
	}
#endif

#define rd_unlock()								\
	RD_RELEASE();								\
	if									\
	:: act == 3 -> act = 0; aw = false; rf = false;				\
		wake_writer_or_readers(aw, rf); UNPIN()				\
	:: else									\
	fi

#define wr_unlock()								\
	atomic {								\
		PIN_FREE(state & WAITING) ->					\
		assert(COUNT(state) == WL);					\
		PIN(state & WAITING);						\
		state = state - WL; nrel++;					\
		act = ((state & WAITING) -> 3 : 0)				\
	};									\
	if									\
	:: act == 3 -> act = 0; aw = false; rf = true;				\
		wake_writer_or_readers(aw, rf); UNPIN()				\
	:: else									\
	fi

/*
 * One process, reader or writer; ring = an io_uring op (first a step, its
 * FUTEX_WAIT the same compare-and-queue, its CQE steps again and re-arms);
 * may_stop: it may give up once (deadline / cancel).
 */
proctype Client(bool writer; bool ring; bool may_stop; byte spur)
{
	short want;
	byte cnt, tmp, r, act, i;
	byte stops = (may_stop -> 1 : 0);
	bool registered, aw, rf, hadrw, hadww, got, first, bnd, slept, req, hand, pin;

	for (i : 1 .. NITER) {
		/* Fast paths: wrlock CAS 0 -> WL (trywrlock also takes an
		 * unlocked state with bits: that is what its step does);
		 * rdlock/tryrdlock take when lockable. A try that fails ends
		 * the operation (-EBUSY); ring ops start with a step. */
		if
		:: !ring && writer ->
			atomic { if :: state == 0 -> state = WL; got = true :: else fi }
		:: !ring && !writer ->
			atomic { if :: LOCKABLE(state) -> state++; got = true :: else fi }
		:: ring
		fi;
		if
		:: got -> goto locked
		:: else
		fi;
		/* A ring writer says WRITER_FIRST from its first step; a blocked
		 * one once it has waited URSA_RW_OVERTAKE_US since its first
		 * announcement, by its own clock: at any later step (every
		 * timing is explored). */
		first = (writer && ring);
		/* ursa__block (lib/time.c) / op_advance + ursa_handle_cqe
		 * (lib/async.c). */
		do
		:: if
		   :: writer && registered && !first -> first = true	/* time's up */
		   :: true
		   fi;
		   /* A writer that has slept may ask for a hand-off at any step
		    * (it has waited long, or a ring writer lost its races); once
		    * it asks it keeps asking until it has the lock or gives up. */
		   if
		   :: writer && slept && !req && REQ_BY(ring) -> req = true
		   :: true
		   fi;
		   if
		   :: writer -> wr_step(r)
		   :: else -> rd_step(r)
		   fi;
			if
			:: r == DONE -> got = true; break
			:: else
			fi;
			/* Deadline past before sleeping / cancel before re-arm. */
			if
			:: stops > 0 -> stops--;
				if :: writer -> wr_abandon() :: else -> rd_abandon() fi;
				nrel++;
				break
			:: true
			fi;
			/* registered: destroy would say -EBUSY now */
			assert(registered && CNT(state) > 0);
			/* A blocked writer's sleep is bounded
			 * (URSA_HANDED_SLEEP_MS at a time): a sleep that may
			 * end at any time. */
#ifdef NO_BOUND
			bnd = false;
#else
			bnd = (writer && !ring);
#endif
			if
			:: writer -> futex_wait(A_NOTIFY, notify, want, (stops > 0 || bnd), spur, r)
			:: else -> futex_wait(A_STATE, state, want, (stops > 0), spur, r)
			fi;
			want = 0; slept = true;
			if
			:: r == R_STOPPED && bnd -> skip	/* the bound: step again */
			:: r == R_STOPPED && stops > 0 ->
				/* Timed out / cancelled: one last step, else
				 * abandon (rd: nothing; wr: pass the wake on). */
				stops--;
				if
				:: writer -> wr_step(r)
				:: else -> rd_step(r)
				fi;
				want = 0;
				if
				:: r == DONE -> got = true
				:: else ->
					if :: writer -> wr_abandon() :: else -> rd_abandon() fi;
					nrel++
				fi;
				break
			:: else
			fi;
			bnd = false
		od;
		want = 0; r = 0; first = false; slept = false; req = false;
locked:
		if
		:: got && writer ->
			got = false;
			atomic { writers++; assert(writers == 1 && readers == 0) };
			writers--;
			wr_unlock()
		:: got && !writer ->
			got = false;
			atomic { readers++; assert(writers == 0) };
			readers--;
			rd_unlock()
		:: else
		fi
	}
}

init {
	atomic {
		/* Writers: a blocking one that never gives up, then a ring one
		 * that may be cancelled. Readers: a blocking one (spurious
		 * wakeups), then a ring one that may be cancelled. */
		run Client(true, false, false, 0);
		if :: NWRITERS > 1 -> run Client(true, true, true, SPUR) :: else fi;
		run Client(false, false, false, SPUR);
		if :: NREADERS > 1 -> run Client(false, true, true, 0) :: else fi
	}
	/* Every operation released the lock or gave up: destroy it.
	 * ursa_rwlock_destroy waits while a pin is held (whatever bit the
	 * pinned unlock is still to take back), then must say 0: the lock
	 * reads 0 once every waker is done. */
	atomic {
		nrel == (NWRITERS + NREADERS) * NITER && (pins == 0 || BREAK == 7) ->
		assert(state == 0);
		if :: pins == 0 -> freed = true :: else fi
	};
	_nr_pr == 1;
	assert(state == 0 && pins == 0);
	assert(len(fq[A_STATE]) == 0 && len(fq[A_NOTIFY]) == 0);
}
