# Unit suites: one program per primitive.
UNIT_TESTS = \
	tests/unit/mutex
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)
tests_unit_mutex_SOURCES = tests/unit/mutex.c
tests_unit_mutex_CFLAGS = $(TEST_CFLAGS)
tests_unit_mutex_LDADD = $(TEST_LIBS)
