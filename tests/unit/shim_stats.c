/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/shim_stats.c — libursa-pthread's counters (URSA_SHIM_STATS=1):
 * the line each process writes to stderr at exit, which the real-client
 * scripts (tests/real/) read to show that a server's calls went through
 * the shim.
 *
 * The process under test is this program run again with
 * URSA_TEST_STATS_CHILD set: the constructor below makes a known set of
 * calls and exits before Criterion's main runs. The shim's own constructor
 * has run by then (a library's constructors run before the program's), so
 * the counters are on when the environment says so.
 */
#include "tests/unit/shim_test.h"

#include <fcntl.h>
#include <semaphore.h>
#include <spawn.h>
#include <stdio.h>

TestSuite(shim_stats, .timeout = 60, .init = shim_t_require);

extern char **environ;

#define LOCKS	    1000
#define TRYLOCKS    3
#define SIGNALS	    5
#define BROADCASTS  2
#define RDLOCKS	    4
#define WRLOCKS	    6
#define POSTS	    9
#define TRYWAITS    8
#define CHILD_LOCKS 7

/* The parent's calls, a fork child's own, then fd 2 closed before exit (as
 * coreutils' programs do: the report goes to the shim's copy of it). */
static void work(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	sem_t s;
	for (int i = 0; i < LOCKS; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	for (int i = 0; i < TRYLOCKS; i++)
		if (pthread_mutex_trylock(&m) == 0)
			pthread_mutex_unlock(&m);
	for (int i = 0; i < SIGNALS; i++)
		pthread_cond_signal(&c);
	for (int i = 0; i < BROADCASTS; i++)
		pthread_cond_broadcast(&c);
	for (int i = 0; i < RDLOCKS; i++) {
		pthread_rwlock_rdlock(&l);
		pthread_rwlock_unlock(&l);
	}
	for (int i = 0; i < WRLOCKS; i++) {
		pthread_rwlock_wrlock(&l);
		pthread_rwlock_unlock(&l);
	}
	sem_init(&s, 0, 0);
	for (int i = 0; i < POSTS; i++)
		sem_post(&s);
	for (int i = 0; i < TRYWAITS; i++)
		sem_trywait(&s);
	pid_t p = fork();
	if (p == 0) {
		for (int i = 0; i < CHILD_LOCKS; i++) {
			pthread_mutex_lock(&m);
			pthread_mutex_unlock(&m);
		}
		exit(0); /* exit, not _exit: the report is an exit-time destructor */
	}
	if (p > 0)
		waitpid(p, NULL, 0);
	close(2);
	exit(0);
}

__attribute__((constructor)) static void stats_child(void)
{
	const char *mode = getenv("URSA_TEST_STATS_CHILD");
	if (!mode)
		return;
	if (strcmp(mode, "work") == 0)
		work();
	exit(0); /* "none": no call at all */
}

/* Run this program as the child in mode with URSA_SHIM_STATS=stats, its
 * stderr into out (NUL-terminated). Returns the child's pid. */
static pid_t run_child(const char *mode, const char *stats, char *out, size_t len)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	char e_mode[64], e_stats[64];
	snprintf(e_mode, sizeof e_mode, "URSA_TEST_STATS_CHILD=%s", mode);
	snprintf(e_stats, sizeof e_stats, "URSA_SHIM_STATS=%s", stats);
	size_t ne = 0;
	while (environ[ne])
		ne++;
	char **env = calloc(ne + 3, sizeof(char *));
	cr_assert_not_null(env);
	size_t k = 0;
	for (size_t i = 0; i < ne; i++)
		if (strncmp(environ[i], "URSA_SHIM_STATS=", 16) != 0)
			env[k++] = environ[i];
	env[k++] = e_mode;
	env[k++] = e_stats;
	int fds[2];
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	pid_t pid;
	char *argv[] = {exe, NULL};
	cr_assert_eq(posix_spawn(&pid, exe, &fa, NULL, argv, env), 0);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	close(fds[1]);
	size_t got = 0;
	ssize_t r;
	while (got < len - 1 && (r = read(fds[0], out + got, len - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = '\0';
	close(fds[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x: %s", st, out);
	return pid;
}

/* The value of " name=" in line (0 when absent), the whole token. */
static unsigned long count_of(const char *line, const char *name)
{
	char key[64];
	snprintf(key, sizeof key, " %s=", name);
	const char *p = strstr(line, key);
	return p ? strtoul(p + strlen(key), NULL, 10) : 0;
}

/* The number of " name=value" tokens in line. */
static int tokens(const char *line)
{
	int n = 0;
	for (const char *p = line; (p = strchr(p, '=')); p++)
		n++;
	return n;
}

Test(shim_stats, each_process_reports_its_own_calls)
{
	char out[4096];
	pid_t pid = run_child("work", "1", out, sizeof out);
	/* Two lines: the fork child's (it exits first) and the parent's. */
	char *lines[3] = {0};
	int nl = 0;
	for (char *save, *ln = strtok_r(out, "\n", &save); ln && nl < 3;
	     ln = strtok_r(NULL, "\n", &save))
		lines[nl++] = ln;
	cr_assert_eq(nl, 2, "expected two report lines, got %d", nl);
	char head[64];
	snprintf(head, sizeof head, "ursa-pthread[%d ", (int)pid);
	const char *parent = NULL, *child = NULL;
	for (int i = 0; i < 2; i++) {
		cr_assert(strncmp(lines[i], "ursa-pthread[", 13) == 0, "line: %s", lines[i]);
		if (strncmp(lines[i], head, strlen(head)) == 0)
			parent = lines[i];
		else
			child = lines[i];
	}
	cr_assert_not_null(parent, "no line from pid %d (fd 2 was closed before exit)", (int)pid);
	cr_assert_not_null(child);
	/* The parent's calls, counted exactly: nothing else in this process
	 * calls the pthread functions before Criterion's main. */
	cr_assert_eq(count_of(parent, "mutex_lock"), LOCKS, "%s", parent);
	cr_assert_eq(count_of(parent, "mutex_trylock"), TRYLOCKS, "%s", parent);
	cr_assert_eq(count_of(parent, "mutex_unlock"), LOCKS + TRYLOCKS, "%s", parent);
	cr_assert_eq(count_of(parent, "cond_signal"), SIGNALS, "%s", parent);
	cr_assert_eq(count_of(parent, "cond_broadcast"), BROADCASTS, "%s", parent);
	cr_assert_eq(count_of(parent, "rwlock_rdlock"), RDLOCKS, "%s", parent);
	cr_assert_eq(count_of(parent, "rwlock_wrlock"), WRLOCKS, "%s", parent);
	cr_assert_eq(count_of(parent, "rwlock_unlock"), RDLOCKS + WRLOCKS, "%s", parent);
	cr_assert_eq(count_of(parent, "sem_post"), POSTS, "%s", parent);
	cr_assert_eq(count_of(parent, "sem_trywait"), TRYWAITS, "%s", parent);
	cr_assert_eq(tokens(parent), 10, "counters of calls not made: %s", parent);
	/* The fork child's from zero: its own calls alone. */
	cr_assert_eq(count_of(child, "mutex_lock"), CHILD_LOCKS, "%s", child);
	cr_assert_eq(count_of(child, "mutex_unlock"), CHILD_LOCKS, "%s", child);
	cr_assert_eq(tokens(child), 2, "the parent's counts leaked into the child: %s", child);
}

Test(shim_stats, nothing_without_calls_or_when_off)
{
	char out[4096];
	run_child("none", "1", out, sizeof out);
	cr_assert_eq(out[0], 0, "a process that made no call reported: %s", out);
	run_child("work", "0", out, sizeof out);
	cr_assert_eq(out[0], 0, "URSA_SHIM_STATS=0 reported: %s", out);
	run_child("work", "", out, sizeof out);
	cr_assert_eq(out[0], 0, "URSA_SHIM_STATS= reported: %s", out);
}
