/*
 * tests/models/sem.pml — the counting semaphore of lib/sem.c: __value (the
 * futex word; waiters sleep while it is 0) and __waiters (registered
 * waiters and the bits WOKEN, HANDED, REQ), the Dekker pair between post
 * ("value += 1; load waiters") and a waiter's registration ("waiters += 1;
 * load value"), WOKEN (a post wakes only when no woken waiter is on its
 * way; a waiter that has slept clears it at each step, takes or sleeps, and
 * passes units on after a take; a wake that finds nobody takes it back and
 * serves what came meanwhile), the hand-off (a post with REQ set and no
 * unit free keeps its unit in HANDED for a waiter that has slept; the last
 * waiter to leave, or a designated wake that finds nobody, gives it back
 * to value), and abandon's pass-on; REG (bit 31 of __value: a post that
 * finds it clear adds its unit and looks no further; a waiter sets it after
 * registering, in a read-modify-write that sees the units, and sleeps
 * while the word is REG; the waiter whose leave makes the count 0 clears
 * it, then looks at the count again and puts it back, with a wake if units
 * came) and the post's pin (a post that finds REG takes one before its
 * increment and drops it last; destroy waits while one is held). Blocking
 * waiters (ursa_sem_wait /
 * _trywait / _timedwait over ursa__block), ring waiters
 * (ursa_sem_wait_async: lib/async.c) and a wait-any-like waiter
 * (lib/wait_any.c: woken here, it may leave having taken another object,
 * without stepping) run the same steps. Whether a waiter that has slept
 * has waited the time that lets it set REQ (1 ms, or 131 us per registered
 * waiter when longer) is a free choice at each of its
 * steps, so every interleaving of requests is explored.
 *
 * Checked: no lost wakeup / no deadlock (every waiter that needs a unit
 * gets one: no invalid end state), units conserved (value at the end ==
 * posts - units taken, a claimed hand-off counting as taken), no
 * registration, WOKEN, REQ or HANDED leaked (what ursa_sem_destroy
 * checks), nobody asleep. Deliberately broken variants it rejects
 * (-DBREAK=n): 1 a slept waiter that takes leaves WOKEN set; 2 a slept
 * waiter that fails leaves it set; 3 no take-back when the designated wake
 * finds nobody; 4 the last waiter to leave does not give a hand-off back;
 * 5 the take-back leaves HANDED set; 6 pass-on ignores a pending
 * hand-off; 7 a post that finds REG takes no pin; 8 the last waiter to leave
 * does not look again after clearing REG; 9 (with -DPINCAP=1) a post that
 * finds all pins taken goes on without one instead of waiting for one, as
 * before: its steps after its increment may come after the destroy.
 *
 * Also checked: no post touches the semaphore after it was destroyed. Once
 * every waiter has returned (the posts they needed have all added their
 * units), init destroys it as ursa_sem_destroy does (waiting while a pin
 * is held) and marks it freed; every step of a post after its increment or
 * hand-off asserts it was not.
 *
 * Memory model: lib/sem.c makes every operation of the Dekker pairs
 * seq_cst (post's CAS and loads; the waiter's register/clear and load;
 * the deregistrations, claims and hand-offs and the loads after them; the
 * take-back and its loads), so sequential consistency is what the C code
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
#ifndef PINCAP
#define PINCAP 7	/* S_PINS: 3 bits; -DPINCAP=1 makes two posts meet them full */
#endif
#ifndef BREAK
#define BREAK 0
#endif
#ifdef NO_STOP
#define STOP false	/* the second waiter never gives up (a smaller check) */
#else
#define STOP true
#endif
#ifdef NO_RING
#define RING false	/* the waiter that may give up is a thread */
#else
#define RING true	/* ... a ring op (a cancel may land after its wake) */
#endif

#define DONE 0
#define WAIT 1

byte value;	/* s->__value */
byte nwait;	/* s->__waiters count */
bool wkn;	/* s->__waiters WOKEN: a woken waiter has not stepped yet */
bool hnd;	/* s->__waiters HANDED: a unit kept for a waiter that slept */
bool req;	/* s->__waiters REQ: a waiter asks for a hand-off */
byte taken;	/* units taken, all waiters (claims included) */
byte posts;	/* units posted */
bool reg;	/* s->__value REG: waiters may be registered */
byte pins;	/* s->__waiters PINS */
byte seen;	/* ghost: bit 0 a claim, 1 a take-back of HANDED, 2 a give-back,
		   3 REG put back by a leaver's look again, 4 a fast post */
byte ndone;	/* ghost: waiters that returned */
bool freed;	/* ghost: destroyed after every waiter returned */

/* The ghost seen is kept only where a REACH check reads it (it multiplies
 * the states). */
#ifdef REACH
#define SEEN(b) seen = seen | (b)
#else
#define SEEN(b) skip
#endif

/* A step of a post after its unit became takeable: the semaphore must
 * not have been destroyed (its pin keeps it). */
#define LIVE assert(!freed)

/* s_take_back: the designated wake found nobody asleep: clear WOKEN and
 * HANDED in one CAS, put a hand-off's unit into value, then (posts that
 * saw WOKEN did not wake) units free and waiters registered: wake one
 * plainly. */
#define s_take_back()							\
	atomic {							\
		LIVE;							\
		gb = hnd && BREAK != 5;					\
		wkn = false;						\
		if :: BREAK != 5 -> hnd = false :: else fi		\
	};								\
	if								\
	:: gb -> gb = false; atomic { LIVE; value++; SEEN(2) }	\
	:: else								\
	fi;								\
	atomic { LIVE; left = nwait };					\
	if								\
	:: atomic { left > 0 && value > 0 -> skip };			\
		futex_wake(0, 1, cnt, tmp)				\
	:: atomic { !(left > 0 && value > 0) -> skip }			\
	fi;								\
	left = 0; cnt = 0

/* s_wake_one: with waiters registered and no woken waiter on its way,
 * set WOKEN and wake one; if that finds nobody asleep, take back. */
#define s_wake_one()							\
	if								\
	:: atomic { nwait > 0 && !wkn -> LIVE; wkn = true; go = true }	\
	:: atomic { !(nwait > 0 && !wkn) -> LIVE; go = false }		\
	fi;								\
	if								\
	:: go ->							\
		go = false;						\
		futex_wake(0, 1, cnt, tmp);				\
		if							\
		:: cnt == 0 && BREAK != 3 -> s_take_back()		\
		:: else							\
		fi;							\
		cnt = 0							\
	:: else								\
	fi

/* s_unregister: the count went to 0 with our deregistration: clear REG,
 * giving a hand-off nobody is left to claim back into value in the same
 * CAS (gb); then look at the count again: a waiter registered meanwhile
 * gets REG back, and a wake if units are free (posts while REG was clear
 * did not wake). */
#define s_unregister()							\
	atomic {							\
		reg = false;						\
		if :: gb -> value++; SEEN(4) :: else fi;	\
		gb = false						\
	};								\
	if								\
	:: atomic { nwait > 0 && BREAK != 8 -> skip };			\
		atomic { units = (value > 0); reg = true; SEEN(8) }; \
		if :: units -> units = false; s_wake_one() :: else fi	\
	:: atomic { !(nwait > 0 && BREAK != 8) -> skip }		\
	fi

/* The deregistration CAS (s_left): count - 1; a waiter that has slept
 * clears WOKEN (it may be the woken one), a requester its REQ; with
 * nobody left WOKEN, REQ and HANDED go (gb: give HANDED back). claim: it
 * also claims HANDED (a unit taken). */
#define s_left(claim)							\
	nwait--;							\
	if								\
	:: claim -> hnd = false; taken++; SEEN(1)		\
	:: else								\
	fi;								\
	if :: slept -> wkn = false :: else fi;				\
	if :: myreq -> req = false :: else fi;				\
	if								\
	:: nwait == 0 ->						\
		wkn = false; req = false;				\
		if							\
		:: hnd && BREAK != 4 -> hnd = false; gb = true		\
		:: else							\
		fi							\
	:: else								\
	fi;								\
	left = nwait; lefth = hnd

/* s_pass_on, after a slept waiter left: a pending hand-off needs a woken
 * waiter; units free with others registered are passed on. */
#define s_pass_on()							\
	if								\
	:: atomic { left > 0 && ((lefth && BREAK != 6) || value > 0) ->	\
		skip };							\
		left = 0; lefth = false; s_wake_one()			\
	:: atomic { !(left > 0 && ((lefth && BREAK != 6) || value > 0)) -> \
		left = 0; lefth = false }				\
	fi

/* s_leave: deregister (take from value, or give up); the last one
 * unregisters (and gives HANDED back). */
#define s_leave()							\
	atomic { s_left(false) };					\
	registered = false; myreq = false;				\
	if :: left == 0 -> s_unregister() :: else fi

/* sem_take: value > 0: value - 1, then a registered waiter leaves (one
 * that slept passes on). Else a registered waiter that has slept claims a
 * pending hand-off (s_claim). */
#define sem_take(ok)							\
	atomic {							\
		if							\
		:: value > 0 -> value--; taken++; ok = true		\
		:: else -> ok = false					\
		fi							\
	};								\
	if								\
	:: ok && registered ->						\
		if							\
		:: slept && BREAK == 1 ->	/* WOKEN left set */	\
			atomic { slept = false; s_left(false); slept = true }; \
			registered = false; myreq = false;		\
			if :: left == 0 -> s_unregister() :: else fi	\
		:: else -> s_leave()					\
		fi;							\
		if							\
		:: slept -> s_pass_on()					\
		:: else -> left = 0; lefth = false			\
		fi							\
	:: !ok && registered && slept ->				\
		atomic {						\
			if						\
			:: hnd -> s_left(true); ok = true		\
			:: else						\
			fi						\
		};							\
		if							\
		:: ok ->						\
			registered = false; myreq = false;		\
			if						\
			:: left == 0 -> s_unregister()			\
			:: else -> s_pass_on()				\
			fi						\
		:: else							\
		fi							\
	:: else								\
	fi

/* sem_step: take; else (once it has slept) claim; else register and/or
 * (once it has slept: it may be the woken waiter) clear WOKEN, and maybe
 * ask for a hand-off (has it waited long enough? a free choice), in one seq_cst
 * CAS (a hand-off pending by then is claimed first), and look at the
 * count once more. A registered waiter that has not slept sleeps again. */
#define sem_step(r)							\
	do								\
	:: sem_take(ok);						\
		if							\
		:: ok -> ok = false; r = DONE; break			\
		:: !ok && registered && !slept -> r = WAIT; break	\
		:: !ok && (!registered || slept) ->			\
			if						\
			:: slept -> want = true				\
			:: true -> want = false				\
			fi;						\
			atomic {					\
				if					\
				:: hnd && registered && slept ->	\
					claimnow = true			\
				:: else ->				\
					claimnow = false;		\
					if				\
					:: !registered ->		\
						registered = true;	\
						nwait++			\
					:: else				\
					fi;				\
					if				\
					:: slept && BREAK != 2 ->	\
						wkn = false		\
					:: else				\
					fi;				\
					if				\
					:: want && !hnd ->		\
						if			\
						:: !req -> myreq = true	\
						:: else			\
						fi;			\
						req = true		\
					:: else				\
					fi				\
				fi					\
			};						\
			want = false;					\
			if						\
			:: claimnow -> claimnow = false	/* claim it */	\
			:: else ->					\
				if					\
				:: atomic { value == 0 ->		\
					reg = true; r = WAIT };		\
					break				\
				:: atomic { value != 0 -> reg = true }	\
				fi					\
			fi						\
		fi							\
	od

/* ursa__sem_abandon: deregister (one that slept also clears WOKEN); then
 * pass on (a wake this waiter consumed, a hand-off it was woken for). */
#define sem_abandon()							\
	if								\
	:: registered ->						\
		s_leave();						\
		if							\
		:: slept -> s_pass_on()					\
		:: else -> left = 0; lefth = false			\
		fi							\
	:: else								\
	fi;								\
	left = 0; cnt = 0

/* ursa__pin: with all PINCAP pins taken, wait for one to go (pins that
 * stay, dead, are not modelled: a waker then goes on without one, as
 * -DBREAK=9 always does). */
#define PIN_TAKE()							\
	if								\
	:: pin ->							\
		atomic {						\
			if						\
			:: pins < PINCAP -> pins++			\
			:: pins >= PINCAP && BREAK == 9 -> pin = false	\
			fi						\
		}							\
	:: else								\
	fi

/* ursa_sem_post: REG clear: value + 1, nothing after. REG set: take a
 * pin (waiting while all are taken); then, with REQ set and no unit free, hand the unit off (REQ ->
 * HANDED | WOKEN; wake one unless WOKEN was set; a wake that finds nobody
 * takes back); else value + 1 and a designated wake; drop the pin. */
#define sem_post()							\
	if								\
	:: atomic { !reg -> LIVE; value++; posts++; SEEN(16) }	\
	:: atomic { reg -> LIVE; pin = (BREAK != 7) } ;			\
		PIN_TAKE();						\
		if							\
		:: atomic { req && value == 0 -> skip };		\
			atomic {					\
				if					\
				:: req && !hnd && nwait > 0 ->		\
					req = false; hnd = true; posts++; \
					go = !wkn; wkn = true; ho = true \
				:: else -> ho = false			\
				fi					\
			}						\
		:: atomic { !(req && value == 0) -> ho = false }	\
		fi;							\
		if							\
		:: ho ->						\
			ho = false;					\
			if						\
			:: go ->					\
				go = false;				\
				futex_wake(0, 1, cnt, tmp);		\
				if :: cnt == 0 -> s_take_back() :: else fi; \
				cnt = 0					\
			:: else						\
			fi						\
		:: else ->						\
			atomic { value++; posts++ };			\
			s_wake_one()					\
		fi;							\
		atomic { LIVE; if :: pin -> pins-- :: else fi; pin = false } \
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
proctype Waiter(bool may_stop; bool any; byte spur; bool ring)
{
	byte cnt, tmp, r, left;
	byte stops = (may_stop -> 1 : 0);
	bool registered, ok, slept, go, gb, ho, lefth, want, claimnow, myreq;
	bool units, pin;

again:
	slept = false;	/* a new wait (the semaphore's ring ops start so too) */
	/* ursa_sem_wait: trywait first (and the spin: more takes). */
	sem_take(ok);
	if :: ok -> ok = false; r = DONE; goto out :: else fi;
	do
	:: sem_step(r);
		if :: r == DONE -> goto out :: else fi;
		if
		:: stops > 0 -> stops--; sem_abandon(); goto again
		:: true
		fi;
		futex_wait(0, (reg && value == 0), 1, (stops > 0 || any), spur, r);
		slept = true;
		if
		:: r == R_WOKEN && any ->	/* took another object */
			sem_abandon();
			r = WAIT;
			goto out
		:: r == R_STOPPED && any ->	/* woken by its other object */
			sem_abandon();
			r = WAIT;
			goto out
		:: r == R_WOKEN && ring && stops > 0 ->
			/* a cancel that lands after the wake: the op ends
			 * without stepping */
			stops--;
			sem_abandon();
			goto again
		:: r == R_STOPPED && ring ->	/* cancelled: no last step */
			stops--;
			sem_abandon();
			goto again
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
	fi;
	ndone++
}

proctype Poster()
{
	byte cnt, tmp, left;
	bool go, gb, ho, units, pin;
	sem_post()
}

init {
	atomic {
		/* A waiter that never gives up (spurious wakeups), one that may
		 * time out or be cancelled (a ring op unless -DNO_RING), and the
		 * wait-any-like third party;
		 * one post per plain waiter. */
		run Waiter(false, false, SPUR, false);
		run Poster();
		if :: NWAITERS > 1 -> run Waiter(STOP, false, 0, RING); run Poster() :: else fi;
		if :: NWAITERS > 2 -> run Waiter(false, true, 0, false) :: else fi
	}
	/* Every waiter returned: destroy (it waits while a post holds a
	 * pin) and free. */
	ndone == NWAITERS;
	atomic { pins == 0 -> freed = true };
	_nr_pr == 1;
	assert(value == posts - taken);
	assert(nwait == 0 && !wkn && !hnd && !req && pins == 0);
#ifdef REACH
	/* -DREACH=n: a check that must fail, showing that some run reaches
	 * the path (1 a claim, 2 a take-back of HANDED, 4 a give-back, 8 REG put
	 * back by a leaver's look again, 16 a fast post). */
	assert((seen & REACH) == 0);
#endif
	assert(len(fq[0]) == 0);
}
