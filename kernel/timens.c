/* SPDX-License-Identifier: MIT */
/*
 * kernel/timens.c — whether this process's CLOCK_MONOTONIC is shifted from
 * the host's by a time namespace (Linux 5.6+, CONFIG_TIME_NS), for the
 * io_uring deadlines of lib/async.c.
 *
 * A time namespace adds an offset to CLOCK_MONOTONIC and CLOCK_BOOTTIME
 * (CRIU restores a checkpointed container with one, so that its clocks go
 * on where they were; `unshare --time` makes one). The futex calls take a
 * namespace's absolute monotonic deadline and convert it to the host's,
 * but io_uring's IORING_TIMEOUT_ABS does not (io_uring mailing list, May
 * 2026: "should IORING_TIMEOUT_ABS honour the submitter's time
 * namespace?"). Measured here (Linux 6.18, tests/integration/
 * kernel_hazards.c), an async lock with a deadline 200 ms ahead: in a
 * namespace 10 s behind the host its linked timeout fired at once, again
 * at every re-arm (ursa saw its deadline not passed), 23,118 CQEs in the
 * 200 ms; 10 s ahead, it had not ended 3 s later. CLOCK_REALTIME has no
 * namespace offset.
 * So where the monotonic clock is shifted, an async op's monotonic
 * deadline is turned into a realtime one when it is set
 * (ursa_op_set_deadline), which is right with or without the kernel's fix.
 *
 * The offset is read once from /proc/self/timens_offsets ("monotonic SECS
 * NSECS"; the clock id 1 in place of the name is accepted too) and cached.
 * No file (an older kernel, no CONFIG_TIME_NS, no /proc): no shift. The
 * file shows the offsets of the namespace this process's children get,
 * which is its own unless it called unshare(CLONE_NEWTIME) itself; then
 * its deadlines take the realtime form needlessly, which is still right.
 * Its fork() children live in that namespace, so a child reads the file
 * again (pthread_atfork).
 */
#include "config.h"

#include "kernel/uring.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int shifted; /* 0: not read yet, 1: not shifted, 2: shifted */
static int atfork_set;

static void forget(void)
{
	__atomic_store_n(&shifted, 0, __ATOMIC_RELAXED);
}

static bool read_shift(void)
{
	FILE *f = fopen("/proc/self/timens_offsets", "re");
	if (!f)
		return false;
	char name[32];
	long long sec;
	long nsec;
	bool shift = false;
	while (fscanf(f, "%31s %lld %ld", name, &sec, &nsec) == 3) {
		if ((strcmp(name, "monotonic") == 0 || strcmp(name, "1") == 0) &&
		    (sec != 0 || nsec != 0))
			shift = true;
	}
	fclose(f);
	return shift;
}

bool ursa_k_monotonic_shifted(void)
{
	int s = __atomic_load_n(&shifted, __ATOMIC_RELAXED);
	if (!s) {
		int saved = errno;
		int zero = 0;
		if (__atomic_compare_exchange_n(&atfork_set, &zero, 1, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			pthread_atfork(NULL, NULL, forget);
		/* fopen and its reads are cancellation points; the callers
		 * (ursa_op_set_deadline) are not. */
		int cs;
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
		s = read_shift() ? 2 : 1;
		pthread_setcancelstate(cs, NULL);
		errno = saved;
		__atomic_store_n(&shifted, s, __ATOMIC_RELAXED);
	}
	return s == 2;
}
