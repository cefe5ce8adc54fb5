/* SPDX-License-Identifier: MIT */
/*
 * lib/rwlock.c — the 8-byte reader-writer lock: phase-fair at a write
 * unlock (the readers that wait go before the writers that wait), writer
 * preference otherwise (after a bounded overtaking by readers that join a
 * read phase under way). Rust std's futex RwLock
 * (library/std/src/sys/sync/rwlock/futex.rs) in the step model, with
 * timeouts/abandon, error checks, a stored shared flag and the read phase.
 * Spin model: tests/models/rwlock.pml.
 *
 * Inline fast paths (include/ursa/rwlock.h, since URSA_0.2): where __state
 * is a count alone (no bit at or above RW_WAITER), a read lock adds 1 (up
 * to MAX_READERS), a read unlock subtracts 1, and a write lock / unlock is
 * 0 <-> MASK; anything else calls out of line. They are special cases of
 * the transitions below, so the spin model covers them; but the count's
 * values and "a count alone: nobody waits" are compiled into programs
 * (changing them bumps the soname). Measured (bench/README.md, "The rwlock
 * inline"): uncontended write lock+unlock 16.5-17.2 ns through the exported
 * calls, 12.5-13.0 ns inline; read 18.5-18.8 and 17.4-17.9 (in ursa-bench
 * 17.9-18.3, glibc 17.2-17.6: the load before the read lock's CAS, right
 * after the last unlock's locked subtraction, costs about 3 ns, and glibc's
 * read lock is one fetch-and-add). A read lock that guesses the lock free
 * (a CAS from 0, no load first) took 14.3 ns, but under contention the
 * guess fails and costs a round trip of the line: rw95 with empty sections
 * at 16 / 32 threads 0.80-0.90 / 0.74-0.77x glibc's rate, against 0.96-0.97
 * / 0.93 with the load (0.89-0.91 / 0.88-0.96 out of line). On one CPU the
 * rw rows with empty sections at 4-8 threads ran 3-12% slower inline, at 2
 * threads 8-9% faster (not explained). The read unlock keeps its load too:
 * without it, a read unlock of a free or write-held lock (-EPERM) would
 * show other threads a wrong __state before its undo (bench/README.md,
 * "Tried, not kept: the read unlock without its load").
 *
 * Readers sleep on __state itself; writers sleep on __notify, a counter
 * bumped before every writer wake, so that a writer is woken by "a writer
 * may go now" and not by every reader coming and going.
 *
 * Transitions (every change of __state is an atomic read-modify-write):
 *   read lock:    count + 1 if rw_read_lockable: count < MAX_READERS, no
 *                 reader sleeps (READERS_WAITING), and the lock is free or
 *                 the waiting writer has not said WRITER_FIRST (joining a
 *                 read phase under way: below). A registered reader (it
 *                 has waited: a write unlock may have woken it for a read
 *                 phase) ignores WRITER_FIRST. READERS_WAITING on an
 *                 unlocked lock means an unlocker woke a writer: readers
 *                 wait for it. Else set READERS_WAITING and sleep while
 *                 __state is that value. count == MAX_READERS: -EAGAIN.
 *   write lock:   count 0 -> MASK, keeping the waiting bits but WRITER_FIRST;
 *                 a writer that has slept also takes HANDED -> MASK (the
 *                 claim), clearing WRITER_WOKEN and its own WRITER_REQ;
 *                 a writer that has announced itself sets WRITERS_WAITING
 *                 if other waiters are registered (writers may sleep
 *                 behind it; the waker cleared it to wake one). Once it
 *                 has slept, every step clears WRITER_WOKEN (it may be the
 *                 woken writer). Else set WRITERS_WAITING (with WRITER_FIRST
 *                 once it has waited URSA_RW_OVERTAKE_US, or for a ring
 *                 writer from the start; with WRITER_REQ once it has waited
 *                 URSA_FAIR_NS, scaled by the queue as the mutex's, or for
 *                 a ring writer once it has lost URSA_HANDOFF_AFTER races),
 *                 seq = __notify (acquire), re-load
 *                 __state, and sleep while __notify == seq if the lock is
 *                 still held and the bit still set; a blocked writer
 *                 sleeps at most URSA_HANDED_SLEEP_MS, then steps again.
 *   read unlock:  count - 1; the last reader, if a bit is set, runs
 *                 wake_writer_or_readers. write unlock: MASK -> 0, the
 *                 same with readers_first. An unlock that will wake takes
 *                 a pin in __notify before its release and drops it after
 *                 its wakes ("Pins").
 *   wake_writer_or_readers, only while unlocked (locked again: that holder's
 *   unlock takes over):
 *     readers_first and READERS_WAITING set (the read phase): clear only
 *                           READERS_WAITING, wake every reader; they take
 *                           the lock whatever the writers' bits say, and
 *                           the last of them to unlock wakes a writer. If
 *                           no reader was asleep, go on as below;
 *     WRITERS_WAITING and WRITER_WOKEN set: nothing (a woken writer has
 *                           not stepped yet; when it does, it takes the
 *                           lock, setting WRITERS_WAITING for the others,
 *                           or sets it again and sleeps);
 *     WRITERS_WAITING set:  clear it (and WRITER_FIRST), set WRITER_WOKEN,
 *                           __notify += 16, wake one writer; with
 *                           READERS_WAITING too, the readers stay blocked
 *                           behind it. With WRITER_REQ set, clear it too and
 *                           leave the lock HANDED (count MASK - 1): held for
 *                           the writer woken, which only a writer that has
 *                           slept claims. If the wake found no writer
 *                           asleep, clear WRITER_WOKEN (and HANDED -> 0,
 *                           unless claimed meanwhile) and look again (a
 *                           writer that slept meanwhile saw it and was not
 *                           woken);
 *     only READERS_WAITING: clear it, wake every reader.
 *   WAITERS 0:    WRITER_WOKEN and WRITER_REQ are cleared (nobody is on
 *                 its way, nobody asks), HANDED -> 0 (nobody to claim it).
 *   A writer that gives up repairs what it may leave behind (wr_abandon);
 *   a reader that gives up and finds the lock unlocked with a waiting bit
 *   wakes as an unlock would (rd_abandon).
 *
 * Invariant: while a waiter sleeps, its bit is set on __state (readers: in
 * the value they sleep on), or the one who cleared it wakes it — every
 * reader, or one writer, who re-sets WRITERS_WAITING when it takes the lock
 * for the writers still asleep. A writer asleep behind WRITER_WOKEN is seen
 * to by the woken writer (its next step clears the bit, leaving
 * WRITERS_WAITING to the holder's unlock, or sets it by taking the lock),
 * or by the waker whose wake found nobody (it clears the bit and looks
 * again); a writer that gives up after it slept clears the bit and passes
 * the wake on. A HANDED lock is claimed by the writer woken for it (it
 * steps, having slept, before it could give up: wr_abandon), or by
 * another writer that has slept (then the woken one finds it taken and
 * announces itself again), or freed by the waker whose wake found nobody,
 * or by the tidy when nobody is registered; the writers asleep behind it
 * are seen to by the claimer's unlock (it sets WRITERS_WAITING when others
 * are registered). A lock held with a bit set is unlocked by someone who
 * sees the bit. A lock that the read phase leaves unlocked
 * with WRITERS_WAITING set is taken by the readers it woke: each steps (a
 * woken waiter always does before it gives up), and a registered reader's
 * step takes an unlocked lock unless READERS_WAITING is set, which a
 * reader sets on an unlocked lock only if it is set already (a new reader
 * takes a free lock whatever the writers' bits say: were WRITER_FIRST to
 * refuse it, it would sleep there and set READERS_WAITING, shutting out the
 * woken readers while the writers sleep; -DBREAK=2 in the model).
 * Sleeping on a word follows lib/step.h; the one cross-word case: the
 * writer's "set WRITERS_WAITING; load __notify (acquire); re-load __state"
 * against the waker's "clear it (RMW); bump __notify (release); wake":
 * either the re-load sees the clear, or the bump comes after the snapshot
 * and the sleep cannot miss it. A wake's result
 * counts ring and thread waiters alike, so "no writer was asleep" is exact.
 * A quiescent lock reads 0: every bit a waiter that gave up leaves is
 * cleared by the next unlock (destroy relies on it).
 *
 * WRITER_FIRST is admission policy, not a waiting bit: it only keeps new
 * readers out of a read phase while WRITERS_WAITING is set, nobody sleeps
 * on it and no wake depends on it. It is cleared with WRITERS_WAITING (by a
 * waker, or a writer that gives up on a read-locked lock) and by every
 * writer that takes the lock, so it never outlives the writers it speaks
 * for, and a quiescent lock still reads 0.
 *
 * Starvation: readers never starve writers. A waiting writer lets new
 * readers join the read phase under way until it has waited
 * URSA_RW_OVERTAKE_US (2 ms) since it first announced itself (a ring
 * writer not at all), then shuts them out with WRITER_FIRST (but for those
 * that find the lock free, between two holders); the count drains and the
 * last reader wakes a writer. It sees that its time is up when it steps:
 * at a wake, or when its bounded sleep (URSA_HANDED_SLEEP_MS, 10 ms) ends.
 * So a blocked writer is overtaken by readers for 2 ms, or up to 10 ms
 * when no unlock wakes it meanwhile, plus the longest read section then
 * under way, plus the read phase of the readers that waited when a write
 * section ended (plus a scheduling delay). Its sleep used to be bounded
 * by the rest of its 2 ms; a timeout that short (under the kernel's tick)
 * re-programs the CPU's timer as it is armed and as it is cancelled, a VM
 * exit each in a virtual machine, and 88-100% of these sleeps ended by a
 * wake, not the timeout. Measured (bench/README.md, "Short sleep
 * bounds"): one CPU, a yield in the section, rw50 at 4-8 threads 0.70x
 * glibc's rate -> 1.05-1.08x; 2 CPUs, the yield rows 8-57% faster at
 * 4-32 threads and rw50 with 1 us sections 0.88-0.99x -> 0.98-1.01x,
 * while the least-served thread's share with 1 us sections at 16-32
 * threads fell to glibc's level (0.05-0.42, glibc's 0.01-0.46; 0.41-0.67
 * before).
 * Readers that hold the lock run in parallel meanwhile, which pays where
 * a holder is off the CPU (2 CPUs, rw50 with a yield in the section at
 * 8-32 threads: 0.73-0.77x glibc's rate without joining, 0.84-0.96x with
 * it); under a steady stream of short reads the writer waits out its 2 ms
 * instead of one drain (rw95, empty sections, 4-16 threads: about a fifth
 * less throughput, still 1.4-1.8x glibc's on AMD EPYC vCPUs; on Intel Xeon
 * ones 0.66-0.78x then, and 0.89-1.07x at 4-32 threads since the spin
 * looks at the word after every 8th yield (d05bef7), because glibc's
 * threads there fall into a convoy on one CPU, not because of joining;
 * with 100 ns of work between operations 1.3-2.0x; bench/README.md).
 *
 * Writers do not starve readers either, unless they barge: a write unlock
 * that finds readers waiting lets them all in before the writers that wait
 * (phase-fair, as Brandenburg and Anderson's phase-fair lock, without its
 * ticket order), but a running writer may take the lock before the woken
 * readers do (each later write unlock wakes them again). Until then a
 * waiting writer went first, so readers waited until no writer slept; with
 * a yield in the section on 2 CPUs that cost a context switch every few
 * operations: rw50 0.79-0.93x glibc's rate at 8-32 threads, 1.5-1.9x at
 * 4-32 with the read phase (bench/README.md, "The rwlock's read phase").
 * Writers are not FIFO among themselves: a running writer may barge in
 * ahead of a woken one, so a ring writer, woken late, can lose repeatedly.
 * So a writer that has waited URSA_FAIR_NS (URSA_FAIR_PER_WAITER_NS per
 * registered waiter when that is longer), or a ring writer that lost
 * URSA_HANDOFF_AFTER races, asks (WRITER_REQ): the next writer wake hands
 * the lock over (HANDED), as the mutex's REQ/HANDED do; no newcomer takes
 * a handed lock, and a hand-off that finds nobody asleep frees the lock
 * again (a registered reader cannot claim it, so it is not left for
 * whoever is registered, as the mutex's is). A writer that gives up leaves
 * a handed lock alone: the writer woken for it steps before it could give
 * up, and claims it (wr_abandon). Measured without it
 * (bench/README.md, "A writer among writers"): no writer starved, but a
 * ring writer's p99 wait against 16 writers was 2-3 times the mutex's.
 * The woken writer (WRITER_WOKEN), the mutex's designated waker for the
 * writers: until it has stepped, no unlock wakes another writer, and
 * newcomers queue instead of spinning. Without it, with 1 us sections and
 * 16 threads on 2 CPUs (rw50), 97% of the writer wakes found nobody
 * asleep: a writer announces itself, and before it is in the kernel an
 * unlock clears its bit, bumps __notify and wakes; its futex_wait then
 * returns at once, it steps and announces again, and the next unlock
 * does the same (and a writer that took the lock kept WRITERS_WAITING
 * set even with no other waiter registered). With it, a quarter or less
 * of the futex wakes and waits, and rw50 with 1 us sections at 4 / 8
 * threads runs 1.2x as fast (0.92-0.96x glibc's, from 0.71-0.81x); the
 * least-served thread's share there falls (at 8 threads 0.82-0.92 to
 * 0.71-0.76, glibc's 0.40-0.63): a writer asleep behind a woken one is
 * not woken early (bench/README.md, "The rwlock's woken writer").
 *
 * Limits: a registered waiter that vanishes without giving up (its ring
 * torn down with the wait in flight) leaves WAITERS raised (destroy says
 * -EBUSY), and if it was the woken writer, writers wait for it: blocked
 * ones until their bounded sleep ends, ring ones until something else
 * wakes them. Re-initialise such a lock.
 *
 * Pins. An unlock that wakes looks at the lock after its release (the CASes
 * of wake_writer_or_readers, the take-back when a wake found nobody). POSIX
 * lets the lock be destroyed and freed as soon as nobody holds or waits on
 * it, and a waiter that was registered but not asleep can take the lock,
 * unlock it and destroy it in that window. So an unlock that may wake
 * (waiting bits seen before its release: the write unlock's slow path, a
 * read unlock that may be the last with bits set) takes a pin in __notify
 * before it releases and drops it as its last access, and
 * ursa_rwlock_destroy waits while one is held (as the mutex's: lib/mutex.c,
 * "pins"). Every read unlock releases with a compare-and-swap, the inline
 * one compiled into programs (include/ursa/rwlock.h) included, not a
 * subtraction: a subtraction from a count that had no bit at its load can
 * find one set since (a writer announced itself in between) and so make
 * its reader the last one out with a bit, which must wake but could pin
 * only after its release, while that writer takes, unlocks, destroys and
 * frees the lock (-DBREAK=8 in the spin model). The cost: none measured
 * (bench/README.md, "The read unlock's compare-and-swap"). With all 7 pins
 * taken an unlock waits for one to go (ursa__pin, lib/internal.h), as
 * destroy would wait for them, still holding the lock. A pin held for a
 * second (a process killed inside an unlock of a URSA_SHARED lock) is
 * dead: destroy says -EBUSY, and an unlock that found all 7 taken goes on
 * without one.
 *
 * ABA: a writer misses a wake only if exactly 2^28 writer wakes happen
 * between its snapshot of __notify and its sleep.
 */
#include "lib/internal.h"
#include "lib/trace.h"

/* __state */
#define RW_MASK		   ((1u << 15) - 1) /* bits 0-14: the count */
#define RW_WRITE_LOCKED	   RW_MASK	    /* count: write-locked */
#define RW_HANDED	   (RW_MASK - 1)    /* count: held for the woken writer */
#define RW_MAX_READERS	   (RW_MASK - 2)    /* count: 1..MAX readers hold it */
#define RW_WAITER	   (1u << 15)	    /* bits 15-26: WAITERS, counted from */
#define RW_WAITERS	   (((1u << 12) - 1) << 15) /* a first WAIT step to take/give up */
#define RW_WRITER_REQ	   (1u << 27)	    /* a writer asks for a hand-off */
#define RW_WRITER_WOKEN	   (1u << 28)	    /* a woken writer has not stepped yet */
#define RW_WRITER_FIRST	   (1u << 29)	    /* with WRITERS_WAITING: no reader joins */
#define RW_READERS_WAITING (1u << 30)	    /* readers may sleep on __state */
#define RW_WRITERS_WAITING (1u << 31)	    /* writers may sleep on __notify */
#define RW_WAITING	   (RW_READERS_WAITING | RW_WRITERS_WAITING)

/* __notify: bit 0 SHARED (constant after init), bits 1-3 PINS (unlocks
 * that may still look at the lock after releasing it: "Pins" above), bits
 * 4-31 the writer wake counter. */
#define RW_NOTIFY_SHARED 1u
#define RW_PIN_ONE	 2u
#define RW_PINS		 0xeu
#define RW_NOTIFY_STEP	 16u

#define RW_NOINLINE __attribute__((noinline))

/* How long a blocked writer lets readers join a read phase under way
 * before it shuts them out (WRITER_FIRST). */
#define URSA_RW_OVERTAKE_US 2000u

_Static_assert(sizeof(ursa_rwlock_t) <= 8, "ursa_rwlock_t must be 8 bytes at most");
_Static_assert(_Alignof(ursa_rwlock_t) == 4, "ursa_rwlock_t must be 4-byte aligned");
_Static_assert(URSA_SHARED == RW_NOTIFY_SHARED, "the shared flag is stored as given");
_Static_assert(URSA__RW_WRITE_LOCKED == RW_WRITE_LOCKED && URSA__RW_MAX_READERS == RW_MAX_READERS,
	       "the inline fast paths (ursa/rwlock.h) compile the count's values into programs");
_Static_assert(RW_MAX_READERS < RW_WAITER && RW_WRITE_LOCKED < RW_WAITER,
	       "a __state below RW_WAITER is a count alone: nobody waits");

static inline uint32_t rw_count(uint32_t s)
{
	return s & RW_MASK;
}

static inline bool rw_unlocked(uint32_t s)
{
	return rw_count(s) == 0;
}

static inline bool rw_write_locked(uint32_t s)
{
	return rw_count(s) == RW_WRITE_LOCKED;
}

/* A reader that has waited may take the lock when it is not write-locked
 * (nor full) and no reader sleeps: it was woken for a read phase, or woke
 * early. */
static inline bool rw_read_lockable_waited(uint32_t s)
{
	return rw_count(s) < RW_MAX_READERS && !(s & RW_READERS_WAITING);
}

/* A new reader, too, but it joins readers that hold the lock only while
 * no waiting writer has said WRITER_FIRST (which counts only with
 * WRITERS_WAITING). It may take a free lock whatever the writers' bits say:
 * a write unlock leaves the lock free with them set for the read phase it
 * wakes, and a reader that sleeps there would set READERS_WAITING on a
 * free lock, shutting out the readers woken for that phase. */
static inline bool rw_read_lockable(uint32_t s)
{
	return rw_read_lockable_waited(s) &&
	       (rw_count(s) == 0 || (s & (RW_WRITERS_WAITING | RW_WRITER_FIRST)) !=
					    (RW_WRITERS_WAITING | RW_WRITER_FIRST));
}

/* The fast paths: one try, no waiting. Acquire: the holder's reads and
 * writes of the protected data come after the take. */
static inline bool rd_take(ursa_rwlock_t *l)
{
	uint32_t s = ld_relaxed(&l->__state);
	return rw_read_lockable(s) && cas_acq(&l->__state, &s, s + 1);
}

static inline bool wr_take(ursa_rwlock_t *l)
{
	uint32_t e = 0;
	return cas_acq(&l->__state, &e, RW_WRITE_LOCKED);
}

/* Tidy a new value: with nobody registered, no woken writer is on its way,
 * nobody asks for a hand-off, and a hand-off has nobody to claim it (the
 * lock goes free). */
static inline uint32_t rw_tidy(uint32_t n)
{
	if (n & RW_WAITERS)
		return n;
	n &= ~(RW_WRITER_WOKEN | RW_WRITER_REQ);
	return rw_count(n) == RW_HANDED ? n - RW_HANDED : n;
}

static inline bool rw_shared(ursa_rwlock_t *l)
{
	/* Bit 0 never changes after init: the counter moves in steps of 2. */
	return ld_relaxed(&l->__notify) & RW_NOTIFY_SHARED;
}

int ursa_rwlock_init(ursa_rwlock_t *l, unsigned flags)
{
	if (!l || ((uintptr_t)l & (_Alignof(ursa_rwlock_t) - 1)) || (flags & ~URSA_SHARED))
		return -EINVAL;
	__atomic_store_n(&l->__notify, flags & URSA_SHARED, __ATOMIC_RELAXED);
	__atomic_store_n(&l->__state, 0, __ATOMIC_RELEASE);
	return 0;
}

int ursa_rwlock_destroy(ursa_rwlock_t *l)
{
	if (!l)
		return -EINVAL;
	/* Held, or waited on by a thread or a ring op (registered from its
	 * first WAIT step until it takes the lock or gives up). A waiting bit
	 * left by a waiter that gave up is cleared by the next unlock, so a
	 * quiescent lock always reads 0 here. Free and unwaited, with an
	 * unlock's pin: that unlock has not finished waking (the bits it
	 * sets and takes back, WRITER_WOKEN, may still be there); let it
	 * ("Pins"). */
	for (unsigned i = 0;; i++) {
		uint32_t n = ld_acquire(&l->__notify), s = ld_acquire(&l->__state);
		if (!(n & RW_PINS) || rw_count(s) || (s & RW_WAITERS))
			return s ? -EBUSY : 0;
		if (!ursa__pin_wait(i))
			return -EBUSY;
	}
}

/* ---- waking --------------------------------------------------------- */

/* Tell the writers to look again: bump __notify (release: a writer whose
 * acquire load of __notify sees the bump also sees the __state change made
 * before it), then wake n of them. Returns how many woke (threads and
 * rings alike: the kernel counts both). */
static int wake_writers(ursa_rwlock_t *l, int n)
{
	uint32_t v = __atomic_fetch_add(&l->__notify, RW_NOTIFY_STEP, __ATOMIC_RELEASE);
	int r = ursa_k_futex_wake(&l->__notify, n, v & RW_NOTIFY_SHARED);
	return r > 0 ? r : 0;
}

static int wake_writer(ursa_rwlock_t *l)
{
	return wake_writers(l, 1);
}

/*
 * Called with s, an unlocked state seen with a waiting bit (by the last
 * unlocker, or a reader that gives up), or by a writer that gives up
 * (assume_ww: act as if WRITERS_WAITING were set, because a wake meant for
 * that writer may have cleared it while other writers still sleep).
 * readers_first: a write unlock; readers that wait go next (phase-fair),
 * unless none was asleep. Never blocks. The clearing CASes are relaxed:
 * they read-modify-write __state, so they continue the release sequence of
 * the unlock before them, and the wakes that follow are system calls the
 * kernel orders after them.
 */
static void wake_writer_or_readers(ursa_rwlock_t *l, uint32_t s, bool assume_ww,
				   bool readers_first)
{
	for (;;) {
		if (!rw_unlocked(s))
			return; /* locked again: that holder's unlock sees the bits */
		if (readers_first && (s & RW_READERS_WAITING)) {
			/* A write phase ended with readers waiting: a read phase
			 * next. Only READERS_WAITING is cleared: a writer that
			 * waits keeps its bits, so new readers join only as
			 * rw_read_lockable allows, the woken ones (registered)
			 * take the lock whatever the writers' bits say, and the
			 * last of them to unlock wakes a writer. If no reader
			 * was asleep (a bit left by one that gave up), the
			 * writers' turn. */
			if (!cas_relaxed(&l->__state, &s, s & ~RW_READERS_WAITING))
				continue;
			readers_first = false;
			s &= ~RW_READERS_WAITING;
			if (ursa_k_futex_wake(&l->__state, INT_MAX, rw_shared(l)) > 0 ||
			    !(s & RW_WRITERS_WAITING))
				return;
			continue;
		}
		if ((s & RW_WRITERS_WAITING) && (s & RW_WRITER_WOKEN) && !assume_ww)
			return; /* the woken writer sees to the others when it steps */
		if ((s & RW_WRITERS_WAITING) || assume_ww) {
			/* A writer asks (REQ): hand the lock to the writer we
			 * wake (HANDED: only a writer that has slept claims it). */
			bool hand = s & RW_WRITER_REQ;
			uint32_t n = (s & ~(RW_WRITERS_WAITING | RW_WRITER_FIRST | RW_WRITER_REQ)) |
				     RW_WRITER_WOKEN | (hand ? RW_HANDED : 0);
			if (!cas_relaxed(&l->__state, &s, n))
				continue;
			assume_ww = false;
			/* Writers only: wake one; it takes the lock (re-setting the
			 * bit for any other sleeping writer). With readers waiting
			 * too, they stay blocked behind that writer. */
			if (wake_writer(l) > 0)
				return;
			if (hand) {
				/* Nobody was asleep to claim the hand-off: free the
				 * lock again (a registered reader could not claim
				 * it), unless a writer that has slept claimed it
				 * meanwhile (its unlock sees to the rest). */
				uint32_t f;
				s = n;
				do {
					if (rw_count(s) != RW_HANDED)
						return;
					f = rw_tidy((s - RW_HANDED) & ~RW_WRITER_WOKEN);
				} while (!cas_relaxed(&l->__state, &s, f));
				s = f;
				continue;
			}
			/* Nobody was asleep: take WRITER_WOKEN back (nobody else
			 * will), and look again: a writer that slept meanwhile
			 * was not woken by its holder's unlock (it saw the bit),
			 * and the readers that wait go next if no writer does.
			 * Each round needs a new sleeper, so this ends. */
			s = __atomic_and_fetch(&l->__state, ~RW_WRITER_WOKEN, __ATOMIC_RELAXED);
			continue;
		}
		if (!(s & RW_READERS_WAITING))
			return;
		if (cas_relaxed(&l->__state, &s, s & ~RW_READERS_WAITING)) {
			ursa_k_futex_wake(&l->__state, INT_MAX, rw_shared(l));
			return;
		}
	}
}

/* After an unlock that left s: the last one out wakes whoever waits (a
 * writer's unlock: readers first). */
static inline void rw_released(ursa_rwlock_t *l, uint32_t s, bool writer)
{
	if (rw_unlocked(s) && (s & RW_WAITING))
		wake_writer_or_readers(l, s, false, writer);
}

/* ---- steps (shared with lib/async.c) -------------------------------- */

static int rd_abandon(void *obj, struct ursa_waiter *w);

/* w->registered: this waiter is counted in WAITERS. */
static inline uint32_t rw_dereg(struct ursa_waiter *w)
{
	return w->registered ? RW_WAITER : 0;
}

/* Deregister w (WAITERS - 1), clearing `clear` too, in one CAS; returns
 * the new state. With nobody left registered, WRITER_WOKEN goes. */
static inline uint32_t rw_deregister(ursa_rwlock_t *l, struct ursa_waiter *w, uint32_t clear)
{
	uint32_t s = ld_relaxed(&l->__state), n;
	do
		n = rw_tidy((s - RW_WAITER) & ~clear);
	while (!cas_relaxed(&l->__state, &s, n));
	w->registered = 0;
	return n;
}

/* Register in the same CAS as the announcement; -EAGAIN if WAITERS is
 * full (4095 waiters). */
static inline bool rw_waiters_full(uint32_t s, struct ursa_waiter *w)
{
	return !w->registered && (s & RW_WAITERS) == RW_WAITERS;
}

/* Announce w with bits (READERS_WAITING, or WRITERS_WAITING maybe with
 * WRITER_FIRST), clear `clear` (a writer that may be the woken one: its
 * WRITER_WOKEN) and register it (WAITERS + 1) in one CAS, unless all is
 * done already. Relaxed: the bits publish no data. false: *s changed
 * under us (reloaded); look again. */
static inline bool rw_announce(ursa_rwlock_t *l, uint32_t *s, struct ursa_waiter *w, uint32_t bit,
			       uint32_t clear)
{
	if ((*s & bit) == bit && !(*s & clear) && w->registered)
		return true;
	uint32_t n = ((*s | bit) & ~clear) + (w->registered ? 0 : RW_WAITER);
	if (!cas_relaxed(&l->__state, s, n))
		return false;
	*s = n;
	w->registered = 1;
	return true;
}

static inline int rw_wait_on(struct ursa_wait *out, uint32_t *addr, uint32_t val, bool shared)
{
	out->addr = addr;
	out->val = val;
	out->shared = shared;
	out->bound_us = 0;
	return URSA_STEP_WAIT;
}

/* A registered reader (it has announced itself, and may have been woken
 * for a read phase) is not held back by WRITER_FIRST; a newcomer is. */
static inline bool rd_lockable(uint32_t s, const struct ursa_waiter *w)
{
	return w->registered ? rw_read_lockable_waited(s) : rw_read_lockable(s);
}

static int rd_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	ursa_rwlock_t *l = obj;
	uint32_t s = ld_relaxed(&l->__state);
	for (;;) {
		if (rd_lockable(s, w)) {
			if (cas_acq(&l->__state, &s, rw_tidy(s + 1 - rw_dereg(w)))) {
				w->registered = 0;
				return URSA_STEP_DONE;
			}
			continue;
		}
		if (rw_count(s) == RW_MAX_READERS) {
			/* One more reader would overflow the count. If an earlier
			 * step of ours set READERS_WAITING and no writer waits
			 * any more, nobody would clear it before the readers
			 * drain: clear it and let the other readers in. */
			if ((s & RW_WAITING) == RW_READERS_WAITING &&
			    cas_relaxed(&l->__state, &s, s & ~RW_READERS_WAITING))
				ursa_k_futex_wake(&l->__state, INT_MAX, rw_shared(l));
			rd_abandon(l, w);
			return -EAGAIN;
		}
		if (rw_waiters_full(s, w))
			return -EAGAIN;
		/* The unlock that makes the lock readable wakes us. */
		if (!rw_announce(l, &s, w, RW_READERS_WAITING, 0))
			continue;
		return rw_wait_on(out, &l->__state, s, rw_shared(l));
	}
}

static int rd_abandon(void *obj, struct ursa_waiter *w)
{
	ursa_rwlock_t *l = obj;
	/* Readers are woken all together, never singled out, but a write
	 * unlock's read phase relies on them: the last woken reader's unlock
	 * wakes the writers. A reader that gives up deregisters, and finding
	 * the lock unlocked with a waiting bit, does what an unlock would (at
	 * worst one spare wake). Its READERS_WAITING bit, if still set, is
	 * cleared by the next unlock (one spare wake). */
	if (w->registered)
		rw_released(l, rw_deregister(l, w, 0), false);
	return 0;
}

/* A writer's w->aux: URSA_W_RING for a ring writer, URSA_W_REQ once it has
 * asked for a hand-off; for a blocked one, once registered, bits 2-31 hold
 * when it first announced itself, in microseconds modulo 2^30 (waits of up
 * to 17 minutes measure right). */
#define RW_STAMP_SHIFT 2
#define RW_AUX_FLAGS (URSA_W_RING | URSA_W_REQ)
static inline uint32_t rw_stamp(void)
{
	return (uint32_t)(ursa_k_now_ns() / 1000u) << RW_STAMP_SHIFT;
}

/* Should this writer ask for a hand-off (s: the state it found; waited: a
 * blocked writer's time since its first announcement, in us)? Once asked,
 * at every step. A blocked writer asks once it has waited URSA_FAIR_NS, or
 * URSA_FAIR_PER_WAITER_NS for each waiter registered if that is longer (as
 * the mutex's, lib/mutex.c "Hand-offs"); a ring writer once it has lost
 * URSA_HANDOFF_AFTER races (woken, then found the lock taken). */
static bool rw_wants_handoff(const struct ursa_waiter *w, uint32_t s, uint32_t waited)
{
	if (w->aux & URSA_W_REQ)
		return true;
	if (w->aux & URSA_W_RING)
		return w->slept && w->losses + 1 >= URSA_HANDOFF_AFTER;
	if (!w->registered)
		return false;
	uint64_t ns = (uint64_t)((s & RW_WAITERS) / RW_WAITER) * URSA_FAIR_PER_WAITER_NS;
	return (uint64_t)waited * 1000u >= (ns > URSA_FAIR_NS ? ns : URSA_FAIR_NS);
}

/*
 * w->registered: this writer is counted in WAITERS and has announced itself
 * (WRITERS_WAITING was set when it last looked); it then keeps the bit when
 * it takes the lock (Rust's other_writers_waiting), and drops WRITER_FIRST:
 * a writer still waiting sets it again when its own time is up.
 *
 * The writer lets readers join a read phase under way until it has waited
 * URSA_RW_OVERTAKE_US since its first announcement (w->aux: rw_stamp()
 * then), as it finds at a step; from then on it announces WRITER_FIRST
 * too. It sleeps URSA_HANDED_SLEEP_MS at a time, stepping again after
 * each, until it has the lock. A ring writer cannot bound its sleep, so it
 * says WRITER_FIRST at once (its template's URSA_W_RING).
 */
static int wr_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	ursa_rwlock_t *l = obj;
	bool ring = w->aux & URSA_W_RING;
	bool first = ring;
	uint32_t waited = 0;
	if (!ring && w->registered) {
		waited = (rw_stamp() - (w->aux & ~RW_AUX_FLAGS)) >> RW_STAMP_SHIFT;
		first = waited >= URSA_RW_OVERTAKE_US;
	}
	/* Once we have slept we may be the woken writer: each step clears
	 * WRITER_WOKEN. */
	uint32_t woken = w->slept ? RW_WRITER_WOKEN : 0;
	uint32_t s = ld_relaxed(&l->__state);
	for (;;) {
		/* A lock handed to the writers is claimed by one that has
		 * slept (the woken one, or one whose bounded sleep ended). */
		if (rw_unlocked(s) || (rw_count(s) == RW_HANDED && w->slept)) {
			uint32_t n = (s - rw_dereg(w)) & ~(RW_WRITER_FIRST | woken);
			if (w->aux & URSA_W_REQ)
				n &= ~RW_WRITER_REQ; /* served, or no longer waiting */
			if (w->registered && (n & RW_WAITERS))
				n |= RW_WRITERS_WAITING; /* others may sleep: our unlock sees to them */
			n = rw_tidy(n | RW_WRITE_LOCKED);
			if (cas_acq(&l->__state, &s, n)) {
				w->registered = 0;
				w->aux &= ~URSA_W_REQ;
				return URSA_STEP_DONE;
			}
			continue;
		}
		if (rw_waiters_full(s, w))
			return -EAGAIN;
		bool was = w->registered;
		bool req = rw_wants_handoff(w, s, waited);
		uint32_t bits = RW_WRITERS_WAITING | (first ? RW_WRITER_FIRST : 0) |
				(req ? RW_WRITER_REQ : 0);
		/* If we are the woken writer, our turn is over: the bit we set
		 * sees to the others now. */
		if (!rw_announce(l, &s, w, bits, woken))
			continue;
		if (req)
			w->aux |= URSA_W_REQ;
		if (w->slept)
			w->losses++; /* woken (or our sleep ended), and not taken */
		if (!was && !ring)
			w->aux = (w->aux & RW_AUX_FLAGS) | rw_stamp(); /* the overtaking time starts */
		/* Snapshot the counter BEFORE re-checking the state (acquire:
		 * the re-load below cannot be satisfied from before it). A wake
		 * that the re-check misses must bump the counter after our
		 * snapshot, so the futex wait cannot sleep through it. */
		uint32_t seq = ld_acquire(&l->__notify);
		s = ld_relaxed(&l->__state);
		if (rw_unlocked(s) || !(s & RW_WRITERS_WAITING))
			continue; /* released, or a waker is at work: try again */
		rw_wait_on(out, &l->__notify, seq, seq & RW_NOTIFY_SHARED);
		/* A blocked writer's sleep is bounded, URSA_HANDED_SLEEP_MS
		 * at a time: it steps again, seeing whether its overtaking
		 * time is up, even if no unlock wakes it. A write unlock's
		 * read phase leaves the lock to the readers it woke, and a
		 * ring reader's CQE waits for its ring's owner: were that
		 * owner slow (or blocked itself), the writer steps again and
		 * takes the free lock. Not the rest of its overtaking time: a
		 * timeout shorter than the kernel's tick (4 ms at HZ=250)
		 * re-programs the CPU's timer when armed and again when
		 * cancelled, and nearly every such sleep ends by a wake; that
		 * cost a third of the rate with a yield in the section on one
		 * CPU (top of the file, "Starvation"). A ring writer cannot
		 * bound its sleep. */
		out->bound_us = ring ? 0 : URSA_HANDED_SLEEP_MS * 1000u;
		return URSA_STEP_WAIT;
	}
}

/*
 * A writer gives up (deadline, cancel). A writer that a wake counted always
 * steps before it gives up: ursa__block steps after every sleep, the last
 * time after a timed-out one; lib/async.c steps after every CQE, a
 * cancelled op too (its cancel lost to the wake: the CQE says 0), and gives
 * up only if that step says WAIT, having announced itself again; no rwlock
 * wait is a cancellation point (lib/cancel.h) and wait-any takes no rwlock.
 * So a writer that gives up is never the woken writer whose step others
 * count on, and a handed lock (its step claims one) is never its own: it
 * leaves a handed lock to the writer woken for it. As it deregisters it
 * withdraws its request and, once it has slept, clears WRITER_WOKEN (it
 * cannot tell whether the bit is its own; the woken writer's step would
 * clear it too). Then:
 *
 * - On an unlocked lock it wakes as an unlocker would, assuming writers
 *   wait (at worst one spare wake): a defence, kept from before the
 *   argument above was made and model-checked with it.
 * - Its WRITERS_WAITING may now be a phantom: on a read-locked lock it
 *   shuts out every new reader until the current readers leave, for a
 *   writer that no longer waits. There is no count of waiting writers, so
 *   it cannot tell whether the bit is still someone else's too.
 *
 * So:
 *   - unlocked: do what an unlocker would do, as if writers were waiting:
 *     wake one writer, or the readers if no writer was asleep;
 *   - handed: nothing (the woken writer claims it);
 *   - write-locked: make sure WRITERS_WAITING is set, so the holder's unlock
 *     wakes the next writer (a phantom bit costs that unlock one wake of
 *     nobody, then falls through to the readers; it blocks no one extra);
 *   - read-locked: clear both waiting bits and WRITER_FIRST, then wake
 *     every writer and every reader. Live writers step again and
 *     re-announce themselves (setting the bits anew); blocked readers join
 *     the current ones. A thundering herd, but only when a writer gives up
 *     while readers hold the lock.
 */
static int wr_abandon(void *obj, struct ursa_waiter *w)
{
	ursa_rwlock_t *l = obj;
	if (!w->registered)
		return 0;
	/* Deregister (and withdraw our request); once we have slept we may
	 * be the woken writer, whose turn passes on below. */
	uint32_t s = rw_deregister(l, w, (w->slept ? RW_WRITER_WOKEN : 0) |
					     ((w->aux & URSA_W_REQ) ? RW_WRITER_REQ : 0));
	w->aux &= ~URSA_W_REQ;
	for (;;) {
		if (rw_unlocked(s)) {
			wake_writer_or_readers(l, s, true, false);
			return 0;
		}
		if (rw_count(s) == RW_HANDED)
			return 0; /* the woken writer claims it (not us: above) */
		if (rw_write_locked(s)) {
			if ((s & RW_WRITERS_WAITING) ||
			    cas_relaxed(&l->__state, &s, s | RW_WRITERS_WAITING))
				return 0;
			continue;
		}
		if (!cas_relaxed(&l->__state, &s, s & ~(RW_WAITING | RW_WRITER_FIRST | RW_WRITER_WOKEN)))
			continue;
		wake_writers(l, INT_MAX);
		if (s & RW_READERS_WAITING)
			ursa_k_futex_wake(&l->__state, INT_MAX, rw_shared(l));
		return 0;
	}
}

/* ---- read side ------------------------------------------------------ */

static RW_NOINLINE int rdlock_slow(ursa_rwlock_t *l, clockid_t clk, const struct timespec *abs)
{
	/* Spin while a writer holds the lock with nobody queued
	 * (kernel/arch.h; on one CPU looking after each yield, as a reader
	 * that can join the readers after the writer); stop as soon as a
	 * waiting bit shows, or a woken writer is on its way (others sleep:
	 * queue behind them). */
	uint64_t t0 = 0; /* when the yields began (kernel/arch.h) */
	for (int i = 0;;) {
		uint32_t s = ld_relaxed(&l->__state);
		if (rw_read_lockable(s)) {
			if (cas_acq(&l->__state, &s, s + 1))
				return 0;
			continue;
		}
		if ((s & (RW_WAITING | RW_WRITER_WOKEN)) || !rw_write_locked(s) ||
		    !ursa_k_lock_spin(i++, abs != NULL, &t0, true))
			break;
	}
	struct ursa_waiter w = {0};
	URSA_TRACE(rwlock_rdwait_begin, l);
	int r = ursa__block(l, &ursa__rwlock_rd_ops, &w, clk, abs);
	URSA_TRACE(rwlock_rdwait_end, l, r);
	return r;
}

int ursa_rwlock_rdlock(ursa_rwlock_t *l)
{
	if (unlikely(!l))
		return -EINVAL;
	return likely(rd_take(l)) ? 0 : rdlock_slow(l, CLOCK_MONOTONIC, NULL);
}

int ursa_rwlock_tryrdlock(ursa_rwlock_t *l)
{
	if (unlikely(!l))
		return -EINVAL;
	uint32_t s = ld_relaxed(&l->__state);
	while (rw_read_lockable(s)) {
		if (cas_acq(&l->__state, &s, s + 1))
			return 0;
	}
	return rw_count(s) == RW_MAX_READERS ? -EAGAIN : -EBUSY;
}

int ursa_rwlock_timedrdlock(ursa_rwlock_t *l, clockid_t clk, const struct timespec *abs)
{
	if (unlikely(!l))
		return -EINVAL;
	int r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	return likely(rd_take(l)) ? 0 : rdlock_slow(l, clk, abs);
}

/* A read unlock that saw a waiting bit set (or not read-held: -EPERM). A
 * CAS, not a subtraction, so that we know whether we will be the last
 * reader out (and wake) before we release: then pinned ("Pins"). */
static RW_NOINLINE int rdunlock_slow(ursa_rwlock_t *l)
{
	uint32_t s = ld_relaxed(&l->__state), pin = 0;
	bool pinned = false; /* tried: at most one wait for a pin */
	int r = 0;
	for (;;) {
		uint32_t c = rw_count(s);
		if (c == 0 || c == RW_WRITE_LOCKED || c == RW_HANDED) {
			r = -EPERM;
			break;
		}
		/* The last reader out, with a bit: we will wake. */
		if (c == 1 && (s & RW_WAITING) && !pinned) {
			pin = ursa__pin(&l->__notify, RW_PINS, RW_PIN_ONE);
			pinned = true; /* (after a wait s is stale: the CAS re-reads it) */
		}
		/* Release: our reads of the protected data happen before the
		 * next writer's writes. */
		if (cas_rel(&l->__state, &s, s - 1)) {
			rw_released(l, s - 1, false);
			break;
		}
	}
	ursa__unpin(&l->__notify, pin);
	return r;
}

int ursa_rwlock_rdunlock(ursa_rwlock_t *l)
{
	if (unlikely(!l))
		return -EINVAL;
	uint32_t s = ld_relaxed(&l->__state);
	/* Fast: a reader holds it (1..MAX_READERS; c - 1 wraps for c == 0)
	 * and no waiting bit is set, so nobody is to be woken, even if we are
	 * the last reader out. A compare-and-swap, not a subtraction: a bit
	 * set since our load fails it, and then rdunlock_slow decides, pinned,
	 * before the release ("Pins"). Release: our reads of the protected
	 * data happen before the next writer's writes. */
	while (likely(rw_count(s) - 1 < RW_MAX_READERS) && !(s & RW_WAITING))
		if (cas_rel(&l->__state, &s, s - 1))
			return 0;
	/* A waiting bit: we may be the last reader out, and wake (pinned);
	 * or not read-held (-EPERM, the lock unchanged). */
	return rdunlock_slow(l);
}

/* ---- write side ----------------------------------------------------- */

static RW_NOINLINE int wrlock_slow(ursa_rwlock_t *l, clockid_t clk, const struct timespec *abs)
{
	/* Spin until free, or until writers are queued or one woken is on
	 * its way (then queue too). On one CPU not while readers hold it:
	 * while we yield they come and go (a writer that has not announced
	 * itself stops none of them), so a look finds it free only when every
	 * reader happens to be preempted outside its section; asleep, we are
	 * woken by the last reader out (bench/README.md, "One CPU: a reader's
	 * look, a writer's sleep"). */
	uint64_t t0 = 0; /* when the yields began (kernel/arch.h) */
	for (int i = 0;;) {
		uint32_t s = ld_relaxed(&l->__state);
		if (rw_unlocked(s)) {
			if (cas_acq(&l->__state, &s, s | RW_WRITE_LOCKED))
				return 0;
			continue;
		}
		if ((s & (RW_WRITERS_WAITING | RW_WRITER_WOKEN)) ||
		    (!rw_write_locked(s) && ursa_k_cpus() == 1) ||
		    !ursa_k_lock_spin(i++, abs != NULL, &t0, false))
			break;
	}
	struct ursa_waiter w = {0};
	URSA_TRACE(rwlock_wrwait_begin, l);
	int r = ursa__block(l, &ursa__rwlock_wr_ops, &w, clk, abs);
	URSA_TRACE(rwlock_wrwait_end, l, r);
	return r;
}

int ursa_rwlock_wrlock(ursa_rwlock_t *l)
{
	if (unlikely(!l))
		return -EINVAL;
	return likely(wr_take(l)) ? 0 : wrlock_slow(l, CLOCK_MONOTONIC, NULL);
}

/* The inline write lock (ursa/rwlock.h) found __state not 0. */
int ursa__rwlock_wrlock_slow(ursa_rwlock_t *l)
{
	if (unlikely(!l))
		return -EINVAL;
	return wrlock_slow(l, CLOCK_MONOTONIC, NULL);
}

int ursa_rwlock_trywrlock(ursa_rwlock_t *l)
{
	if (unlikely(!l))
		return -EINVAL;
	uint32_t s = 0;
	if (likely(cas_acq(&l->__state, &s, RW_WRITE_LOCKED)))
		return 0;
	/* Free but with a waiting bit (an unlocker is mid-wake): take it,
	 * keeping the bits; our unlock then does the waking. */
	while (rw_unlocked(s)) {
		if (cas_acq(&l->__state, &s, s | RW_WRITE_LOCKED))
			return 0;
	}
	return -EBUSY;
}

int ursa_rwlock_timedwrlock(ursa_rwlock_t *l, clockid_t clk, const struct timespec *abs)
{
	if (unlikely(!l))
		return -EINVAL;
	int r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	return likely(wr_take(l)) ? 0 : wrlock_slow(l, clk, abs);
}

static RW_NOINLINE int wrunlock_slow(ursa_rwlock_t *l)
{
	uint32_t s = ld_relaxed(&l->__state);
	if (!rw_write_locked(s))
		return -EPERM;
	/* Waiting bits (else the fast CAS to 0 had worked): we will wake
	 * after our release; pinned ("Pins"). */
	uint32_t pin = ursa__pin(&l->__notify, RW_PINS, RW_PIN_ONE);
	int r = 0;
	for (;;) {
		if (!rw_write_locked(s)) {
			r = -EPERM;
			break;
		}
		if (cas_rel(&l->__state, &s, s - RW_WRITE_LOCKED)) {
			rw_released(l, s - RW_WRITE_LOCKED, true);
			break;
		}
	}
	ursa__unpin(&l->__notify, pin);
	return r;
}

int ursa_rwlock_wrunlock(ursa_rwlock_t *l)
{
	if (unlikely(!l))
		return -EINVAL;
	uint32_t e = RW_WRITE_LOCKED;
	if (likely(cas_rel(&l->__state, &e, 0)))
		return 0;
	return wrunlock_slow(l);
}

/* The inline write unlock (ursa/rwlock.h) found __state not exactly
 * write-locked. */
int ursa__rwlock_wrunlock_slow(ursa_rwlock_t *l)
{
	if (unlikely(!l))
		return -EINVAL;
	return wrunlock_slow(l);
}

/* The step tables (lib/step.h): readers and writers of one lock. */
static bool rw_is_shared(const void *obj)
{
	return rw_shared((ursa_rwlock_t *)obj);
}

const struct ursa_step_ops ursa__rwlock_rd_ops = {
	.name = "rwlock-read",
	.step = rd_step,
	.abandon = rd_abandon,
	.shared = rw_is_shared,
};

const struct ursa_step_ops ursa__rwlock_wr_ops = {
	.name = "rwlock-write",
	.step = wr_step,
	.abandon = wr_abandon,
	.shared = rw_is_shared,
	.ring = {.aux = URSA_W_RING}, /* no bounded sleep: first at once */
};

int ursa_rwlock_rdlock_async(struct io_uring *r, ursa_rwlock_t *l, struct ursa_op *op)
{
	return ursa__op_start(r, op, &ursa__rwlock_rd_ops, l, NULL, 0);
}

int ursa_rwlock_wrlock_async(struct io_uring *r, ursa_rwlock_t *l, struct ursa_op *op)
{
	return ursa__op_start(r, op, &ursa__rwlock_wr_ops, l, NULL, 0);
}
