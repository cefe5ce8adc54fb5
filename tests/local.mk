# Criterion suites: unit/ and integration/ run under `make check`;
# stress/ runs under `make stress`.
if HAVE_CRITERION
TEST_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS) $(URING_CFLAGS)
TEST_LDADD = lib/libursa.la $(CRITERION_LIBS) $(URING_LIBS) $(PTHREAD_LIBS)
noinst_LTLIBRARIES += tests/libursatest.la
tests_libursatest_la_SOURCES = tests/helpers.h tests/helpers.c
tests_libursatest_la_CFLAGS = $(TEST_CFLAGS)
TEST_LIBS = tests/libursatest.la $(TEST_LDADD)
include tests/unit/local.mk
include tests/integration/local.mk
include tests/stress/local.mk
endif
# Criterion prints its own summary; the driver records the exit status.
AM_TESTS_ENVIRONMENT = CRITERION_NO_EARLY_EXIT=1; export CRITERION_NO_EARLY_EXIT;
LOG_COMPILER = $(top_srcdir)/tests/run-test.sh
EXTRA_DIST += tests/run-test.sh
