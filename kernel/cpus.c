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
 * policy, never correctness.
 *
 * Test hook: URSA_TEST_CPUS=N (1..4096), read by the first call of a
 * process, stands for the count, so that tests/unit/mutex.c can run the
 * many-CPU spin on a small machine.
 */
#include "config.h"

#include "kernel/arch.h"

#include <sched.h>
#include <stdlib.h>

static int cached; /* 0: not asked yet */

int ursa_k_cpus(void)
{
	int n = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (n)
		return n;
	const char *t = getenv("URSA_TEST_CPUS");
	long forced = t ? strtol(t, NULL, 10) : 0;
	if (forced > 0 && forced <= 4096) {
		__atomic_store_n(&cached, (int)forced, __ATOMIC_RELAXED);
		return (int)forced;
	}
	cpu_set_t set;
	n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
	if (n <= 0)
		n = 1; /* unknown (more CPUs than cpu_set_t holds, or refused): spin as on few */
	__atomic_store_n(&cached, n, __ATOMIC_RELAXED);
	return n;
}
