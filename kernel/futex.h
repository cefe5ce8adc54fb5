/* SPDX-License-Identifier: MIT */
/*
 * kernel/futex.h — raw futex calls for lib/. Internal, not installed.
 *
 * Every function returns 0 (or a count) or -errno; errno is never left for
 * callers to read. `shared` selects a shared (inode/mm based) key instead of
 * a process-private one: waiters and wakers of one word must agree.
 */
#ifndef URSA_KERNEL_FUTEX_H
#define URSA_KERNEL_FUTEX_H

#include <linux/futex.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define URSA_HIDDEN __attribute__((visibility("hidden")))

/* Sleep while *uaddr == val, until woken, a signal (-EINTR) or the absolute
 * deadline `abs` on `clk` (CLOCK_MONOTONIC or CLOCK_REALTIME; NULL: no
 * deadline) passes (-ETIMEDOUT). -EAGAIN when *uaddr != val on entry.
 * A return of 0 may be spurious; callers re-check their condition.
 * bits: the sleeper's bitset (0: any); a wake wakes only sleepers whose
 * bits meet its own (FUTEX_WAIT_BITSET; futex2's mask). Among those the
 * kernel picks real-time waiters first, by priority, then FIFO. */
URSA_HIDDEN int ursa_k_futex_wait_bits(uint32_t *uaddr, uint32_t val, bool shared, clockid_t clk,
				       const struct timespec *abs, uint32_t bits);

/* As ursa_k_futex_wait_bits, but a wait with a deadline that a signal
 * handler interrupts ends with -EINTR even when the handler was installed
 * with SA_RESTART, as glibc's sem_timedwait does: futex(2)'s timed
 * FUTEX_WAIT_BITSET, which the kernel restarts only when no handler ran,
 * where futex2's futex_wait restarts under SA_RESTART. (Without a
 * deadline both restart under SA_RESTART: this call is for timed waits.) */
URSA_HIDDEN int ursa_k_futex_wait_eintr(uint32_t *uaddr, uint32_t val, bool shared, clockid_t clk,
					const struct timespec *abs, uint32_t bits);

/* Wake at most `n` waiters (n <= INT_MAX) of uaddr whose bits meet `bits`
 * (0: any); returns how many woke. */
URSA_HIDDEN int ursa_k_futex_wake_bits(uint32_t *uaddr, int n, bool shared, uint32_t bits);

static inline int ursa_k_futex_wait(uint32_t *uaddr, uint32_t val, bool shared, clockid_t clk,
				    const struct timespec *abs)
{
	return ursa_k_futex_wait_bits(uaddr, val, shared, clk, abs, 0);
}

static inline int ursa_k_futex_wake(uint32_t *uaddr, int n, bool shared)
{
	return ursa_k_futex_wake_bits(uaddr, n, shared, 0);
}

/* The kernel's bitset for bits (0: any; the kernel refuses 0). */
static inline uint32_t ursa_k_futex_bits(uint32_t bits)
{
	return bits ? bits : FUTEX_BITSET_MATCH_ANY;
}

/* Sleep until one of the words in v (1..128 entries; flags per entry from
 * ursa_k_futex2_flags()) differs from its val or is woken. Returns the woken
 * index, -EAGAIN if some word already differed, -ETIMEDOUT, -EINTR,
 * -ENOSYS on kernels before 5.16 or where a seccomp filter refuses the call
 * (kernel/futex.c). */
struct futex_waitv;
URSA_HIDDEN int ursa_k_futex_waitv(struct futex_waitv *v, unsigned n, clockid_t clk,
				   const struct timespec *abs);

/* FUTEX2_* flags for a 32-bit word of the given privacy (for waitv entries
 * and io_uring futex SQEs). */
static inline uint32_t ursa_k_futex2_flags(bool shared)
{
	return 0x02 /* FUTEX2_SIZE_U32 */ | (shared ? 0 : 128 /* FUTEX2_PRIVATE */);
}

/* Call before arming a process-private io_uring futex wait: makes sure a
 * wake sent after the process gains threads still finds it (Linux 6.17+
 * private futex hash; see kernel/futex.c). Cheap after the first call in a
 * process. Returns 0, or -errno if a helper thread could not be created. */
URSA_HIDDEN int ursa_k_private_ring_wait_prepare(void);

/* Which calls the running kernel has; detected once, then cached. */
URSA_HIDDEN bool ursa_k_have_futex2(void);
URSA_HIDDEN bool ursa_k_have_futex_waitv(void);

#endif
