/* SPDX-License-Identifier: MIT */
/* kernel/arch.h — what ursa does while it spins: the CPU's pause hint and
 * sched_yield(). */
#ifndef URSA_KERNEL_ARCH_H
#define URSA_KERNEL_ARCH_H

#include <sched.h>
#include <stdbool.h>

static inline void ursa_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * How a waiter spins before it sleeps (mutex, rwlock, semaphore): it found
 * the object taken and nobody asleep on it; after each call that returns
 * true it looks again, and once one returns false (or someone sleeps) it
 * sleeps. Round i of an untimed wait is one sched_yield(), up to
 * URSA_K_SPIN_YIELDS: a holder preempted on this CPU runs, one running on
 * the other CPU finishes meanwhile (with nothing else runnable the call
 * returns at once), and the other threads get the CPU instead of a PAUSE
 * loop (about 140 cycles a PAUSE on recent Intel cores). A timed wait
 * spins URSA_K_SPIN_PAUSE_ROUNDS rounds of 8, 16, 32... PAUSEs instead:
 * one yield on a loaded machine can outlast a short deadline. Measured
 * against PAUSE loops and other counts: bench/README.md.
 */
#define URSA_K_SPIN_YIELDS 16
#define URSA_K_SPIN_PAUSE_ROUNDS 4

static inline bool ursa_k_spin(int i, bool timed)
{
	if (timed) {
		if (i >= URSA_K_SPIN_PAUSE_ROUNDS)
			return false;
		for (int k = 0; k < (8 << i); k++)
			ursa_cpu_relax();
		return true;
	}
	if (i >= URSA_K_SPIN_YIELDS)
		return false;
	sched_yield();
	return true;
}

#endif
