/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/unlock_destroy.c — POSIX lets a mutex be destroyed and its
 * memory freed as soon as it is unlocked, even while the unlock that freed
 * it is still running on another thread (pthread_mutex_destroy's
 * rationale: obj_done() dropping a reference count under the object's own
 * mutex). An ursa unlock that wakes a waiter looks at the word again after
 * its futex wake (lib/mutex.c: the fix-up when the wake found nobody, the
 * take-back of a hand-off); before the unlock pins, that look could write
 * into memory the other thread had destroyed and reused.
 *
 * The test makes the window as wide as it likes: this program's syscall()
 * comes before libc's for the library too (kernel/futex.c wakes through
 * it), so the unlocking thread's futex wake on the test's mutex is held up
 * after the wake itself, for up to HOLD_MS, while the woken waiter takes
 * the mutex, unlocks it and destroys it. ursa_mutex_destroy must not
 * return before the unlock has finished (the hook has returned): the
 * waiter's destroy returning first fails the test, as it did before the
 * pin (checked). Then the memory is "reused" (a sentinel with the WOKEN
 * bit, which the old fix-up rewrote) and must stay as written.
 *
 * Both kinds of unlock that look again are covered: a designated wake
 * (SLEEPERS) and a hand-off (a waiter that asked, REQ), each private and
 * process-shared.
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

TestSuite(fault_unlock_destroy, .timeout = 60);

#define HOLD_MS 150

static uint32_t *_Atomic hook_addr;  /* the word whose wake is held up */
static _Atomic pid_t hook_tid;	     /* by this thread only */
static atomic_int hooked;	     /* wakes held up */
static atomic_int destroyed;	     /* the waiter's destroy returned */
static atomic_int destroyed_in_hook; /* ... while the unlock was held up */

__attribute__((no_sanitize("address", "thread", "undefined"))) long syscall(long n, ...)
{
	long a[6];
	T_SYSCALL_ARGS(n, a);
	long r = t_syscall_real(n, a);
	uint32_t *addr = atomic_load(&hook_addr);
	if (addr && (uint32_t *)a[0] == addr && t_is_futex_wake(n, a[1]) &&
	    atomic_load(&hook_tid) == (pid_t)gettid()) {
		/* The wake is done; hold the unlock here, after it, until the
		 * waiter's destroy returned or HOLD_MS passed. */
		atomic_fetch_add(&hooked, 1);
		if (t_hold_until(&destroyed, HOLD_MS))
			atomic_store(&destroyed_in_hook, 1);
	}
	return r;
}

#define SENTINEL 0x5a5a0004u /* "someone else's data", WOKEN bit included */

struct obj {
	ursa_mutex_t m;
	int refs;
	atomic_long tid;
};

/* The waiter: its lock sleeps behind the holder; woken, it drops the last
 * reference, destroys the mutex and reuses the memory. */
static void *waiter(void *arg)
{
	struct obj *o = arg;
	atomic_store(&o->tid, (long)syscall(SYS_gettid));
	cr_assert_eq(ursa_mutex_lock(&o->m), 0);
	cr_assert_eq(--o->refs, 0);
	cr_assert_eq(ursa_mutex_unlock(&o->m), 0);
	cr_assert_eq(ursa_mutex_destroy(&o->m), 0);
	atomic_store(&destroyed, 1);
	__atomic_store_n(&o->m.__word, SENTINEL, __ATOMIC_RELAXED);
	return NULL;
}

static void run(unsigned flags, bool handoff)
{
	static struct obj o;
	atomic_store(&hook_addr, NULL);
	atomic_store(&hooked, 0);
	atomic_store(&destroyed, 0);
	atomic_store(&destroyed_in_hook, 0);
	cr_assert_eq(ursa_mutex_init(&o.m, flags), 0);
	o.refs = 2;
	atomic_store(&o.tid, 0);
	cr_assert_eq(ursa_mutex_lock(&o.m), 0);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, waiter, &o), 0);
	while (atomic_load(&o.tid) == 0)
		sched_yield();
	t_wait_sleeping((pid_t)atomic_load(&o.tid));
	if (handoff) {
		/* Past URSA_FAIR_NS (1 ms) a blocked waiter asks for a hand-off
		 * at its next step: wake it (a spurious wake) and let it ask. */
		struct timespec ms = {0, 3000000};
		nanosleep(&ms, NULL);
		for (int i = 0;
		     i < 100 && !(__atomic_load_n(&o.m.__word, __ATOMIC_RELAXED) & 0x10u); i++) {
			syscall(SYS_futex, &o.m.__word,
				FUTEX_WAKE | ((flags & URSA_SHARED) ? 0 : FUTEX_PRIVATE_FLAG), 1,
				NULL, NULL, 0);
			t_wait_sleeping((pid_t)atomic_load(&o.tid));
		}
		cr_assert(__atomic_load_n(&o.m.__word, __ATOMIC_RELAXED) & 0x10u,
			  "the waiter never asked for a hand-off (word %#x)", o.m.__word);
	}
	cr_assert_eq(--o.refs, 1);
	atomic_store(&hook_tid, (pid_t)syscall(SYS_gettid));
	atomic_store(&hook_addr, &o.m.__word);
	cr_assert_eq(ursa_mutex_unlock(&o.m), 0);
	atomic_store(&hook_addr, NULL);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(atomic_load(&hooked), 1, "the unlock's wake was not seen (%d)",
		     atomic_load(&hooked));
	cr_assert_eq(atomic_load(&destroyed_in_hook), 0,
		     "ursa_mutex_destroy returned while the unlock that freed the mutex was "
		     "still running");
	cr_assert_eq(__atomic_load_n(&o.m.__word, __ATOMIC_RELAXED), SENTINEL,
		     "the destroyed mutex's memory was written: %#x", o.m.__word);
}

Test(fault_unlock_destroy, designated_wake)
{
	run(0, false);
	run(URSA_SHARED, false);
}

Test(fault_unlock_destroy, hand_off)
{
	run(0, true);
	run(URSA_SHARED, true);
}
