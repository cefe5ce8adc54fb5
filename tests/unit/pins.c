/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/pins.c — the wakers' pins (lib/sem.c, lib/rwlock.c,
 * lib/mutex.c: "Pins"). A post or an unlock that will look at the object
 * after its release (it wakes someone) holds a pin from before that
 * release to its last look, and destroy waits while one is held, so that
 * the object may be freed as soon as the wait it served has returned
 * (tests/fault/waker_destroy.c, tests/fault/unlock_destroy.c). Pins that
 * stay a second are dead (left by killed processes): destroy says -EBUSY.
 * That wait is no cancellation point.
 *
 * White-box: the tests set the pin bits themselves.
 */
#include "tests/helpers.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <ursa.h>

TestSuite(pins, .timeout = 60);

/* Where the semaphore keeps its pins (lib/sem.c S_PINS). */
#define SEM_PIN_ONE 0x00200000u

struct case_ {
	ursa_sem_t s;
};

/* A thread with a cancel pending (deferred) that waits for a pin acts on
 * it only at its next cancellation point, not inside the library's wait
 * (libc's nanosleep is one: destroy, not a cancellation point in POSIX,
 * unwound there). */
static atomic_int cancel_ret, destroy_ret;

/* No criterion assertion here: its locals would lie in the frame the
 * cancellation unwinds, which AddressSanitizer leaves poisoned (it then
 * reports its own thread teardown writing there). */
static void *cancelled_destroyer(void *p)
{
	struct case_ *c = p;
	atomic_store(&cancel_ret, pthread_cancel(pthread_self()));
	atomic_store(&destroy_ret, ursa_sem_destroy(&c->s));
	pthread_testcancel();
	return NULL;
}

Test(pins, the_wait_for_a_pin_is_no_cancellation_point)
{
	static struct case_ c;
	cr_assert_eq(ursa_sem_init(&c.s, 0, 0), 0);
	__atomic_fetch_add(&c.s.__waiters, SEM_PIN_ONE, __ATOMIC_RELAXED); /* left by a process killed in a post */
	atomic_store(&destroy_ret, 1);
	pthread_t t;
	void *ret;
	cr_assert_eq(pthread_create(&t, NULL, cancelled_destroyer, &c), 0);
	cr_assert_eq(pthread_join(t, &ret), 0);
	cr_assert_eq(atomic_load(&cancel_ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(atomic_load(&destroy_ret), -EBUSY,
		     "destroy did not return (%d): cancelled inside its wait for the pin",
		     atomic_load(&destroy_ret));
	__atomic_fetch_sub(&c.s.__waiters, SEM_PIN_ONE, __ATOMIC_RELAXED);
	cr_assert_eq(ursa_sem_destroy(&c.s), 0);
}
