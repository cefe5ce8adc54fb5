# make check-tsan: configure a tree with --enable-sanitizers=thread (under
# this build tree) and run `make check` there. Criterion cannot run under
# ThreadSanitizer (its boxfort arena fails, Criterion issue #274), so that
# tree compiles the very same suites against the plain-C runner
# tests/harness/criterion/criterion.h (tests/local.mk), then runs a short
# `make stress` program (processes, threads and rings on shared objects).
# URSA_TEST_SCALE (default 1) multiplies the iteration counts of the suites
# that read it (default 0.2 there); TSAN_OPTIONS overrides the defaults
# (tests/local.mk). The spin models and the examples/man checks (no code
# of the suites) are not run again.
TSAN_BUILDDIR = $(abs_top_builddir)/tsan-build
TSAN_STRESS_OPS = 300000
check-tsan:
	@$(MKDIR_P) '$(TSAN_BUILDDIR)'
	@cd '$(TSAN_BUILDDIR)' && if test ! -f Makefile; then \
	  echo "check-tsan: configuring $(TSAN_BUILDDIR) with --enable-sanitizers=thread"; \
	  '$(abs_top_srcdir)/configure' -q --enable-sanitizers=thread CC='$(CC)' || exit 1; fi
	$(MAKE) $(AM_MAKEFLAGS) -C '$(TSAN_BUILDDIR)' check \
	  TESTS='$(filter-out tests/models/% examples/% man/%,$(TESTS))'
	@$(MAKE) $(AM_MAKEFLAGS) -C '$(TSAN_BUILDDIR)' tests/stress/stress
	cd '$(TSAN_BUILDDIR)' && TSAN_OPTIONS="$${TSAN_OPTIONS:-$(TSAN_OPTIONS_DEFAULT)}" \
	  timeout 600 ./tests/stress/stress -q -n $(TSAN_STRESS_OPS)
.PHONY: check-tsan
