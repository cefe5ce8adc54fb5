/* SPDX-License-Identifier: MIT */
/*
 * kernel/proc.c — the thread id, a word that fork children see zeroed, and
 * a nap that is no cancellation point (kernel/proc.h).
 *
 * Why a wiped word and not a fork handler: a pthread_atfork child handler
 * runs after the child handlers registered before it (those of libraries
 * initialised earlier), and not at all in a child of _Fork() or a raw
 * clone(); a MADV_WIPEONFORK page is zero in every child from its first
 * instruction. Reading it is a load, where getpid() is a system call.
 */
#include "config.h"

#include "kernel/proc.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

int32_t ursa_k_gettid(void)
{
	return (int32_t)gettid();
}

void ursa_k_nap_us(uint32_t us)
{
	struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};
	int saved = errno;
	syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
	errno = saved;
}

/* The page, (void *)-1 once it could not be had (MAP_FAILED). */
static void *fork_page;

uint64_t *ursa_k_fork_word(void)
{
	void *p = __atomic_load_n(&fork_page, __ATOMIC_ACQUIRE);
	if (!p) {
		int saved = errno;
		long ps = sysconf(_SC_PAGESIZE);
		size_t sz = ps > 0 ? (size_t)ps : 4096;
		void *q = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q != MAP_FAILED && madvise(q, sz, MADV_WIPEONFORK)) {
			munmap(q, sz); /* before Linux 4.14: EINVAL */
			q = MAP_FAILED;
		}
		void *e = NULL;
		if (__atomic_compare_exchange_n(&fork_page, &e, q, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			p = q;
		} else {
			if (q != MAP_FAILED)
				munmap(q, sz); /* another first call won */
			p = e;
		}
		errno = saved;
	}
	return p == MAP_FAILED ? NULL : p;
}
