/* SPDX-License-Identifier: MIT */
/* bench/bufpool_threads_ursa.c — engine `threads-ursa`: the same
 * thread-per-worker engine (bufpool_threads.h) on ursa's blocking
 * ursa_mutex_t, ursa_rwlock_t and ursa_cond_t. */
#define BP_LOCKS_URSA	 1
#define BP_THREADS_ENTRY bp_engine_threads_ursa
#include "bench/bufpool_threads.h"
