# Integration suites: threads, processes and rings together,
# tests/integration/NAME.c.
# (Built and run by make check: SUITES, tests/local.mk.)
INTEGRATION_TESTS = tests/integration/async_interop tests/integration/async_prims \
	tests/integration/contended tests/integration/kernel_hazards \
	tests/integration/rwlock_cond tests/integration/sem_event_any \
	tests/integration/waitq_groupcommit
# Shared by contended.c and tests/stress/stress.c.
noinst_HEADERS += tests/integration/common.h
