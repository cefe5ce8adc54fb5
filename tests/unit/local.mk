# Unit suites (Criterion): one program per primitive, tests/unit/NAME.c.
if HAVE_CRITERION
UNIT_TESTS = \
	tests/unit/align \
	tests/unit/async \
	tests/unit/cond \
	tests/unit/deadline \
	tests/unit/event \
	tests/unit/mutex \
	tests/unit/probe \
	tests/unit/rwlock \
	tests/unit/sem \
	tests/unit/wait_any \
	tests/unit/waitq
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)

# The pthread shim's suites: linked to the shim first, so its pthread_*
# come before libc's.
SHIM_UNIT_TESTS = \
	tests/unit/shim_cond \
	tests/unit/shim_mutex \
	tests/unit/shim_rwlock \
	tests/unit/shim_sem
check_PROGRAMS += $(SHIM_UNIT_TESTS)
TESTS += $(SHIM_UNIT_TESTS)
SHIM_TEST_LDADD = lib/shim/libursa-pthread.la $(LDADD)
tests_unit_shim_cond_LDADD = $(SHIM_TEST_LDADD)
tests_unit_shim_mutex_LDADD = $(SHIM_TEST_LDADD)
tests_unit_shim_rwlock_LDADD = $(SHIM_TEST_LDADD)
tests_unit_shim_sem_LDADD = $(SHIM_TEST_LDADD)
endif
noinst_HEADERS += tests/unit/shim_test.h

# The shim under ThreadSanitizer: plain C (no Criterion), so it also runs in
# a --enable-sanitizers=thread build: make check TESTS=tests/unit/shim_tsan
check_PROGRAMS += tests/unit/shim_tsan
TESTS += tests/unit/shim_tsan
tests_unit_shim_tsan_LDADD = lib/shim/libursa-pthread.la $(PTHREAD_LIBS) -ldl
# It names none of the shim's symbols (dlsym finds them): keep the shim linked.
tests_unit_shim_tsan_LDFLAGS = $(AM_LDFLAGS) -Wl,--no-as-needed
