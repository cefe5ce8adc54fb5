/* SPDX-License-Identifier: MIT */
/*
 * kernel/cpus.c — how many CPUs this process may run on, for the spin
 * policy (kernel/arch.h).
 *
 * Asked of the kernel (sched_getaffinity) by the first caller and cached;
 * callers that come before the answer is published ask themselves and get
 * the same answer. A process confined to a few CPUs of a large machine
 * (taskset, a cpuset) counts its own CPUs, not the machine's. Changes of
 * affinity after the first call are not seen: the count only picks a spin
 * policy, never correctness. The mask holds URSA_K_MAX_CPUS (a cpu_set_t
 * holds 1024, and sched_getaffinity fails with EINVAL where the kernel has
 * more possible CPUs than the mask holds); it is on the stack, 1 KiB, not
 * malloc'd: the first call comes from a lock's slow path, and a malloc
 * that locks (jemalloc under the pthread shim) would come back here. If
 * the call fails anyway (a bigger machine, or a seccomp filter's refusal),
 * the online CPUs are counted.
 *
 * Test hook: URSA_TEST_CPUS=N (1..4096), read by the first call of a
 * process, stands for the count, so that tests/unit/mutex.c can run the
 * many-CPU spin on a small machine. Read with secure_getenv, as are all of
 * ursa's environment variables: a setuid or setgid program ignores them.
 */
#include "config.h"

#include "kernel/arch.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#define URSA_K_MAX_CPUS 8192

static int cached; /* 0: not asked yet */

int ursa_k_cpus(void)
{
	int n = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (n)
		return n;
	int saved_errno = errno; /* strtol, sched_getaffinity, sysconf may set it */
	const char *t = secure_getenv("URSA_TEST_CPUS");
	long forced = t ? strtol(t, NULL, 10) : 0;
	if (forced > 0 && forced <= 4096) {
		__atomic_store_n(&cached, (int)forced, __ATOMIC_RELAXED);
		errno = saved_errno;
		return (int)forced;
	}
	union {
		cpu_set_t set;
		unsigned long bits[URSA_K_MAX_CPUS / (8 * sizeof(unsigned long))];
	} mask;
	n = 0;
	if (sched_getaffinity(0, sizeof mask, &mask.set) == 0)
		n = CPU_COUNT_S(sizeof mask, &mask.set);
	if (n <= 0) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		n = online > 0 && online <= INT_MAX ? (int)online : 1;
	}
	__atomic_store_n(&cached, n, __ATOMIC_RELAXED);
	errno = saved_errno;
	return n;
}
