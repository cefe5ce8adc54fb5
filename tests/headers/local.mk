# tests/headers: every public header compiles alone (and all of them in
# reverse order) in strict ISO C99, strict ISO C11 and C++11, warnings as
# errors. CC and CXX are the ones make uses (make's default CXX is g++).
#
# Shell tests named *.check (here, examples/ and man/) get the tools and
# the install paths they need from the environment set here.
TEST_EXTENSIONS += .check
CHECK_LOG_COMPILER = env CC='$(CC)' CXX='$(CXX)' MAKE='$(MAKE)' \
	top_srcdir='$(top_srcdir)' top_builddir='$(abs_top_builddir)' \
	prefix='$(prefix)' libdir='$(libdir)' mandir='$(mandir)' docdir='$(docdir)' \
	pkgconfigdir='$(pkgconfigdir)' SAN_FLAGS='$(SAN_CFLAGS) $(SAN_LDFLAGS)' $(SHELL)
TESTS += tests/headers/compile.check
EXTRA_DIST += tests/headers/compile.check
