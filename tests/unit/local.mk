# Unit suites: one program per primitive, tests/unit/NAME.c.
# (Built and run by make check: SUITES, tests/local.mk.)
UNIT_TESTS = tests/unit/align tests/unit/async tests/unit/async_cqe tests/unit/cond \
	tests/unit/deadline tests/unit/event tests/unit/latch tests/unit/mutex \
	tests/unit/pins tests/unit/probe tests/unit/rwlock tests/unit/sem tests/unit/wait_any \
	tests/unit/waitq

if ENABLE_SHIM
# The pthread shim's suites: linked to the shim first, so its pthread_*
# come before libc's.
SHIM_UNIT_TESTS = tests/unit/shim_cond tests/unit/shim_contended tests/unit/shim_mutex \
	tests/unit/shim_rwlock tests/unit/shim_sem tests/unit/shim_stats
check_PROGRAMS += $(SHIM_UNIT_TESTS)
TESTS += $(SHIM_UNIT_TESTS)
SHIM_TEST_LDADD = lib/shim/libursa-pthread.la $(LDADD)
# Under ThreadSanitizer they name none of the shim's symbols
# (tests/harness/shim_direct.h looks them up): keep the shim linked.
SHIM_TEST_LINKFLAGS = $(AM_LDFLAGS) -Wl,--no-as-needed
tests_unit_shim_cond_LDADD = $(SHIM_TEST_LDADD)
tests_unit_shim_contended_LDADD = $(SHIM_TEST_LDADD)
tests_unit_shim_mutex_LDADD = $(SHIM_TEST_LDADD)
tests_unit_shim_rwlock_LDADD = $(SHIM_TEST_LDADD)
tests_unit_shim_sem_LDADD = $(SHIM_TEST_LDADD)
tests_unit_shim_stats_LDADD = $(SHIM_TEST_LDADD)
tests_unit_shim_cond_LDFLAGS = $(SHIM_TEST_LINKFLAGS)
tests_unit_shim_contended_LDFLAGS = $(SHIM_TEST_LINKFLAGS)
tests_unit_shim_mutex_LDFLAGS = $(SHIM_TEST_LINKFLAGS)
tests_unit_shim_rwlock_LDFLAGS = $(SHIM_TEST_LINKFLAGS)
tests_unit_shim_sem_LDFLAGS = $(SHIM_TEST_LINKFLAGS)
tests_unit_shim_stats_LDFLAGS = $(SHIM_TEST_LINKFLAGS)
endif ENABLE_SHIM
noinst_HEADERS += tests/unit/shim_test.h tests/unit/rwlock_layout.h
