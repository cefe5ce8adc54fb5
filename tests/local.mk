# tests/: `make check` runs unit/, integration/, fault/ and the spin
# models; `make stress` the long programs of stress/ and real/.
#
# A test program tests/DIR/NAME is built from tests/DIR/NAME.c with the
# common flags (AM_CFLAGS) and LDADD below: adding one is one line in its
# directory's list. Programs that need something else override NAME_LDADD.
AM_DEFAULT_SOURCE_EXT = .c
# Plain-C test programs (no test framework): the library alone.
TEST_PLAIN_LDADD = lib/libursa.la $(URING_LIBS) $(PTHREAD_LIBS)

# The suites are written for Criterion, and Criterion runs them in every
# tree except two: one configured with --enable-sanitizers=thread (Criterion
# cannot run under ThreadSanitizer: its boxfort arena fails, Criterion
# issue #274) and one without libcriterion. There the same sources compile
# against tests/harness/criterion/criterion.h, a header-only plain-C runner
# that follows Criterion's API (each test forked, under a timeout; skip is
# exit 77), so that every suite runs unchanged under every sanitizer.
if HAVE_CRITERION
TEST_HARNESS_PLAIN = $(findstring thread,$(SAN_CFLAGS))
else
TEST_HARNESS_PLAIN = yes
endif
AM_CPPFLAGS += $(if $(TEST_HARNESS_PLAIN),-DURSA_TEST_PLAIN -I$(top_srcdir)/tests/harness)
noinst_HEADERS += tests/harness/criterion/criterion.h tests/harness/criterion/parameterized.h \
	tests/harness/shim_direct.h

# The suites: the shared helpers, the library, Criterion (if it runs them).
noinst_LTLIBRARIES += tests/libursatest.la
tests_libursatest_la_SOURCES = tests/helpers.h tests/helpers.c
LDADD = tests/libursatest.la $(TEST_PLAIN_LDADD) $(if $(TEST_HARNESS_PLAIN),,$(CRITERION_LIBS))

# Criterion (or the plain runner) prints its own summary; the driver records
# the exit status (77: every test skipped).
# SPIN is the spin configure found (tests/models/run.sh reads it).
AM_TESTS_ENVIRONMENT = CRITERION_NO_EARLY_EXIT=1; export CRITERION_NO_EARLY_EXIT; \
	SPIN='$(SPIN)'; export SPIN; $(if $(TEST_TSAN),$(TEST_TSAN_ENVIRONMENT))
# Under ThreadSanitizer: its options (unless set), the long contention loops
# at a fifth (URSA_TEST_SCALE, tests/helpers.h: t_iters), and the tests it
# cannot run, each for a reason of TSan's own:
# - shim_sem/sa_restart_keeps_waiting: TSan runs a signal handler only when
#   the thread next enters a function TSan intercepts; a thread asleep in
#   the shim's raw futex syscall never does, so the handler never runs;
# (Tests on robust and PI mutexes, which the shim bridges to glibc's, skip
# themselves there: tests/harness/shim_direct.h.)
# - shim_mutex/usable_in_constructors: its constructor does nothing under
#   TSan (#if), so its check cannot hold there.
TEST_TSAN = $(findstring thread,$(SAN_CFLAGS))
TSAN_OPTIONS_DEFAULT = halt_on_error=1 abort_on_error=0 second_deadlock_stats=1 history_size=4
TSAN_TEST_EXCLUDE = shim_sem/sa_restart_keeps_waiting shim_mutex/usable_in_constructors
TEST_TSAN_ENVIRONMENT = TSAN_OPTIONS="$${TSAN_OPTIONS:-$(TSAN_OPTIONS_DEFAULT)}"; \
	URSA_TEST_SCALE="$${URSA_TEST_SCALE:-0.2}"; URSA_TEST_EXCLUDE='$(TSAN_TEST_EXCLUDE)'; \
	export TSAN_OPTIONS URSA_TEST_SCALE URSA_TEST_EXCLUDE;
LOG_COMPILER = $(top_srcdir)/tests/run-test.sh
# Shell-script tests (.sh) run under $(SHELL), not under the Criterion
# wrapper tests/run-test.sh.
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
EXTRA_DIST += tests/run-test.sh

# make check-ring-setups: the suites that use rings, once per ring setup
# (URSA_TEST_RING_SETUP, tests/helpers.h), as liburing's tests loop over
# setup flags. Not part of make check (three more runs of these suites).
RING_SETUP_TESTS = tests/unit/async tests/unit/async_cqe tests/unit/rwlock tests/unit/sem tests/unit/waitq \
	tests/unit/wait_any \
	tests/integration/async_interop tests/integration/async_prims \
	tests/integration/contended tests/integration/kernel_hazards tests/fault/ring
check-ring-setups:
	@fail=0; for s in sqpoll coop defer; do echo "== ring setup $$s"; \
	  URSA_TEST_RING_SETUP=$$s $(MAKE) $(AM_MAKEFLAGS) check TESTS='$(RING_SETUP_TESTS)' \
	    TEST_SUITE_LOG=test-suite-$$s.log || fail=1; done; exit $$fail
.PHONY: check-ring-setups

# make check-filtered: the suites again in two sandboxes (tests/real/filtered.c,
# a seccomp filter inherited by every test): the futex2 calls refused with
# EPERM, as podman's default profile did until Podman 6; then io_uring
# refused as well, as Docker's default profile has since Docker 25. The
# blocking API must fall back to futex(2) unseen; a test that needs a call
# refused there skips, saying which (tests/helpers.h).
FILTERED_TESTS = $(SUITES) $(SHIM_UNIT_TESTS)
check-filtered: tests/real/filtered
	@fail=0; for box in podman docker; do \
	  case $$box in podman) f=EPERM ;; *) f="--uring EPERM" ;; esac; \
	  echo "== filtered $$f (as $$box's default seccomp profile)"; \
	  ./tests/real/filtered $$f $(MAKE) $(AM_MAKEFLAGS) check TESTS='$(FILTERED_TESTS)' \
	    TEST_SUITE_LOG=test-suite-$$box.log || fail=1; done; exit $$fail
.PHONY: check-filtered

include tests/unit/local.mk
include tests/integration/local.mk
include tests/fault/local.mk
# The Criterion suites each directory lists: built and run by make check.
SUITES = $(UNIT_TESTS) $(INTEGRATION_TESTS) $(FAULT_TESTS)
check_PROGRAMS += $(SUITES)
TESTS += $(SUITES)
include tests/tsan/local.mk
include tests/models/local.mk
include tests/stress/local.mk
include tests/real/local.mk
include tests/oldkernel/local.mk
include tests/abi/local.mk
