# tests/: `make check` runs unit/, integration/, fault/, the plain-C driver
# and the spin models; `make stress` the long programs of stress/ and real/.
#
# A test program tests/DIR/NAME is built from tests/DIR/NAME.c with the
# common flags (AM_CFLAGS) and LDADD below: adding one is one line in its
# directory's list. Programs that need something else override NAME_LDADD.
AM_DEFAULT_SOURCE_EXT = .c
# Plain-C test programs (no Criterion): the library alone.
TEST_PLAIN_LDADD = lib/libursa.la $(URING_LIBS) $(PTHREAD_LIBS)
if HAVE_CRITERION
# Criterion suites: the shared helpers, the library, Criterion.
noinst_LTLIBRARIES += tests/libursatest.la
tests_libursatest_la_SOURCES = tests/helpers.h tests/helpers.c
LDADD = tests/libursatest.la $(TEST_PLAIN_LDADD) $(CRITERION_LIBS)
else
LDADD = $(TEST_PLAIN_LDADD)
endif

# Criterion prints its own summary; the driver records the exit status.
# SPIN is the spin configure found (tests/models/run.sh reads it).
AM_TESTS_ENVIRONMENT = CRITERION_NO_EARLY_EXIT=1; export CRITERION_NO_EARLY_EXIT; \
	SPIN='$(SPIN)'; export SPIN;
LOG_COMPILER = $(top_srcdir)/tests/run-test.sh
# Shell-script tests (.sh) run under $(SHELL), not under the Criterion
# wrapper tests/run-test.sh.
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
EXTRA_DIST += tests/run-test.sh

include tests/unit/local.mk
include tests/integration/local.mk
include tests/fault/local.mk
include tests/tsan/local.mk
include tests/models/local.mk
include tests/stress/local.mk
include tests/real/local.mk
include tests/oldkernel/local.mk
include tests/abi/local.mk
