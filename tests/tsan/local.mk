# The threads driver: plain C, no Criterion, so it also runs under
# ThreadSanitizer (and statically linked on the old kernel). It exercises
# every primitive's contended paths, blocking and async.
check_PROGRAMS += tests/tsan/tsan_driver
tests_tsan_tsan_driver_LDADD = $(TEST_PLAIN_LDADD)
TESTS += tests/tsan/run-driver.sh
EXTRA_DIST += tests/tsan/run-driver.sh

# make check-tsan: Criterion cannot run under ThreadSanitizer (its boxfort
# arena fails, Criterion issue #274), so the TSan build runs the plain-C
# driver, then a short `make stress` run (processes, threads and rings on
# shared objects). The TSan build lives in its own configured tree under
# this build tree.
TSAN_BUILDDIR = $(abs_top_builddir)/tsan-build
TSAN_OPTIONS_DEFAULT = halt_on_error=1 abort_on_error=0 second_deadlock_stats=1 history_size=4
TSAN_STRESS_OPS = 300000
check-tsan:
	@$(MKDIR_P) '$(TSAN_BUILDDIR)'
	@cd '$(TSAN_BUILDDIR)' && if test ! -f Makefile; then \
	  echo "check-tsan: configuring $(TSAN_BUILDDIR) with --enable-sanitizers=thread"; \
	  '$(abs_top_srcdir)/configure' -q --enable-sanitizers=thread CC='$(CC)' || exit 1; fi
	@$(MAKE) $(AM_MAKEFLAGS) -C '$(TSAN_BUILDDIR)' lib/libursa.la tests/tsan/tsan_driver \
	  tests/stress/stress
	cd '$(TSAN_BUILDDIR)' && TSAN_OPTIONS="$${TSAN_OPTIONS:-$(TSAN_OPTIONS_DEFAULT)}" \
	  $(SHELL) '$(abs_top_srcdir)/tests/tsan/run-driver.sh' $(TSAN_DRIVER_ARGS)
	cd '$(TSAN_BUILDDIR)' && TSAN_OPTIONS="$${TSAN_OPTIONS:-$(TSAN_OPTIONS_DEFAULT)}" \
	  timeout 600 ./tests/stress/stress -q -n $(TSAN_STRESS_OPS)
