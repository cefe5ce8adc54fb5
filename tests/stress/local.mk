# Stress programs (plain C): long; run by `make stress`, never by
# `make check`. tests/stress/stress: every primitive shared by processes,
# threads and rings, 10^8 operations by default (STRESS_ARGS='-n N' to
# change), invariant checks; prints operations done and violations (must
# be 0). tests/stress/destroy_churn: objects destroyed and made
# inaccessible as soon as their waiter may (a waker's late access is a
# SIGSEGV), 20000 rounds per kind (-n N).
STRESS_TESTS = tests/stress/stress tests/stress/destroy_churn
EXTRA_PROGRAMS += $(STRESS_TESTS)
tests_stress_stress_LDADD = $(TEST_PLAIN_LDADD)
tests_stress_destroy_churn_LDADD = $(TEST_PLAIN_LDADD)
CLEANFILES += $(STRESS_TESTS)
# Then the real programs on the pthread shim (tests/real/local.mk).
if ENABLE_SHIM
STRESS_REAL = shim-real shim-postgres shim-mariadb shim-mariadb-mtr shim-real-filtered
endif
stress: $(STRESS_TESTS) $(STRESS_REAL)
	@set -e; for t in $(STRESS_TESTS); do echo "== $$t"; ./$$t $(STRESS_ARGS); done
.PHONY: stress
