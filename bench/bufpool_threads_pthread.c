/* SPDX-License-Identifier: MIT */
/* bench/bufpool_threads_pthread.c — engine `threads`: the thread-per-worker
 * engine (bufpool_threads.h) on glibc's pthread mutex, rwlock and condvar. */
#define BP_LOCKS_PTHREAD 1
#define BP_THREADS_ENTRY bp_engine_threads_pthread
#include "bench/bufpool_threads.h"
