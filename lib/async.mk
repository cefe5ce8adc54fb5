# Area fragment (async): every wait inside an io_uring, then its tests.
lib_libursa_la_SOURCES += lib/async.c
if HAVE_CRITERION
check_PROGRAMS += tests/unit/async tests/integration/async_interop tests/integration/async_prims
TESTS += tests/unit/async tests/integration/async_interop tests/integration/async_prims
tests_unit_async_SOURCES = tests/unit/async.c
tests_unit_async_CFLAGS = $(TEST_CFLAGS)
tests_unit_async_LDADD = $(TEST_LIBS)
tests_integration_async_interop_SOURCES = tests/integration/async_interop.c
tests_integration_async_interop_CFLAGS = $(TEST_CFLAGS)
tests_integration_async_interop_LDADD = $(TEST_LIBS)
endif
if HAVE_CRITERION
tests_integration_async_prims_SOURCES = tests/integration/async_prims.c
tests_integration_async_prims_CFLAGS = $(TEST_CFLAGS)
tests_integration_async_prims_LDADD = $(TEST_LIBS)
endif
