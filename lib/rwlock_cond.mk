# Area fragment (rwlock_cond): library sources, then its tests.
lib_libursa_la_SOURCES += lib/rwlock.c lib/cond.c
if HAVE_CRITERION
RWLOCK_COND_TESTS = \
	tests/unit/rwlock \
	tests/unit/cond \
	tests/integration/rwlock_cond
check_PROGRAMS += $(RWLOCK_COND_TESTS)
TESTS += $(RWLOCK_COND_TESTS)
tests_unit_rwlock_SOURCES = tests/unit/rwlock.c
tests_unit_rwlock_CFLAGS = $(TEST_CFLAGS)
tests_unit_rwlock_LDADD = $(TEST_LIBS)
tests_unit_cond_SOURCES = tests/unit/cond.c
tests_unit_cond_CFLAGS = $(TEST_CFLAGS)
tests_unit_cond_LDADD = $(TEST_LIBS)
tests_integration_rwlock_cond_SOURCES = tests/integration/rwlock_cond.c
tests_integration_rwlock_cond_CFLAGS = $(TEST_CFLAGS)
tests_integration_rwlock_cond_LDADD = $(TEST_LIBS)
endif
