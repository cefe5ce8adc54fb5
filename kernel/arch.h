/* SPDX-License-Identifier: MIT */
/* kernel/arch.h — what ursa does while it spins: the CPU's pause hint and
 * sched_yield(), and the CPU count that picks between them. */
#ifndef URSA_KERNEL_ARCH_H
#define URSA_KERNEL_ARCH_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

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
 * How a waiter spins before it sleeps (semaphore, wait queue; a lock's
 * waiter through ursa_k_lock_spin below): it found the object taken and
 * nobody asleep on it; after each call that returns true it looks again,
 * and once one returns false (or someone sleeps) it sleeps. Round i of
 * an untimed wait is one sched_yield(), up to URSA_K_SPIN_YIELDS: a holder
 * preempted on this CPU runs, one running on the other CPU finishes
 * meanwhile (with nothing else runnable the call returns at once), and the
 * other threads get the CPU instead of a PAUSE loop (a PAUSE costs about
 * 140 cycles on Skylake-era Intel cores, 10 ns on the Intel vCPUs of
 * bench/README.md's latest runs). A timed wait spins
 * URSA_K_SPIN_PAUSE_ROUNDS rounds of 8, 16, 32... PAUSEs instead: one
 * yield on a loaded machine can outlast a short deadline. Measured against
 * PAUSE loops and other counts: bench/README.md.
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
 * A lock's waiter (mutex, rwlock) spins the same URSA_K_SPIN_YIELDS yields
 * but looks at the word only after every URSA_K_LOCK_SPIN_LOOK_EVERY-th:
 * round i is that many yields. Each look pulls the lock's cache line to
 * this CPU and, with short sections, often finds the lock free between
 * two of its holder's sections and takes it; the line moves again, and
 * the holder that would have gone on with the line in its cache becomes a
 * waiter that looks in turn. Where other threads wait for the CPU, each
 * yield runs one of them, and looking after every yield had the waiters
 * take the lock from each other as often. Measured on 2 Intel Xeon vCPUs
 * (a line's round trip 116 ns there, a yield with nothing else runnable
 * 150 ns; bench/README.md, "Looking less often"): with empty sections,
 * looking after every yield passed the mutex between the CPUs 2 million
 * times a second at 2 threads and ran at 0.6 of glibc's rate, rw95 at
 * 0.5 at 4-32 threads; after every 8th, 1.4x and 0.9-1.1x (and a yield
 * inside the section 5-7% slower at 8-32 threads). Looking after
 * each yield only until a time had passed (1 us) did not help at 4-32
 * threads. A condvar's woken waiter re-takes its mutex looking after
 * every yield (lib/cond.c says why). A timed wait spins as ursa_k_spin.
 *
 * Where the process may run on one CPU only (taskset, a one-CPU cpuset),
 * the lock spin also ends once URSA_K_SPIN_NS have passed since its first
 * yield (*t0 holds when that was; a timed wait leaves it alone), checked
 * after each yield: a yield that ends past it ends the round with one more
 * look. There a waiter that runs means its holder does not: each yield
 * runs the holder (or another waiter) for a time slice, and the holder is
 * most often preempted while it holds the lock again, so 16 yields kept a
 * spinner from the lock for tens of milliseconds while the threads that
 * slept were woken at an unlock and served in turn. Measured with
 * taskset -c 0 (bench/README.md, "One CPU: the lock spin bounded by
 * time"): the mutex's least-served thread had 0.16-0.74 of the mean with
 * 100 ns and 1 us sections at 4-8 threads (glibc 0.82-0.97), its worst
 * p99 wait 22-24 ms; bounded, 0.68-0.88 and under a microsecond (the
 * rwlock's shares 0.36-0.70 -> 0.68-0.97), and the mutex with empty
 * sections at 8 threads 0.84-0.88x glibc's rate instead of 0.93-0.97x.
 * On 2 CPUs the same bound (300 us, or 1 ms) cost the condvar's
 * producer/consumer at 16-32 threads up to a third of its rate and moved
 * no share beyond noise, so it is not used there.
 *
 * On one CPU a `sharer` (an rwlock reader behind a writer) looks after
 * each yield: no cache line moves there, and once the writer has run and
 * let go, whatever holds the lock next is most often a reader it can
 * join. A mutex's or writer's waiter looking after each yield mostly finds
 * the lock taken again by the holder it let run, and takes it only from a
 * holder preempted between two sections, which shortens the holder's run:
 * on one CPU with a yield in the section at 2 threads, all lock waiters
 * looking after each yield cost the mutex 5% and rw50 13%, readers alone
 * cost rw50 3-6% (bench/README.md, "One CPU: a reader's look, a writer's
 * sleep").
 */
#define URSA_K_LOCK_SPIN_LOOK_EVERY 8
#define URSA_K_SPIN_NS 300000u

/* How many CPUs this process may run on (kernel/cpus.c); at least 1. */
__attribute__((visibility("hidden"))) int ursa_k_cpus(void);

/* CLOCK_MONOTONIC in nanoseconds (vDSO: no system call): the spin's
 * bound, and a waiter's own clock for how long it has waited (lib/). */
static inline uint64_t ursa_k_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline bool ursa_k_lock_spin(int i, bool timed, uint64_t *t0, bool sharer)
{
	if (timed)
		return ursa_k_spin(i, true);
	bool bounded = ursa_k_cpus() == 1;
	int every = bounded && sharer ? 1 : URSA_K_LOCK_SPIN_LOOK_EVERY;
	if (i >= URSA_K_SPIN_YIELDS / every)
		return false;
	if (bounded) {
		uint64_t now = ursa_k_now_ns();
		if (i == 0)
			*t0 = now;
		else if (now - *t0 >= URSA_K_SPIN_NS)
			return false;
	}
	for (int k = 0; k < every; k++) {
		sched_yield();
		if (bounded && ursa_k_now_ns() - *t0 >= URSA_K_SPIN_NS)
			break;
	}
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
