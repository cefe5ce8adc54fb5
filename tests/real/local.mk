# Real programs under LD_PRELOAD of the pthread shim (pigz, zstd -T2, a
# condvar-heavy program; PostgreSQL's server with pgbench; MariaDB's with
# sysbench and its own test suite): minutes, so part of `make stress`, not
# of make check.
# (make stress runs them: tests/stress/local.mk.)
if ENABLE_SHIM
shim-real: lib/shim/libursa-pthread.la
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so \
		bash $(top_srcdir)/tests/real/run.sh
shim-postgres: lib/shim/libursa-pthread.la
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so \
		bash $(top_srcdir)/tests/real/postgres.sh
shim-mariadb: lib/shim/libursa-pthread.la
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so \
		bash $(top_srcdir)/tests/real/mariadb.sh
# MariaDB's own test suites (main, innodb) with the servers under test on
# the shim.
shim-mariadb-mtr: lib/shim/libursa-pthread.la
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so \
		bash $(top_srcdir)/tests/real/mariadb-mtr.sh
# The same programs (shorter) in a sandbox that refuses the futex2 calls
# with EPERM, as podman's default seccomp profile did until Podman 6
# (tests/real/filtered.c): the shim must fall back to futex(2) unseen.
shim-real-filtered: lib/shim/libursa-pthread.la tests/real/filtered
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so URSA_REAL_MB=64 \
		URSA_REAL_REPS=1 ./tests/real/filtered EPERM bash $(top_srcdir)/tests/real/run.sh
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so URSA_PG_ROUNDS=1 \
		URSA_PG_RUNS="tpcb:8 N:24" ./tests/real/filtered EPERM \
		bash $(top_srcdir)/tests/real/postgres.sh
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so URSA_MDB_ROUNDS=1 \
		URSA_MDB_RUNS="rw:16 xfer:32" ./tests/real/filtered EPERM \
		bash $(top_srcdir)/tests/real/mariadb.sh
endif
EXTRA_PROGRAMS += tests/real/filtered
tests_real_filtered_LDADD =
CLEANFILES += tests/real/filtered
EXTRA_DIST += tests/real/run.sh tests/real/gen.py tests/real/condqueue.py tests/real/postgres.sh \
	tests/real/mariadb.sh tests/real/mariadb-mtr.sh tests/real/xfer.lua tests/real/ab_table.py \
	tests/real/common.sh
