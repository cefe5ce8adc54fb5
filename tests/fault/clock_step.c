/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/clock_step.c — a blocked waiter's bounded sleep (10 ms,
 * URSA_HANDED_SLEEP_MS: a writer shut out by a stream of readers notices
 * its wait and shuts them out at the end of it, lib/rwlock.c) is a time,
 * not a wall-clock reading. A timed wait on CLOCK_REALTIME took the bound
 * on that clock as well, so a step of the wall clock backwards stretched
 * it by the step (seen with 3 s: the writer waited 3 s, where the header
 * promises readers overtake it for about 2 ms).
 *
 * The step is simulated: this program's clock_gettime() comes before
 * libc's for the library too, and reads CLOCK_REALTIME STEP_S seconds
 * ahead, as if the wall clock went back that much right after each of the
 * library's readings (the kernel's futex deadline is on the real clock).
 * The test's own times are read with the system call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/helpers.h"

TestSuite(fault_clock_step, .timeout = 120);

#define STEP_S 20

static atomic_int shifted;

__attribute__((no_sanitize("address", "thread", "undefined"))) int
clock_gettime(clockid_t clk, struct timespec *ts)
{
	long r = syscall(SYS_clock_gettime, clk, ts);
	if (r == 0 && clk == CLOCK_REALTIME && atomic_load(&shifted))
		ts->tv_sec += STEP_S;
	return (int)r;
}

static uint64_t real_mono_ns(void)
{
	struct timespec t;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static ursa_rwlock_t lk;
static atomic_int stop;

/* Three readers keep the lock read-held: each holds it 1 ms and takes it
 * again at once, staggered, so that no unlock leaves it free. */
static void *reader(void *arg)
{
	usleep((useconds_t)(intptr_t)arg * 333);
	while (!atomic_load(&stop)) {
		cr_assert_eq(ursa_rwlock_rdlock(&lk), 0);
		usleep(1000);
		cr_assert_eq(ursa_rwlock_rdunlock(&lk), 0);
	}
	return NULL;
}

Test(fault_clock_step, writer_bound_is_not_stretched_by_the_wall_clock)
{
	cr_assert_eq(ursa_rwlock_init(&lk, 0), 0);
	pthread_t t[3];
	for (intptr_t i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, reader, (void *)i), 0);
	usleep(20000);
	atomic_store(&shifted, 1);
	for (int rep = 0; rep < 3; rep++) {
		struct timespec dl;
		cr_assert_eq(clock_gettime(CLOCK_REALTIME, &dl), 0);
		dl.tv_sec += 60;
		uint64_t t0 = real_mono_ns();
		cr_assert_eq(ursa_rwlock_timedwrlock(&lk, CLOCK_REALTIME, &dl), 0);
		uint64_t ms = (real_mono_ns() - t0) / 1000000u;
		cr_assert_eq(ursa_rwlock_wrunlock(&lk), 0);
		/* A correctness bound, far from the ~10 ms expected and far
		 * below the STEP_S a stretched bound takes. */
		cr_assert_lt(ms, STEP_S * 1000 / 4,
			     "the writer waited %llu ms: its bounded sleep followed the wall clock",
			     (unsigned long long)ms);
		usleep(20000);
	}
	atomic_store(&shifted, 0);
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_join(t[i], NULL), 0);
	cr_assert_eq(ursa_rwlock_destroy(&lk), 0);
}
