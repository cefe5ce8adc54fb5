/* SPDX-License-Identifier: MIT */
/*
 * tests/integration/common.h — pieces shared by the contention tests
 * (tests/integration/contended.c), the stress program
 * (tests/stress/stress.c) and the unit tests' microsecond deadlines: plain
 * C, no test framework, header-only.
 */
#ifndef URSA_TESTS_INTEGRATION_COMMON_H
#define URSA_TESTS_INTEGRATION_COMMON_H

#include <stdint.h>
#include <time.h>

/* A small per-thread PRNG (xorshift32), so that choices differ between
 * threads without sharing state. A zero state (a zero seed) restarts from
 * a fixed non-zero one. */
static inline uint32_t t_rnd(uint32_t *s)
{
	uint32_t x = *s;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x ? x : 0x9e3779b9u;
}

/* The absolute time us microseconds from now on clk. */
static inline struct timespec t_after_us(clockid_t clk, long us)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_nsec += us * 1000;
	while (ts.tv_nsec >= 1000000000L) {
		ts.tv_nsec -= 1000000000L;
		ts.tv_sec++;
	}
	return ts;
}

#endif
