/*
 * tests/models/futex.pml — the kernel side, as every ursa protocol uses it,
 * shared by the models in this folder (spin runs cpp: #include works).
 *
 * What is modelled
 * ----------------
 * Memory is sequentially consistent: every load, store and CAS of a futex
 * word is one atomic Promela step. (Each model says why that is sound for
 * the protocol it checks: single-word protocols are all read-modify-writes
 * on one word, ordered by coherence; the multi-word ones use seq_cst or
 * release/acquire pairs where the argument needs them.)
 *
 * futex_wait(a, val) — FUTEX_WAIT, futex2 futex_wait, or an io_uring
 * IORING_OP_FUTEX_WAIT (kernel/futex.h ursa_k_futex_wait; lib/async.c
 * op_arm): the kernel compares the word with val and queues the waiter in
 * ONE atomic step (both happen under the hash-bucket lock), then the waiter
 * blocks until a wake takes it off the queue. Results:
 *   R_WOKEN    a futex_wake dequeued it (syscall: 0; ring CQE: 0);
 *   R_EAGAIN   the word differed at the compare (-EAGAIN, both kinds);
 *   R_EINTR    a spurious return / a signal (blocking -EINTR or a spurious
 *              0): modelled as returning without queueing, which is
 *              indistinguishable from "queued, then left before any wake
 *              counted it" — nobody observes a queued waiter except a wake;
 *   R_STOPPED  only when the caller allows it (timed wait, cancellable ring
 *              op): the deadline passed or the op was cancelled while still
 *              queued — it leaves the queue uncounted (syscall -ETIMEDOUT;
 *              ring CQE -ECANCELED from the linked timeout or the cancel).
 *              A wake that got there first wins: then the result is
 *              R_WOKEN (the kernel's futex_unqueue decides, and a cancel
 *              that loses leaves the wait's CQE at 0).
 * The queue of each address is FIFO (a channel): the kernel wakes equal
 * priority waiters, threads and ring waiters alike, oldest first.
 *
 * futex_wake(a, n) — FUTEX_WAKE / futex_wake / IORING_OP_FUTEX_WAKE: takes
 * up to n waiters off the head of a's queue, marks them woken, and returns
 * how many (the count ursa's unlockers test).
 *
 * Liveness ("no lost wakeup") is checked as the absence of invalid end
 * states: every worker process runs a bounded number of operations and
 * terminates, and `init` waits for all of them (_nr_pr == 1) before its
 * final assertions. A waiter left asleep with nobody to wake it blocks
 * forever, so init blocks too: spin reports "invalid end state" with the
 * trail. Timeouts/cancels are budgeted and chosen per process at start, so
 * spin also explores every path in which a waiter never gives up — the one
 * that would hang if a wake were lost.
 */

#ifndef MAXPROC
#define MAXPROC 6
#endif
#ifndef NADDR
#define NADDR 2
#endif

#define R_WOKEN 0
#define R_EAGAIN 1
#define R_EINTR 2
#define R_STOPPED 3

chan fq[NADDR] = [MAXPROC] of { byte };	/* sleepers of each futex word, FIFO */
bool woken[MAXPROC];			/* set by a wake, consumed by the sleeper */

/*
 * Sleep on word `w` (an expression naming the futex word) at address index
 * `a` while it equals `val`. `may_stop`: this sleep may end by timeout or
 * cancel. `spur`: a local budget of spurious returns. Result in `res`.
 */
#define futex_wait(a, w, val, may_stop, spur, res)				\
	if									\
	:: atomic { w == val -> fq[a]!_pid }					\
		if								\
		:: atomic { woken[_pid] -> woken[_pid] = false; res = R_WOKEN }	\
		:: atomic { may_stop && !woken[_pid] ->				\
			fq[a]??eval(_pid); res = R_STOPPED }			\
		fi								\
	:: atomic { w != val -> res = R_EAGAIN }				\
	:: atomic { spur > 0 -> spur--; res = R_EINTR }				\
	fi

/* Wake up to n sleepers of address a; cnt = how many woke. `tmp` is a
 * byte local of the caller. */
#define futex_wake(a, n, cnt, tmp)						\
	atomic {								\
		cnt = 0;							\
		do								\
		:: cnt < n && len(fq[a]) > 0 ->					\
			fq[a]?tmp; woken[tmp] = true; cnt++			\
		:: cnt >= n || len(fq[a]) == 0 -> break				\
		od;								\
		tmp = 0								\
	}

/* No sleeper left anywhere (checked at the end). */
#define no_sleepers() (len(fq[0]) == 0 && len(fq[NADDR - 1]) == 0)
