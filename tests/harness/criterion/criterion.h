/* SPDX-License-Identifier: MIT */
/*
 * tests/harness/criterion/criterion.h — a plain-C stand-in for the part of
 * Criterion that ursa's suites use, so that the same test sources run where
 * Criterion cannot: under ThreadSanitizer (Criterion's boxfort arena fails
 * there, Criterion issue #274), statically linked on an old kernel, or on a
 * machine without libcriterion.
 *
 * A tree configured with --enable-sanitizers=thread compiles every suite
 * with -DURSA_TEST_PLAIN -I tests/harness, so `#include
 * <criterion/criterion.h>` lands here; every other tree uses Criterion
 * itself. Criterion stays the framework the project's tests are written
 * for: this file only has to follow it.
 *
 * What it does, like Criterion: Test(), TestSuite() (.init, .fini,
 * .timeout, .disabled, .description; a test's fields override its suite's),
 * ParameterizedTest() over cr_make_param_array(), the cr_assert_* /
 * cr_expect_* macros that the suites use, cr_skip_test(), cr_log_*. Each
 * test (each parameter) runs in its own forked child, under a watchdog (the
 * test's .timeout, else --timeout N, else 60 s; times URSA_TEST_TIMEOUT_SCALE,
 * default 3 under ThreadSanitizer): a hang is a failure named after its
 * test, never a hung `make check`. URSA_TEST_EXCLUDE names tests (globs) a
 * build cannot run; they are reported as skipped. A fatal assertion ends the
 * child from any thread. The runner takes Criterion's command-line options
 * that tests/run-test.sh passes (--timeout N, -jN, --short-filename,
 * --verbose, --filter=GLOB on "suite/name", --list).
 *
 * Exit status: 0 when every test passed or skipped, 1 when one failed,
 * 77 (automake's SKIP) when every test skipped.
 *
 * It is header-only: the registry and main() are weak definitions, so the
 * suite and tests/helpers.c may both include it and the program has one of
 * each.
 */
#ifndef URSA_CRITERION_PLAIN_H
#define URSA_CRITERION_PLAIN_H
#pragma GCC system_header /* like Criterion's own: its macro bodies do not warn */

#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define URSA_CRITERION_PLAIN 1
#define CRP_SKIP_STATUS 77

struct crp_opts {
	int crp_first; /* so that `{0, __VA_ARGS__}` never overrides a field */
	void (*init)(void);
	void (*fini)(void);
	double timeout;
	bool disabled;
	const char *description;
	int signal;    /* accepted, not supported: such a test fails */
	int exit_code; /* accepted, not supported */
};

struct criterion_test_params {
	size_t size;
	void *params;
	size_t length;
	void (*cleanup)(struct criterion_test_params *);
};

struct crp_suite {
	const char *name;
	struct crp_opts opts;
	struct crp_suite *next;
};

struct crp_test {
	const char *suite, *name, *file;
	void (*fn)(void);
	void (*pfn)(void *);
	struct criterion_test_params (*params)(void);
	struct crp_opts opts;
	struct crp_test *next;
};

/* One registry per program (weak: every translation unit that includes this
 * header defines it; the linker keeps one). */
__attribute__((weak)) struct crp_test *crp_tests, **crp_tests_tail;
__attribute__((weak)) struct crp_suite *crp_suites;
__attribute__((weak)) int crp_expect_failures;

static inline void crp_add_test(struct crp_test *t)
{
	if (!crp_tests_tail)
		crp_tests_tail = &crp_tests;
	*crp_tests_tail = t;
	crp_tests_tail = &t->next;
}

static inline void crp_add_suite(struct crp_suite *s)
{
	s->next = crp_suites;
	crp_suites = s;
}

#define CRP_CAT_(a, b) a##b
#define CRP_CAT(a, b) CRP_CAT_(a, b)
#define CRP_ID(s, n, what) CRP_CAT(crp_##what##_##s##_, n)

#define TestSuite(s, ...)                                                                 \
	static struct crp_suite CRP_ID(s, x, suite) = {#s, {0, __VA_ARGS__}, NULL};        \
	__attribute__((constructor)) static void CRP_ID(s, x, suite_reg)(void)             \
	{                                                                                 \
		crp_add_suite(&CRP_ID(s, x, suite));                                      \
	}                                                                                 \
	struct crp_unused_semicolon

#define Test(s, n, ...)                                                                   \
	static void CRP_ID(s, n, fn)(void);                                               \
	static struct crp_test CRP_ID(s, n, test) = {                                     \
		#s, #n, __FILE__, CRP_ID(s, n, fn), NULL, NULL, {0, __VA_ARGS__}, NULL};  \
	__attribute__((constructor)) static void CRP_ID(s, n, reg)(void)                  \
	{                                                                                 \
		crp_add_test(&CRP_ID(s, n, test));                                        \
	}                                                                                 \
	static void CRP_ID(s, n, fn)(void)

#define ParameterizedTestParameters(s, n)                                                 \
	static struct criterion_test_params CRP_ID(s, n, params)(void)

#define ParameterizedTest(decl, s, n, ...)                                                \
	static struct criterion_test_params CRP_ID(s, n, params)(void);                   \
	static void CRP_ID(s, n, pfn)(decl);                                              \
	static void CRP_ID(s, n, thunk)(void *p) { CRP_ID(s, n, pfn)(p); }                \
	static struct crp_test CRP_ID(s, n, test) = {                                     \
		#s,   #n, __FILE__, NULL, CRP_ID(s, n, thunk), CRP_ID(s, n, params),       \
		{0, __VA_ARGS__}, NULL};                                                   \
	__attribute__((constructor)) static void CRP_ID(s, n, reg)(void)                  \
	{                                                                                 \
		crp_add_test(&CRP_ID(s, n, test));                                        \
	}                                                                                 \
	static void CRP_ID(s, n, pfn)(decl)

/* (A cleanup function, Criterion's optional fourth argument, is not needed:
 * each parameter's test ends with its process.) */
#define cr_make_param_array(Type, Arr, Len, ...)                                          \
	((struct criterion_test_params){                                                  \
		.size = sizeof(Type), .params = (void *)(Arr), .length = (size_t)(Len)})

/* ---- outcomes (in the test's child process) ------------------------------ */

__attribute__((format(printf, 4, 5))) static inline void
crp_report(const char *tag, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "[%s] %s:%d: ", tag, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

__attribute__((noreturn)) static inline void crp_abort_test(void)
{
	fflush(NULL);
	_exit(1); /* from any thread: the whole child goes */
}

/* The optional message of an assertion (a format and its arguments). */
#define crp_msg_(...) "" __VA_ARGS__
__attribute__((format(printf, 3, 4))) static inline void crp_note(const char *file, int line,
								   const char *fmt, ...)
{
	va_list ap;
	if (!fmt[0])
		return;
	fprintf(stderr, "[----] %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static inline void crp_failed(int fatal)
{
	if (fatal)
		crp_abort_test();
	crp_expect_failures++;
}

#define crp_fail_(fatal, what, ...)                                                       \
	do {                                                                              \
		crp_report("FAIL", __FILE__, __LINE__, "%s", what);                       \
		crp_note(__FILE__, __LINE__, crp_msg_(__VA_ARGS__));                      \
		crp_failed(fatal);                                                        \
	} while (0)

#define crp_check_(fatal, cond, what, ...)                                                \
	do {                                                                              \
		if (!(cond))                                                              \
			crp_fail_(fatal, what, __VA_ARGS__);                              \
	} while (0)

#define crp_cmp_(fatal, a, op, b, ...)                                                    \
	do {                                                                              \
		__auto_type crp_a = (a);                                                  \
		__auto_type crp_b = (b);                                                  \
		if (!(crp_a op crp_b)) {                                                  \
			crp_report("FAIL", __FILE__, __LINE__,                            \
				   "%s " #op " %s: %lld vs %lld", #a, #b,                 \
				   (long long)crp_a, (long long)crp_b);                    \
			crp_note(__FILE__, __LINE__, crp_msg_(__VA_ARGS__));              \
			crp_failed(fatal);                                                \
		}                                                                         \
	} while (0)

#define cr_assert(cond, ...) crp_check_(1, cond, #cond, __VA_ARGS__)
#define cr_expect(cond, ...) crp_check_(0, cond, #cond, __VA_ARGS__)
#define cr_assert_not(cond, ...) crp_check_(1, !(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_expect_not(cond, ...) crp_check_(0, !(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_assert_null(p, ...) crp_check_(1, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_null(p, ...) crp_check_(0, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) crp_check_(1, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...) crp_check_(0, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...)                                                        \
	crp_check_(1, strcmp((a), (b)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...)                                                        \
	crp_check_(0, strcmp((a), (b)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...)                                                       \
	crp_check_(1, strcmp((a), (b)) != 0, #a " differs from " #b, __VA_ARGS__)
#define cr_assert_eq(a, b, ...) crp_cmp_(1, a, ==, b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) crp_cmp_(1, a, !=, b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) crp_cmp_(1, a, <, b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) crp_cmp_(1, a, <=, b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) crp_cmp_(1, a, >, b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) crp_cmp_(1, a, >=, b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) crp_cmp_(0, a, ==, b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) crp_cmp_(0, a, !=, b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...) crp_cmp_(0, a, <, b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) crp_cmp_(0, a, <=, b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...) crp_cmp_(0, a, >, b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) crp_cmp_(0, a, >=, b, __VA_ARGS__)
#define cr_assert_fail(...) crp_fail_(1, "cr_assert_fail", __VA_ARGS__)
#define cr_expect_fail(...) crp_fail_(0, "cr_expect_fail", __VA_ARGS__)
#define cr_fatal(...) crp_fail_(1, "cr_fatal", __VA_ARGS__)
#define cr_fail(...) crp_fail_(0, "cr_fail", __VA_ARGS__)

#define cr_skip_test(...)                                                                 \
	do {                                                                              \
		crp_report("SKIP", __FILE__, __LINE__, "%s", "skipped");                  \
		crp_note(__FILE__, __LINE__, crp_msg_(__VA_ARGS__));                      \
		fflush(NULL);                                                             \
		_exit(CRP_SKIP_STATUS);                                                   \
	} while (0)

#define cr_log_info(...) crp_report("----", __FILE__, __LINE__, __VA_ARGS__)
#define cr_log_warn(...) crp_report("WARN", __FILE__, __LINE__, __VA_ARGS__)
#define cr_log_error(...) crp_report("ERR ", __FILE__, __LINE__, __VA_ARGS__)
#define cr_log(level, ...) crp_report("----", __FILE__, __LINE__, __VA_ARGS__)

/* ---- the runner ----------------------------------------------------------- */

struct crp_run {
	struct crp_test *t;
	void *param;
	size_t index;
	pid_t pid;
	FILE *out;
	double deadline;
	const char *excluded; /* why it is skipped without running, or NULL */
};

/* URSA_TEST_EXCLUDE: space-separated globs on "suite/name" of tests that
 * this build cannot run (each reported SKIP, with the variable's value). */
static inline const char *crp_excluded(const char *full)
{
	const char *e = getenv("URSA_TEST_EXCLUDE");
	char pat[256];
	while (e && *e) {
		size_t n = strcspn(e, " ");
		if (n > 0 && n < sizeof(pat)) {
			memcpy(pat, e, n);
			pat[n] = 0;
			if (fnmatch(pat, full, 0) == 0)
				return "excluded in this build by URSA_TEST_EXCLUDE (see tests/local.mk)";
		}
		e += n;
		e += strspn(e, " ");
	}
	return NULL;
}

/* URSA_TEST_TIMEOUT_SCALE multiplies every timeout (default 1; 3 under
 * ThreadSanitizer, which runs code 5-15 times slower). */
static inline double crp_timeout_scale(void)
{
	const char *e = getenv("URSA_TEST_TIMEOUT_SCALE");
	if (e && atof(e) > 0)
		return atof(e);
#if defined(__SANITIZE_THREAD__)
	return 3;
#else
	return 1;
#endif
}

static inline double crp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline const struct crp_suite *crp_suite_of(const struct crp_test *t)
{
	for (const struct crp_suite *s = crp_suites; s; s = s->next)
		if (strcmp(s->name, t->suite) == 0)
			return s;
	return NULL;
}

/* The test's field if it set one, else its suite's. */
static inline struct crp_opts crp_opts_of(const struct crp_test *t)
{
	struct crp_opts o = t->opts;
	const struct crp_suite *s = crp_suite_of(t);
	if (s) {
		if (!o.init)
			o.init = s->opts.init;
		if (!o.fini)
			o.fini = s->opts.fini;
		if (o.timeout <= 0)
			o.timeout = s->opts.timeout;
		o.disabled = o.disabled || s->opts.disabled;
	}
	return o;
}

__attribute__((noreturn)) static inline void crp_child(const struct crp_run *r)
{
	struct crp_opts o = crp_opts_of(r->t);
	setvbuf(stdout, NULL, _IONBF, 0); /* nothing buffered is copied into a fork */
	if (o.init)
		o.init();
	if (r->t->fn)
		r->t->fn();
	else
		r->t->pfn(r->param);
	if (o.fini)
		o.fini();
	fflush(NULL);
	exit(crp_expect_failures ? 1 : 0); /* exit, not _exit: sanitizers report at exit */
}

static inline void crp_print_name(FILE *f, const struct crp_run *r)
{
	fprintf(f, "%s::%s", r->t->suite, r->t->name);
	if (r->t->params)
		fprintf(f, "[%zu]", r->index);
}

/* Count of tests that finished, failed, skipped. */
struct crp_stats {
	int ran, failed, skipped;
};

static inline void crp_finish(struct crp_run *r, int st, bool timed_out, bool verbose,
			      struct crp_stats *stats)
{
	const char *tag;
	bool show;
	if (timed_out) {
		tag = "TIMEOUT";
		stats->failed++;
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		tag = "PASS";
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == CRP_SKIP_STATUS) {
		tag = "SKIP";
		stats->skipped++;
	} else {
		tag = WIFSIGNALED(st) ? "CRASH" : "FAIL";
		stats->failed++;
	}
	stats->ran++;
	show = verbose || strcmp(tag, "PASS") != 0;
	fflush(r->out);
	if (show || ftell(r->out) > 0) {
		char buf[4096];
		size_t n;
		rewind(r->out);
		while ((n = fread(buf, 1, sizeof(buf), r->out)) > 0)
			fwrite(buf, 1, n, stdout);
	}
	printf("[%s] ", tag);
	crp_print_name(stdout, r);
	if (WIFSIGNALED(st) && !timed_out)
		printf(": killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != CRP_SKIP_STATUS)
		printf(": exit status %d", WEXITSTATUS(st));
	else if (timed_out)
		printf(": still running after its timeout; killed");
	putchar('\n');
	fflush(stdout);
	fclose(r->out);
	r->out = NULL;
	r->pid = 0;
}

__attribute__((weak)) int main(int argc, char **argv)
{
	double timeout = 0;
	int jobs = 1;
	bool verbose = false, list = false;
	const char *filter = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--timeout=", 10) == 0)
			timeout = atof(a + 10);
		else if (strcmp(a, "--timeout") == 0 && i + 1 < argc)
			timeout = atof(argv[++i]);
		else if (strncmp(a, "-j", 2) == 0 && a[2])
			jobs = atoi(a + 2);
		else if ((strcmp(a, "-j") == 0 || strcmp(a, "--jobs") == 0) && i + 1 < argc)
			jobs = atoi(argv[++i]);
		else if (strncmp(a, "--jobs=", 7) == 0)
			jobs = atoi(a + 7);
		else if (strncmp(a, "--filter=", 9) == 0)
			filter = a + 9;
		else if (strcmp(a, "--filter") == 0 && i + 1 < argc)
			filter = argv[++i];
		else if (strcmp(a, "--verbose") == 0 || strncmp(a, "--verbose=", 10) == 0)
			verbose = true;
		else if (strcmp(a, "--list") == 0 || strcmp(a, "-l") == 0)
			list = true;
		else if (strcmp(a, "--short-filename") == 0 || strcmp(a, "--no-early-exit") == 0)
			;
		else {
			fprintf(stderr, "usage: %s [--timeout N] [-jN] [--filter GLOB] [--verbose] "
					"[--list]\n", argv[0]);
			return 64;
		}
	}
	if (jobs < 1)
		jobs = 1;
	if (jobs > 64)
		jobs = 64;

	/* Every run: one per test, one per parameter. */
	size_t nruns = 0, cap = 16;
	struct crp_run *runs = calloc(cap, sizeof(*runs));
	for (struct crp_test *t = crp_tests; t; t = t->next) {
		char full[512];
		snprintf(full, sizeof(full), "%s/%s", t->suite, t->name);
		if (filter && fnmatch(filter, full, 0) != 0)
			continue;
		if (crp_opts_of(t).disabled)
			continue;
		const char *why = crp_excluded(full);
		struct criterion_test_params p = {0, NULL, 1, NULL};
		if (t->params)
			p = t->params();
		for (size_t i = 0; i < p.length; i++) {
			if (nruns == cap)
				runs = realloc(runs, (cap *= 2) * sizeof(*runs));
			runs[nruns++] = (struct crp_run){t, (char *)p.params + i * p.size, i, 0, NULL, 0, why};
		}
	}
	if (list) {
		for (size_t i = 0; i < nruns; i++) {
			crp_print_name(stdout, &runs[i]);
			putchar('\n');
		}
		return 0;
	}

	struct crp_stats stats = {0, 0, 0};
	size_t next = 0, running = 0;
	double started = crp_now();
	fflush(NULL);
	while (next < nruns || running > 0) {
		while (next < nruns && running < (size_t)jobs) {
			struct crp_run *r = &runs[next++];
			if (r->excluded) {
				printf("[SKIP] ");
				crp_print_name(stdout, r);
				printf(": %s\n", r->excluded);
				fflush(stdout); /* not copied into the next fork */
				stats.ran++;
				stats.skipped++;
				continue;
			}
			double to = crp_opts_of(r->t).timeout;
			if (to <= 0)
				to = timeout > 0 ? timeout : 60;
			to *= crp_timeout_scale();
			r->out = tmpfile();
			if (!r->out) {
				perror("tmpfile");
				return 1;
			}
			r->deadline = crp_now() + to;
			r->pid = fork();
			if (r->pid < 0) {
				perror("fork");
				return 1;
			}
			if (r->pid == 0) {
				dup2(fileno(r->out), STDOUT_FILENO);
				dup2(fileno(r->out), STDERR_FILENO);
				crp_child(r);
			}
			running++;
		}
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid < 0 && errno != EINTR) {
			perror("waitpid");
			return 1;
		}
		if (pid > 0) {
			for (size_t i = 0; i < next; i++)
				if (runs[i].pid == pid) {
					crp_finish(&runs[i], st, false, verbose, &stats);
					running--;
				}
			continue;
		}
		double now = crp_now();
		for (size_t i = 0; i < next; i++)
			if (runs[i].pid > 0 && now > runs[i].deadline) {
				kill(runs[i].pid, SIGKILL);
				waitpid(runs[i].pid, &st, 0);
				crp_finish(&runs[i], st, true, verbose, &stats);
				running--;
			}
		struct timespec nap = {0, 2000000};
		nanosleep(&nap, NULL);
	}
	printf("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Skipped: %d "
	       "(%.1f s, plain-C runner)\n",
	       stats.ran, stats.ran - stats.failed - stats.skipped, stats.failed, stats.skipped,
	       crp_now() - started);
	free(runs);
	if (stats.failed)
		return 1;
	return stats.ran > 0 && stats.skipped == stats.ran ? CRP_SKIP_STATUS : 0;
}

#endif
