/* SPDX-License-Identifier: MIT */
/*
 * lib/shim/core.c — what every part of libursa-pthread shares: glibc's own
 * functions for the objects handed to it, the cached thread id, the call
 * counters (URSA_SHIM_STATS=1).
 *
 * Nothing here runs on a lock path except shim_tid_slow (once per thread)
 * and shim_real (once per function, and only for glibc-handled objects), so
 * the shim needs no initialisation before its first call: a constructor of
 * another library, running before ours, may lock an ursa mutex safely.
 */
#include "lib/shim/shim.h"

#include "kernel/futex.h"
#include "kernel/proc.h"
#include "lib/internal.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME_(which, name) [which] = #name,
static const char *const real_names[REAL_COUNT] = {SHIM_REALS(NAME_)};

static void *real_fns[REAL_COUNT];

void *shim_real(enum shim_real which)
{
	void *f = __atomic_load_n(&real_fns[which], __ATOMIC_ACQUIRE);
	if (likely(f))
		return f;
	/* RTLD_NEXT: the definition after ours in the lookup order, i.e.
	 * glibc's (whether the shim came by LD_PRELOAD or by -lursa-pthread).
	 * dlsym takes the loader's lock, which is glibc-internal and never one
	 * of the program's mutexes, so this cannot recurse into the shim. */
	f = dlsym(RTLD_NEXT, real_names[which]);
	if (!f) {
		static const char msg[] = "libursa-pthread: glibc's pthread function not found\n";
		if (write(2, msg, sizeof msg - 1) < 0) {
		}
		abort();
	}
	__atomic_store_n(&real_fns[which], f, __ATOMIC_RELEASE);
	return f;
}

int shim_wait_a_little(uint32_t *word, unsigned *round, clockid_t clk, const struct timespec *abs)
{
	unsigned n = (*round)++;
	if (ursa__deadline_passed(clk, abs))
		return ETIMEDOUT;
	if (n < 4) {
		sched_yield();
		return 0;
	}
	unsigned us = n - 4 < 7 ? 10u << (n - 4) : 1000u;
	struct timespec bound;
	if (!abs)
		clk = CLOCK_MONOTONIC;
	/* Private key even for a word in shared memory: no one wakes it; the
	 * kernel only compares the value and times out. */
	const struct timespec *dl = ursa__bounded_deadline(&clk, us, abs, &bound);
	ursa_k_futex_wait(word, __atomic_load_n(word, __ATOMIC_RELAXED), false, clk, dl);
	return 0;
}

void shim_destroy_wait(uint32_t *word, unsigned *round)
{
	shim_wait_a_little(word, round, CLOCK_MONOTONIC, NULL);
}

/* The thread id cache and fork (shim_tid, lib/shim/shim.h). A thread caches
 * its tid with the epoch then in *shim_fork_word; a fork child reads that
 * word as 0, and its first shim_tid_slow starts a new epoch, so every tid
 * cached before the fork is looked up again, even by a fork child handler
 * that runs before ours (a library initialised before the shim) or in a
 * child that runs none (_Fork, clone). Epochs come from a counter in
 * ordinary memory, which a child inherits: the new one is greater than any
 * its parent cached. Where the kernel gives no wipe-on-fork page (before
 * 4.14) the word is no_page_word, which no fork changes, and only our
 * child handler (below) clears the forking thread's cache, as before. */
__thread int32_t shim_tid_cache __attribute__((tls_model("initial-exec")));
__thread uint64_t shim_tid_epoch __attribute__((tls_model("initial-exec")));
static uint64_t no_page_word;
uint64_t *shim_fork_word = &no_page_word;
static uint64_t epochs;

int32_t shim_tid_slow(void)
{
	uint64_t *w = ursa_k_fork_word();
	if (!w)
		w = &no_page_word;
	uint64_t e = __atomic_load_n(w, __ATOMIC_RELAXED);
	if (!e) {
		/* A fork child's first look, or the first look of all. */
		uint64_t n = __atomic_add_fetch(&epochs, 1, __ATOMIC_RELAXED);
		if (__atomic_compare_exchange_n(w, &e, n, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			e = n; /* else e: another thread's new epoch */
	}
	__atomic_store_n(&shim_fork_word, w, __ATOMIC_RELAXED);
	shim_tid_epoch = e;
	return shim_tid_cache = ursa_k_gettid();
}

bool shim_stats_on;
unsigned long shim_stats[ST_COUNT];
/* stderr, duplicated at load: programs such as coreutils' close fd 2 at exit,
 * before the report is written. */
static int stats_fd = -1;

static const char *const stat_names[ST_COUNT] = {SHIM_STATS(NAME_)};

/* The child of fork() runs on a new thread with a new tid; its copy of our
 * TLS still holds the parent's (the fork word tells shim_tid too, where the
 * kernel has it: above). Its counters start from zero, so that each
 * process reports its own calls. */
static void shim_atfork_child(void)
{
	shim_tid_cache = 0;
	if (shim_stats_on)
		memset(shim_stats, 0, sizeof(shim_stats));
}

__attribute__((constructor)) static void shim_init(void)
{
	const char *s = secure_getenv("URSA_SHIM_STATS");
	shim_stats_on = s && *s && strcmp(s, "0") != 0;
	if (shim_stats_on)
		stats_fd = fcntl(2, F_DUPFD_CLOEXEC, 100);
	pthread_atfork(NULL, NULL, shim_atfork_child);
	/* sem_post must stay async-signal-safe also for the semaphores glibc
	 * keeps (sem_open's): look glibc's up now, not in a signal handler
	 * that may have interrupted the loader's lock. */
	shim_real(REAL_SEM_POST);
}

/* One line, written with a single write(2) so that the reports of several
 * processes do not interleave: "ursa-pthread[pid prog]: name=count ...".
 * Nothing for a process that made no call (a shell script's helpers). */
__attribute__((destructor)) static void shim_report(void)
{
	char buf[1024];
	size_t n;
	bool any = false;
	if (!shim_stats_on || stats_fd < 0)
		return;
	n = (size_t)snprintf(buf, sizeof buf, "ursa-pthread[%d %s]:", (int)getpid(),
			     program_invocation_short_name);
	for (int i = 0; i < ST_COUNT && n < sizeof buf; i++) {
		unsigned long v = __atomic_load_n(&shim_stats[i], __ATOMIC_RELAXED);
		if (v)
			n += (size_t)snprintf(buf + n, sizeof buf - n, " %s=%lu", stat_names[i], v);
		any |= v != 0;
	}
	if (!any)
		return;
	if (n >= sizeof buf - 1)
		n = sizeof buf - 2;
	buf[n++] = '\n';
	if (write(stats_fd, buf, n) < 0) {
	}
}
