// SPDX-License-Identifier: MIT
//
// bench/absl_adapter.cc — absl::Mutex and absl::CondVar behind the C
// functions of bench/absl_adapter.h. Each function is one member call on an
// object constructed (placement new) in the caller's storage.
#include "bench/absl_adapter.h"

#include <new>

#include <absl/synchronization/mutex.h>

static_assert(sizeof(absl::Mutex) <= sizeof(ursa_bench_absl_mu), "absl::Mutex grew");
static_assert(alignof(absl::Mutex) <= alignof(ursa_bench_absl_mu), "absl::Mutex alignment");
static_assert(sizeof(absl::CondVar) <= sizeof(ursa_bench_absl_cv), "absl::CondVar grew");
static_assert(alignof(absl::CondVar) <= alignof(ursa_bench_absl_cv), "absl::CondVar alignment");

static inline absl::Mutex *mu(ursa_bench_absl_mu *m)
{
	return std::launder(reinterpret_cast<absl::Mutex *>(m->opaque));
}

static inline absl::CondVar *cv(ursa_bench_absl_cv *c)
{
	return std::launder(reinterpret_cast<absl::CondVar *>(c->opaque));
}

extern "C" {

void ursa_bench_absl_setup(void)
{
	absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
	absl::EnableMutexInvariantDebugging(false);
}

void ursa_bench_absl_mu_init(ursa_bench_absl_mu *m)
{
	new (m->opaque) absl::Mutex();
}

void ursa_bench_absl_mu_destroy(ursa_bench_absl_mu *m)
{
	mu(m)->~Mutex();
}

void ursa_bench_absl_lock(ursa_bench_absl_mu *m)
{
	mu(m)->Lock();
}

void ursa_bench_absl_unlock(ursa_bench_absl_mu *m)
{
	mu(m)->Unlock();
}

bool ursa_bench_absl_trylock(ursa_bench_absl_mu *m)
{
	return mu(m)->TryLock();
}

void ursa_bench_absl_rdlock(ursa_bench_absl_mu *m)
{
	mu(m)->ReaderLock();
}

void ursa_bench_absl_rdunlock(ursa_bench_absl_mu *m)
{
	mu(m)->ReaderUnlock();
}

void ursa_bench_absl_cv_init(ursa_bench_absl_cv *c)
{
	new (c->opaque) absl::CondVar();
}

void ursa_bench_absl_cv_destroy(ursa_bench_absl_cv *c)
{
	cv(c)->~CondVar();
}

void ursa_bench_absl_cv_wait(ursa_bench_absl_cv *c, ursa_bench_absl_mu *m)
{
	cv(c)->Wait(mu(m));
}

void ursa_bench_absl_cv_signal(ursa_bench_absl_cv *c)
{
	cv(c)->Signal();
}

void ursa_bench_absl_cv_broadcast(ursa_bench_absl_cv *c)
{
	cv(c)->SignalAll();
}

} // extern "C"
