# Real programs under LD_PRELOAD of the pthread shim (pigz, zstd -T2, a
# condvar-heavy program; PostgreSQL's server with pgbench): minutes, so part
# of `make stress`, not of make check.
# (make stress runs them: tests/stress/local.mk.)
if ENABLE_SHIM
shim-real: lib/shim/libursa-pthread.la
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so \
		bash $(top_srcdir)/tests/real/run.sh
shim-postgres: lib/shim/libursa-pthread.la
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so \
		bash $(top_srcdir)/tests/real/postgres.sh
endif
EXTRA_DIST += tests/real/run.sh tests/real/gen.py tests/real/condqueue.py tests/real/postgres.sh
