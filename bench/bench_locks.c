/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_locks.c — the lock scenarios (mutex-uncontended,
 * mutex-contended, rwlock-read-mostly, cond-pingpong, sem-pingpong,
 * handoff-latency),
 * bench_tmpl.h instantiated once per implementation.
 */
#include "bench/adapters.h"
#include "bench/bench.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define IMPL	     glibc
#define IMPL_NOTE    NULL
#define IMPL_PP_NOTE NULL
#define IMPL_HAS_RW  1
#define IMPL_HAS_PP  1
#define IMPL_SPINS   0
#define IMPL_HAS_SEM 1
#include "bench/bench_tmpl.h"

#define IMPL	     ursa
#define IMPL_NOTE    NULL
#define IMPL_PP_NOTE NULL
#define IMPL_HAS_RW  1
#define IMPL_HAS_PP  1
#define IMPL_SPINS   0
#define IMPL_HAS_SEM 1
#include "bench/bench_tmpl.h"

#ifdef HAVE_NSYNC
#define IMPL	     nsync
#define IMPL_NOTE    NULL
#define IMPL_PP_NOTE NULL
#define IMPL_HAS_RW  1
#define IMPL_HAS_PP  1
#define IMPL_SPINS   0
#define IMPL_HAS_SEM 0
#include "bench/bench_tmpl.h"
#endif

#ifdef HAVE_CK
#define IMPL	     ck
#define IMPL_NOTE    "ck_spinlock (fas) / ck_rwlock: SPIN, never sleep (no sleeping lock in CK)"
#define IMPL_PP_NOTE "ck_ec32 event count (no condvar in CK): futex sleep, turn = parity"
#define IMPL_HAS_RW  1
#define IMPL_HAS_PP  1
#define IMPL_SPINS   1
#define IMPL_HAS_SEM 0
#include "bench/bench_tmpl.h"
#endif

void bench_locks_register(struct bench_scenario *unc, struct bench_scenario *con,
			  struct bench_scenario *rw, struct bench_scenario *pp,
			  struct bench_scenario *spp, struct bench_scenario *ho)
{
	*unc = (struct bench_scenario){
	    .name = "mutex-uncontended",
	    .what = "lock+unlock of a free mutex, and an rwlock's read and write, by one thread "
		    "of a fresh process with 1 or 2 threads",
	    .axis = "threads",
	    .npoints = 2,
	    .points = {1, 2},
	    .nvariants = 3,
	    .variants = {"", "rwlock-read", "rwlock-write"},
	    .nmetrics = 1,
	    .metrics = {{"lock+unlock", "ns", false}},
	};
	*con = (struct bench_scenario){
	    .name = "mutex-contended",
	    .what = "threads hammer one mutex; short (~10 ns) / long (~1 us) critical section",
	    .axis = "threads",
	    .thread_axis = true,
	    .nvariants = 2,
	    .variants = {"short-cs", "long-cs"},
	    .nmetrics = 1,
	    .metrics = {{"", "Mops/s", true}},
	};
	*rw = (struct bench_scenario){
	    .name = "rwlock-read-mostly",
	    .what = "threads on one rwlock, 95% read locks, 5% write locks",
	    .axis = "threads",
	    .thread_axis = true,
	    .nvariants = 1,
	    .variants = {""},
	    .nmetrics = 1,
	    .metrics = {{"ops", "Mops/s", true}},
	};
	*pp = (struct bench_scenario){
	    .name = "cond-pingpong",
	    .what = "two threads pass a turn with mutex + condvar signal (one wake each way); on two CPUs, or both on one",
	    .axis = "threads",
	    .npoints = 1,
	    .points = {2},
	    .nvariants = 2,
	    .variants = {"", "one-cpu"},
	    .nmetrics = 1,
	    .metrics = {{"round-trip", "us", false}},
	};
	*spp = (struct bench_scenario){
	    .name = "sem-pingpong",
	    .what = "two threads pass a turn through two semaphores (each waits on its own, posts the other's); on two CPUs, or both on one",
	    .axis = "threads",
	    .npoints = 1,
	    .points = {2},
	    .nvariants = 2,
	    .variants = {"", "one-cpu"},
	    .nmetrics = 1,
	    .metrics = {{"round-trip", "us", false}},
	};
	*ho = (struct bench_scenario){
	    .name = "handoff-latency",
	    .what = "unlock -> a sleeping waiter's lock returns (median)",
	    .axis = "threads",
	    .npoints = 1,
	    .points = {2},
	    .nvariants = 1,
	    .variants = {""},
	    .nmetrics = 1,
	    .metrics = {{"median", "us", false}},
	};

	t_glibc_register(unc, con, rw, pp, spp, ho);
	t_ursa_register(unc, con, rw, pp, spp, ho);
#ifdef HAVE_NSYNC
	t_nsync_register(unc, con, rw, pp, spp, ho);
#endif
#ifdef HAVE_CK
	t_ck_register(unc, con, rw, pp, spp, ho);
#endif
}
