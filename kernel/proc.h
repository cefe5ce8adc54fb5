/* SPDX-License-Identifier: MIT */
/*
 * kernel/proc.h — which thread and which process this is, for the pthread
 * shim's owner ids; and a nap for waits that must not be cancellation
 * points. Internal, not installed.
 */
#ifndef URSA_KERNEL_PROC_H
#define URSA_KERNEL_PROC_H

#include <stdint.h>

/* This thread's kernel thread id (gettid). */
__attribute__((visibility("hidden"))) int32_t ursa_k_gettid(void);

/* A word that reads 0 in every child that gets a copy of this address
 * space (fork(), _Fork(), clone() without CLONE_VM), whether or not the
 * child runs fork handlers: it lives in a page mapped with MADV_WIPEONFORK
 * (Linux 4.14+), which the kernel gives each such child zero-filled. The
 * caller stores a non-zero value and reads it back: 0 means "a child since
 * the store". Mapped by the first call (a page, kept for the life of the
 * process; concurrent first calls agree on one); NULL where the kernel
 * refuses the mapping or the advice (then nothing tells a child). */
__attribute__((visibility("hidden"))) uint64_t *ursa_k_fork_word(void);

/* Sleep about us microseconds (CLOCK_MONOTONIC), or less if a signal
 * handler runs; errno is left as it was. A raw clock_nanosleep system
 * call: unlike libc's nanosleep, not a cancellation point, so that a wait
 * inside an unlock, a post or a destroy (lib/mutex.c, ursa__pin_wait)
 * never acts on a pending pthread_cancel (which, in an unlock, would leave
 * the lock held). */
__attribute__((visibility("hidden"))) void ursa_k_nap_us(uint32_t us);

#endif
