# tests/headers: every public header compiles alone (and all of them in
# reverse order) in strict ISO C99, strict ISO C11 and C++11, warnings as
# errors. CC and CXX are the ones make uses (make's default CXX is g++).
TEST_EXTENSIONS += .check
CHECK_LOG_COMPILER = env CC='$(CC)' CXX='$(CXX)' top_srcdir='$(top_srcdir)' $(SHELL)
TESTS += tests/headers/compile.check
EXTRA_DIST += tests/headers/compile.check
