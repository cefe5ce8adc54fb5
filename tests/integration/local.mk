# Integration suites: threads, processes and rings together,
# tests/integration/NAME.c.
INTEGRATION_TESTS = \
	tests/integration/async_interop \
	tests/integration/async_prims \
	tests/integration/contended \
	tests/integration/kernel_hazards \
	tests/integration/rwlock_cond \
	tests/integration/sem_event_any \
	tests/integration/waitq_groupcommit
check_PROGRAMS += $(INTEGRATION_TESTS)
TESTS += $(INTEGRATION_TESTS)
