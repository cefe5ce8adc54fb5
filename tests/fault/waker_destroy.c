/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/waker_destroy.c — a semaphore may be destroyed and its
 * memory freed as soon as the wait it served has returned, even while the
 * post that served it is still running (POSIX's sem_destroy; glibc's bug
 * 12674 was this; the common case is a completion: a semaphore on the
 * waiter's stack, posted by a worker); an rwlock, as soon as nobody holds
 * it or waits on it, even while the unlock that freed it is still running
 * (as a mutex: tests/fault/unlock_destroy.c); a latch, as soon as the wait
 * that saw it open has returned. An ursa post that found waiters, and an
 * rwlock unlock that wakes, look at the object again after the waiter
 * could take it: the designated wake's take-back when it found nobody
 * asleep, the hand-off's take-back; the count_down that opens a latch
 * looks at its waiter count. Before their pins (lib/sem.c, lib/rwlock.c,
 * lib/latch.c: "Pins"), that look wrote into (or read) memory the waiter
 * had destroyed and reused.
 *
 * The test widens the window as far as it likes: this program's syscall()
 * comes before libc's for the library too (kernel/futex.c wakes through
 * it), so the waking thread's futex wake on the test's object is held up
 * before the wake, for up to HOLD_MS past the waiter's deadline.
 * Meanwhile the waiter's timed wait times out (the rwlock's writer: its
 * bounded sleep ends first), its next step takes the unit or the lock (or
 * claims the hand-off), and it returns (unlocks), destroys the object and
 * reuses the memory. Then the held wake finds nobody asleep, and the waker takes
 * back. Destroy must not return before the post or unlock has finished
 * (the waiter's destroy returning while the waker is held fails the test,
 * as it did before the pins: checked), and the reused memory must stay as
 * written.
 *
 * Both kinds of waker that look again are covered for the semaphore and
 * the rwlock: a designated wake and a hand-off (a waiter that asked: the
 * semaphore's REQ, the rwlock's WRITER_REQ); and the latch's opener. Each
 * private and process-shared. (For the latch the late look is a load
 * before the wake: the test sees it as destroy returning while the
 * count_down is still inside.) And a designated wake with all 7 pins taken
 * (the test holds them for PIN_WAIT_MS, standing for 7 other wakers): the
 * post or unlock waits for a pin, so destroy waits for it too; before that
 * wait, it went on without one and destroy returned while it was held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/helpers.h"

TestSuite(fault_waker_destroy, .timeout = 60);

#define HOLD_MS	      400	  /* the post held past the waiter's deadline, at most */
#define WAIT_MS	      100	  /* the waiter's first deadline, from its start */
#define TRIES	      4		  /* rounds whose set-up outlasted that deadline */
#define SEM_REQ	      0x01000000u /* __waiters' REQ (lib/sem.c) */
#define RW_WRITER_REQ 0x08000000u /* __state's WRITER_REQ (lib/rwlock.c) */
#define SEM_PIN_ONE   0x00200000u /* __waiters' pins: bits 21-23 (lib/sem.c) */
#define RW_PIN_ONE    0x00000002u /* __notify's pins: bits 1-3 (lib/rwlock.c) */
#define PIN_WAIT_MS   30	  /* how long the test keeps all 7 pins taken */

static uint32_t *_Atomic hook_addr;  /* the word whose wake is held up */
static _Atomic pid_t hook_tid;	     /* by this thread only */
static atomic_int hooked;	     /* wakes held up */
static atomic_int destroyed;	     /* the waiter's destroy returned */
static atomic_int destroyed_in_hook; /* ... while the post was held up */
static atomic_int wait_ms;	     /* this round's deadline */
static atomic_int hold_over;	     /* the held wake went on */

__attribute__((no_sanitize("address", "thread", "undefined"))) long syscall(long n, ...)
{
	long a[6];
	T_SYSCALL_ARGS(n, a);
	uint32_t *addr = atomic_load(&hook_addr);
	if (addr && (uint32_t *)a[0] == addr && t_is_futex_wake(n, a[1]) &&
	    atomic_load(&hook_tid) == (pid_t)gettid()) {
		/* Hold the waker here, before its wake, until the waiter's
		 * destroy returned or HOLD_MS passed. */
		atomic_fetch_add(&hooked, 1);
		if (t_hold_until(&destroyed, atomic_load(&wait_ms) + HOLD_MS))
			atomic_store(&destroyed_in_hook, 1);
		atomic_store(&hold_over, 1);
	}
	return t_syscall_real(n, a);
}

/* "Someone else's data" in both words: for the semaphore WOKEN and
 * HANDED set in the second (the take-back clears them and puts HANDED's
 * unit in the first); for the rwlock WRITER_WOKEN set in the first. */
#define SENTINEL_0 0x5a5a5a5au
#define SENTINEL_1 0x06a5a5a5u

enum kind { SEM, RW, LATCH };

static ursa_sem_t sem;
static ursa_rwlock_t rw;
static ursa_latch_t latch;
static atomic_long waiter_tid;
static atomic_int timed_out_early; /* it passed before the waker came */
static atomic_int took_in_hold;	   /* the waiter's wait returned 0 in the hold */
static enum kind kind;

static uint32_t *word0(void)
{
	return kind == RW ? &rw.__state : kind == LATCH ? &latch.__count : &sem.__value;
}

static uint32_t *word1(void)
{
	return kind == RW ? &rw.__notify : kind == LATCH ? &latch.__waiters : &sem.__waiters;
}

static int destroy_object(void)
{
	return kind == RW      ? ursa_rwlock_destroy(&rw)
	       : kind == LATCH ? ursa_latch_destroy(&latch)
			       : ursa_sem_destroy(&sem);
}

/* The waiter: it sleeps until its deadline, then its last step takes the
 * unit the held post added or the lock the held unlock freed (or claims
 * the hand-off); it destroys the object and reuses the memory. A deadline
 * that passed before the waker came (a loaded machine: the set-up took
 * longer than wait_ms) is no result: the round is run again with a
 * longer one (run_rounds). */
static void *waiter(void *arg)
{
	(void)arg;
	atomic_store(&waiter_tid, (long)syscall(SYS_gettid));
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += atomic_load(&wait_ms) * 1000000L;
	dl.tv_sec += dl.tv_nsec / 1000000000L;
	dl.tv_nsec %= 1000000000L;
	int r = kind == RW	? ursa_rwlock_timedwrlock(&rw, CLOCK_MONOTONIC, &dl)
		: kind == LATCH ? ursa_latch_timedwait(&latch, CLOCK_MONOTONIC, &dl)
				: ursa_sem_timedwait(&sem, CLOCK_MONOTONIC, &dl);
	if (r == -ETIMEDOUT) {
		atomic_store(&timed_out_early, 1);
		return NULL;
	}
	cr_assert_eq(r, 0);
	/* It took the object while its waker was held before its wake (its
	 * deadline passed, or, for the rwlock's writer, its bounded sleep
	 * ended): the window under test. */
	if (atomic_load(&hooked) && !atomic_load(&hold_over))
		atomic_store(&took_in_hold, 1);
	if (kind == RW)
		cr_assert_eq(ursa_rwlock_wrunlock(&rw), 0);
	cr_assert_eq(destroy_object(), 0);
	atomic_store(&destroyed, 1);
	__atomic_store_n(word0(), SENTINEL_0, __ATOMIC_RELAXED);
	__atomic_store_n(word1(), SENTINEL_1, __ATOMIC_RELAXED);
	return NULL;
}

/* The bit a waiter sets once it asks for a hand-off, and the word it
 * sleeps on. */
static bool asked(void)
{
	return kind == RW ? __atomic_load_n(&rw.__state, __ATOMIC_RELAXED) & RW_WRITER_REQ
			  : __atomic_load_n(&sem.__waiters, __ATOMIC_RELAXED) & SEM_REQ;
}

static uint32_t *sleep_word(void)
{
	return kind == RW ? &rw.__notify : word0();
}

/* Pins full: the test stands for 7 other wakers inside their window (it
 * sets the 7 pins itself), lets one of them finish after PIN_WAIT_MS, and
 * lets the other 6 finish once our waker is held in its wake. A waker that
 * went on without a pin (as before the pins-full wait) leaves nothing for
 * the waiter's destroy to wait for. */
static uint32_t pin_one(void)
{
	return kind == RW ? RW_PIN_ONE : SEM_PIN_ONE;
}

static atomic_int releaser_stop; /* the round ended unhooked */

static void *pin_releaser(void *arg)
{
	(void)arg;
	t_sleep_ms(PIN_WAIT_MS);
	__atomic_fetch_sub(word1(), pin_one(), __ATOMIC_RELAXED);
	while (atomic_load(&hooked) == 0 && !atomic_load(&releaser_stop))
		sched_yield();
	__atomic_fetch_sub(word1(), 6 * pin_one(), __ATOMIC_RELAXED);
	return NULL;
}

/* One round; false when the waiter's deadline passed before the waker
 * came (nothing was tested). */
static bool run(enum kind k, unsigned flags, bool handoff, bool pins_full)
{
	kind = k;
	atomic_store(&hook_addr, NULL);
	atomic_store(&hooked, 0);
	atomic_store(&destroyed, 0);
	atomic_store(&destroyed_in_hook, 0);
	atomic_store(&waiter_tid, 0);
	atomic_store(&timed_out_early, 0);
	atomic_store(&took_in_hold, 0);
	atomic_store(&hold_over, 0);
	if (k == RW) {
		cr_assert_eq(ursa_rwlock_init(&rw, flags), 0);
		cr_assert_eq(ursa_rwlock_wrlock(&rw), 0);
	} else if (k == LATCH) {
		cr_assert_eq(ursa_latch_init(&latch, 1, flags), 0);
	} else {
		cr_assert_eq(ursa_sem_init(&sem, 0, flags), 0);
	}
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, waiter, NULL), 0);
	while (atomic_load(&waiter_tid) == 0)
		sched_yield();
	t_wait_sleeping((pid_t)atomic_load(&waiter_tid));
	if (handoff) {
		/* Past URSA_FAIR_NS (1 ms) a waiter that has slept asks for a
		 * hand-off at its next step: wake it (a spurious wake) and let
		 * it ask. */
		struct timespec ms = {0, 3000000};
		nanosleep(&ms, NULL);
		for (int i = 0; i < 20 && !asked() && !atomic_load(&timed_out_early); i++) {
			syscall(SYS_futex, sleep_word(),
				FUTEX_WAKE | ((flags & URSA_SHARED) ? 0 : FUTEX_PRIVATE_FLAG), 1,
				NULL, NULL, 0);
			t_wait_sleeping((pid_t)atomic_load(&waiter_tid));
		}
		cr_assert(asked() || atomic_load(&timed_out_early),
			  "the waiter never asked for a hand-off (%#x %#x)", *word0(), *word1());
	}
	pthread_t rel;
	if (pins_full) {
		atomic_store(&releaser_stop, 0);
		__atomic_fetch_add(word1(), 7 * pin_one(), __ATOMIC_RELAXED);
		cr_assert_eq(pthread_create(&rel, NULL, pin_releaser, NULL), 0);
	}
	atomic_store(&hook_tid, (pid_t)syscall(SYS_gettid));
	atomic_store(&hook_addr, sleep_word());
	if (k == RW)
		cr_assert_eq(ursa_rwlock_wrunlock(&rw), 0);
	else if (k == LATCH)
		cr_assert_eq(ursa_latch_count_down(&latch, 1), 0);
	else
		cr_assert_eq(ursa_sem_post(&sem), 0);
	atomic_store(&hook_addr, NULL);
	cr_assert_eq(pthread_join(t, NULL), 0);
	if (pins_full) {
		atomic_store(&releaser_stop, 1); /* all 7 are gone once it returns */
		cr_assert_eq(pthread_join(rel, NULL), 0);
	}
	if (atomic_load(&timed_out_early)) {
		/* Too slow to set up: put the object back for the next round. */
		cr_assert_eq(destroy_object(), 0);
		return false;
	}
	cr_assert_geq(atomic_load(&hooked), 1, "the waker's wake was not seen");
	cr_assert(atomic_load(&took_in_hold),
		  "the waiter did not take the object while its waker was held: the race was "
		  "not set up");
	cr_assert_eq(atomic_load(&destroyed_in_hook), 0,
		     "destroy returned while the %s that served its waiter was still running",
		     k == RW	  ? "unlock"
		     : k == LATCH ? "count_down"
				  : "post");
	cr_assert_eq(__atomic_load_n(word0(), __ATOMIC_RELAXED), SENTINEL_0,
		     "the destroyed object's memory was written: %#x", *word0());
	cr_assert_eq(__atomic_load_n(word1(), __ATOMIC_RELAXED), SENTINEL_1,
		     "the destroyed object's memory was written: %#x", *word1());
	return true;
}

/* A round, again with a deadline twice as long while the machine was too
 * slow to set the race up in time; it must be run once. */
static void run_rounds_pins(enum kind k, unsigned flags, bool handoff, bool pins_full)
{
	bool done = false;
	int ms = WAIT_MS;
	for (int i = 0; i < TRIES && !done; i++, ms *= 2) {
		atomic_store(&wait_ms, ms);
		done = run(k, flags, handoff, pins_full);
	}
	cr_assert(done, "the waiter's deadline passed before its waker came, %d times", TRIES);
}

static void run_rounds(enum kind k, unsigned flags, bool handoff)
{
	run_rounds_pins(k, flags, handoff, false);
}

Test(fault_waker_destroy, sem_designated_wake)
{
	run_rounds(SEM, 0, false);
	run_rounds(SEM, URSA_SHARED, false);
}

Test(fault_waker_destroy, sem_hand_off)
{
	run_rounds(SEM, 0, true);
	run_rounds(SEM, URSA_SHARED, true);
}

Test(fault_waker_destroy, rwlock_writer_wake)
{
	run_rounds(RW, 0, false);
	run_rounds(RW, URSA_SHARED, false);
}

Test(fault_waker_destroy, rwlock_hand_off)
{
	run_rounds(RW, 0, true);
	run_rounds(RW, URSA_SHARED, true);
}

/* With all 7 pins taken, the post or unlock waits for one (lib/internal.h
 * ursa__pin), so the waiter's destroy waits for it as for any other. */
Test(fault_waker_destroy, sem_post_with_the_pins_full)
{
	run_rounds_pins(SEM, 0, false, true);
}

Test(fault_waker_destroy, rwlock_unlock_with_the_pins_full)
{
	run_rounds_pins(RW, 0, false, true);
}

Test(fault_waker_destroy, latch_opener)
{
	run_rounds(LATCH, 0, false);
	run_rounds(LATCH, URSA_SHARED, false);
}

/* A lock destroyed right after its last unlock must not say -EBUSY for a
 * bit that a pinned unlock is still to take back. Here WRITERS_WAITING is
 * left by nobody (set by hand, as a writer that gave up leaves it), so the
 * unlock sets WRITER_WOKEN and wakes, and is held before its wake; a
 * thread that never waited takes the lock, unlocks it (WRITER_WOKEN stays:
 * only the waker takes it back) and destroys it. Before destroy waited for
 * the pin whatever stray bit it saw, it said -EBUSY (seen by
 * tests/stress/destroy_churn; checked here). */
static void *taker(void *arg)
{
	(void)arg;
	while (atomic_load(&hooked) == 0)
		sched_yield();
	int r;
	while ((r = ursa_rwlock_trywrlock(&rw)) == -EBUSY)
		sched_yield();
	cr_assert_eq(r, 0);
	cr_assert_eq(ursa_rwlock_wrunlock(&rw), 0);
	cr_assert_eq(ursa_rwlock_destroy(&rw), 0, "destroy said busy for the waker's bit");
	atomic_store(&destroyed, 1);
	return NULL;
}

Test(fault_waker_destroy, rwlock_destroy_waits_for_the_wakers_bit)
{
	kind = RW;
	atomic_store(&hooked, 0);
	atomic_store(&destroyed, 0);
	atomic_store(&destroyed_in_hook, 0);
	cr_assert_eq(ursa_rwlock_init(&rw, 0), 0);
	cr_assert_eq(ursa_rwlock_wrlock(&rw), 0);
	__atomic_fetch_or(&rw.__state, 1u << 31, __ATOMIC_RELAXED); /* WRITERS_WAITING */
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, taker, NULL), 0);
	atomic_store(&hook_tid, (pid_t)syscall(SYS_gettid));
	atomic_store(&hook_addr, &rw.__notify);
	cr_assert_eq(ursa_rwlock_wrunlock(&rw), 0);
	atomic_store(&hook_addr, NULL);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_geq(atomic_load(&hooked), 1, "the unlock's wake was not seen");
	cr_assert_eq(atomic_load(&destroyed_in_hook), 0,
		     "destroy returned while the unlock was still running");
}
