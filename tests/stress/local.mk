# Stress programs: long; run by `make stress`, never by `make check`.
STRESS_TESTS =
EXTRA_PROGRAMS = $(STRESS_TESTS)
stress: $(STRESS_TESTS)
	@set -e; for t in $(STRESS_TESTS); do echo "== $$t"; ./$$t; done
.PHONY: stress
