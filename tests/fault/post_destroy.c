/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/post_destroy.c — a semaphore may be destroyed and its memory
 * freed as soon as the wait it served has returned, even while the post
 * that served it is still running (POSIX's sem_destroy; glibc's bug 12674
 * was this; the common case is a completion: a semaphore on the waiter's
 * stack, posted by a worker). An ursa post that found waiters looks at the
 * semaphore again after its unit became takeable: the designated wake's
 * take-back when it found nobody asleep, the hand-off's take-back. Before
 * the post's pin (lib/sem.c, "Pins"), that look wrote into memory the
 * waiter had destroyed and reused.
 *
 * The test widens the window as far as it likes: this program's syscall()
 * comes before libc's for the library too (kernel/futex.c wakes through
 * it), so the posting thread's futex wake on the test's semaphore is held
 * up before the wake, for up to HOLD_MS. Meanwhile the waiter's timed wait
 * times out, its last step takes the unit (or claims the hand-off), and it
 * returns, destroys the semaphore and reuses the memory. Then the held
 * wake finds nobody asleep, and the post takes back. ursa_sem_destroy must
 * not return before the post has finished (the waiter's destroy returning
 * while the post is held fails the test, as it did before the pin:
 * checked), and the reused memory must stay as written.
 *
 * Both kinds of post that look again are covered: a designated wake and a
 * hand-off (a waiter that asked, REQ), each private and process-shared.
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

TestSuite(fault_post_destroy, .timeout = 60);

#define HOLD_MS 400	    /* the post held before its wake, at most */
#define WAIT_MS 100	    /* the waiter's deadline, from its start */
#define SEM_REQ 0x01000000u /* __waiters' REQ (lib/sem.c) */

static uint32_t *_Atomic hook_addr;  /* the word whose wake is held up */
static _Atomic pid_t hook_tid;	     /* by this thread only */
static atomic_int hooked;	     /* wakes held up */
static atomic_int destroyed;	     /* the waiter's destroy returned */
static atomic_int destroyed_in_hook; /* ... while the post was held up */

/* futex2's futex_wake (Linux 6.7; the same number on every architecture,
 * as kernel/uapi.h has it), or futex(2)'s wakes. */
#ifndef SYS_futex_wake
#define SYS_futex_wake 454
#endif

static bool is_wake(long n, long op)
{
	if (n == SYS_futex_wake)
		return true;
	return n == SYS_futex &&
	       ((op & FUTEX_CMD_MASK) == FUTEX_WAKE || (op & FUTEX_CMD_MASK) == FUTEX_WAKE_BITSET);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

__attribute__((no_sanitize("address", "thread", "undefined"))) long syscall(long n, ...)
{
	long a[6];
	T_SYSCALL_ARGS(n, a);
	uint32_t *addr = atomic_load(&hook_addr);
	if (addr && (uint32_t *)a[0] == addr && is_wake(n, a[1]) &&
	    atomic_load(&hook_tid) == (pid_t)gettid()) {
		/* Hold the post here, before its wake, until the waiter's
		 * destroy returned or HOLD_MS passed. */
		int e = errno;
		atomic_fetch_add(&hooked, 1);
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			if (atomic_load(&destroyed)) {
				atomic_store(&destroyed_in_hook, 1);
				break;
			}
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		} while (ms_since(&t0) < HOLD_MS);
		errno = e;
	}
	return t_syscall_real(n, a);
}

/* "Someone else's data" in both words: WOKEN and HANDED set in the second
 * (the take-back clears them and puts HANDED's unit in the first). */
#define SENTINEL_VALUE	 0x5a5a5a5au
#define SENTINEL_WAITERS 0x06a5a5a5u

static ursa_sem_t sem;
static atomic_long waiter_tid;

/* The waiter: it sleeps until its deadline, then its last step takes the
 * unit the held post added (or claims the hand-off); it destroys the
 * semaphore and reuses the memory. */
static void *waiter(void *arg)
{
	(void)arg;
	atomic_store(&waiter_tid, (long)syscall(SYS_gettid));
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += WAIT_MS * 1000000L;
	dl.tv_sec += dl.tv_nsec / 1000000000L;
	dl.tv_nsec %= 1000000000L;
	cr_assert_eq(ursa_sem_timedwait(&sem, CLOCK_MONOTONIC, &dl), 0);
	cr_assert_eq(ursa_sem_destroy(&sem), 0);
	atomic_store(&destroyed, 1);
	__atomic_store_n(&sem.__value, SENTINEL_VALUE, __ATOMIC_RELAXED);
	__atomic_store_n(&sem.__waiters, SENTINEL_WAITERS, __ATOMIC_RELAXED);
	return NULL;
}

static void run(unsigned flags, bool handoff)
{
	atomic_store(&hook_addr, NULL);
	atomic_store(&hooked, 0);
	atomic_store(&destroyed, 0);
	atomic_store(&destroyed_in_hook, 0);
	atomic_store(&waiter_tid, 0);
	cr_assert_eq(ursa_sem_init(&sem, 0, flags), 0);
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
		for (int i = 0;
		     i < 20 && !(__atomic_load_n(&sem.__waiters, __ATOMIC_RELAXED) & SEM_REQ);
		     i++) {
			syscall(SYS_futex, &sem.__value,
				FUTEX_WAKE | ((flags & URSA_SHARED) ? 0 : FUTEX_PRIVATE_FLAG), 1,
				NULL, NULL, 0);
			t_wait_sleeping((pid_t)atomic_load(&waiter_tid));
		}
		cr_assert(__atomic_load_n(&sem.__waiters, __ATOMIC_RELAXED) & SEM_REQ,
			  "the waiter never asked for a hand-off (__waiters %#x)", sem.__waiters);
	}
	atomic_store(&hook_tid, (pid_t)syscall(SYS_gettid));
	atomic_store(&hook_addr, &sem.__value);
	cr_assert_eq(ursa_sem_post(&sem), 0);
	atomic_store(&hook_addr, NULL);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_geq(atomic_load(&hooked), 1, "the post's wake was not seen");
	cr_assert_eq(atomic_load(&destroyed_in_hook), 0,
		     "ursa_sem_destroy returned while the post that served its waiter was still "
		     "running");
	cr_assert_eq(__atomic_load_n(&sem.__value, __ATOMIC_RELAXED), SENTINEL_VALUE,
		     "the destroyed semaphore's memory was written: __value %#x", sem.__value);
	cr_assert_eq(__atomic_load_n(&sem.__waiters, __ATOMIC_RELAXED), SENTINEL_WAITERS,
		     "the destroyed semaphore's memory was written: __waiters %#x", sem.__waiters);
}

Test(fault_post_destroy, designated_wake)
{
	run(0, false);
	run(URSA_SHARED, false);
}

Test(fault_post_destroy, hand_off)
{
	run(0, true);
	run(URSA_SHARED, true);
}
