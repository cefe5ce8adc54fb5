/* SPDX-License-Identifier: MIT */
/*
 * bench/absl_adapter.h — a C face for abseil's absl::Mutex and
 * absl::CondVar (bench/absl_adapter.cc), for the contention scenario.
 *
 * absl::Mutex and absl::CondVar are one word each; the C side holds them in
 * opaque, suitably aligned storage and every operation is one call into the
 * adapter, which calls the C++ member function (Lock, Unlock, TryLock,
 * ReaderLock, ReaderUnlock, CondVar::Wait, Signal, SignalAll). absl's own
 * Lock/Unlock are out of line in libabsl_synchronization, so the adapter
 * adds one direct call per operation — the same for every workload.
 */
#ifndef URSA_BENCH_ABSL_ADAPTER_H
#define URSA_BENCH_ABSL_ADAPTER_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef union {
	unsigned char opaque[8];
	uint64_t align_;
} ursa_bench_absl_mu;

typedef union {
	unsigned char opaque[8];
	uint64_t align_;
} ursa_bench_absl_cv;

/* Once per process, before any other call: turns absl's deadlock detector
 * off (in a build without NDEBUG it would track every lock order, which no
 * production program pays for). */
void ursa_bench_absl_setup(void);

void ursa_bench_absl_mu_init(ursa_bench_absl_mu *m);
void ursa_bench_absl_mu_destroy(ursa_bench_absl_mu *m);
void ursa_bench_absl_lock(ursa_bench_absl_mu *m);
void ursa_bench_absl_unlock(ursa_bench_absl_mu *m);
bool ursa_bench_absl_trylock(ursa_bench_absl_mu *m);
void ursa_bench_absl_rdlock(ursa_bench_absl_mu *m);
void ursa_bench_absl_rdunlock(ursa_bench_absl_mu *m);

void ursa_bench_absl_cv_init(ursa_bench_absl_cv *c);
void ursa_bench_absl_cv_destroy(ursa_bench_absl_cv *c);
void ursa_bench_absl_cv_wait(ursa_bench_absl_cv *c, ursa_bench_absl_mu *m);
void ursa_bench_absl_cv_signal(ursa_bench_absl_cv *c);
void ursa_bench_absl_cv_broadcast(ursa_bench_absl_cv *c);

#ifdef __cplusplus
}
#endif

#endif
