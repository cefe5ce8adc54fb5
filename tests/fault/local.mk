# Fault injection (Criterion): signal storms, io_uring blocked by seccomp,
# SIGKILLed holders and waiters, cancel storms on tiny rings;
# tests/fault/NAME.c.
if HAVE_CRITERION
FAULT_TESTS = \
	tests/fault/no_uring \
	tests/fault/ring \
	tests/fault/sigkill \
	tests/fault/signals
check_PROGRAMS += $(FAULT_TESTS)
TESTS += $(FAULT_TESTS)
endif

# A C reproduction of the mutex hand-off hang the spin model found (fixed
# in fd48f8a; a race, so not in make check): make repro-mutex-handoff.
EXTRA_PROGRAMS += tests/fault/mutex_handoff_repro
tests_fault_mutex_handoff_repro_LDADD = $(TEST_PLAIN_LDADD)
CLEANFILES += tests/fault/mutex_handoff_repro
repro-mutex-handoff: tests/fault/mutex_handoff_repro
	timeout 120 ./tests/fault/mutex_handoff_repro
