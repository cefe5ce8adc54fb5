# Integration suites: threads, processes and rings together.
INTEGRATION_TESTS =
check_PROGRAMS += $(INTEGRATION_TESTS)
TESTS += $(INTEGRATION_TESTS)
