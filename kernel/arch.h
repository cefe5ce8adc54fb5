/* SPDX-License-Identifier: MIT */
/* kernel/arch.h — what ursa does while it spins: the CPU's pause hint and
 * sched_yield(), and the CPU count that picks between them. */
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

/*
 * On a machine with many CPUs a contended mutex's holder most likely runs
 * on another CPU and lets go within microseconds, and a waiter that sleeps
 * costs a wake-up system call and an idle CPU's wake-up latency. There an
 * untimed locker first watches the word (lib/mutex.c): URSA_K_BACKOFF_LOOKS
 * loads, with 1, 2, 4 ... URSA_K_BACKOFF_MAX PAUSEs between them, taking
 * the lock when it sees it free, whether or not waiters sleep. Measured on
 * a 16-CPU machine against the yields alone (bench/README.md, "On 16
 * cores, again"): 1.2 to 3.9 times the throughput at 4-64 threads with
 * empty, 0.3 us and 0.4 us sections, 1.6-2.0 times with a yield inside
 * the section at 4-16 threads, 0.88-0.90 times at 64. On 2 CPUs the same spin
 * takes the CPU from a holder that yielded or was preempted (a tenth of
 * the throughput with a yield inside the section at 4 threads), so it is
 * used only from URSA_K_BACKOFF_CPUS CPUs up. Machines with 3 to 15 CPUs
 * were not measured; 8 is a guess on the side of the yields.
 */
#define URSA_K_BACKOFF_CPUS 8
#define URSA_K_BACKOFF_LOOKS 30
#define URSA_K_BACKOFF_MAX 256

/* How many CPUs this process may run on (kernel/cpus.c); at least 1. */
__attribute__((visibility("hidden"))) int ursa_k_cpus(void);

static inline bool ursa_k_backoff_wanted(void)
{
	return ursa_k_cpus() >= URSA_K_BACKOFF_CPUS;
}

/* Pause b times; returns the next round's count (doubling, capped). */
static inline unsigned ursa_k_backoff(unsigned b)
{
	for (unsigned k = 0; k < b; k++)
		ursa_cpu_relax();
	return b < URSA_K_BACKOFF_MAX ? b * 2 : b;
}

#endif
