# Fault injection: signal storms, io_uring or futex2 refused by seccomp,
# SIGKILLed holders and waiters, cancel storms on tiny rings;
# tests/fault/NAME.c.
# (Built and run by make check: SUITES, tests/local.mk.)
FAULT_TESTS = tests/fault/mutex_handoff_repro tests/fault/ring tests/fault/seccomp \
	tests/fault/unlock_destroy tests/fault/waker_destroy tests/fault/clock_step \
	tests/fault/cond_rt \
	tests/fault/sigkill tests/fault/signals

# tests/fault/mutex_handoff_repro: the C reproduction of the mutex hand-off
# hang the spin model found (fixed in fd48f8a), a regression check; and a
# real hand-off that newcomers' inline lock must not take (URSA_0.2).
repro-mutex-handoff: tests/fault/mutex_handoff_repro
	./tests/fault/mutex_handoff_repro --timeout 120
.PHONY: repro-mutex-handoff
