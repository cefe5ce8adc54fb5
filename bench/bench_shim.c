/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_shim.c — pthread-shim: real programs with and without
 * LD_PRELOAD=libursa-pthread.so.
 *
 * The other scenarios measure ursa's primitives in loops written for the
 * purpose; this one measures what an unmodified program gets when the shim
 * replaces its pthread mutex, condition variable and semaphore calls. Each
 * repetition starts the program once (posix_spawn, i.e. fork + exec) with
 * stdout on /dev/null, waits for it, and reports the wall time between the
 * two (CLOCK_MONOTONIC): start-up, dynamic loading and all of its threads'
 * work, exactly what `time prog` shows.
 *
 *   glibc      the program as installed (LD_PRELOAD removed from its
 *              environment, whatever ours holds)
 *   ursa-shim  the same command, LD_PRELOAD=libursa-pthread.so
 *
 * Variants: pigz -p 2 compress / decompress, zstd -T2 compress /
 * decompress, on a deterministic text input generated here (8 MiB quick,
 * 64 MiB otherwise) and its compressed forms, made once per run with the
 * plain programs. Outputs are not compared here: tests/real/run.sh checks
 * that they are byte-identical with and without the shim.
 *
 * The shim's own counters (URSA_SHIM_STATS=1) are switched on in the
 * warm-up run only (they cost an atomic add per call), and the table's note
 * says how many pthread_mutex_lock calls the shim handled for each program:
 * a program that never reached the shim would otherwise show a ratio of
 * 1.00 that means nothing.
 */
#include "bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef URSA_BENCH_SHIM
#define URSA_BENCH_SHIM "" /* bench/local.mk passes the build's libursa-pthread.so */
#endif

#define SH_THREADS  2 /* every command below runs 2 worker threads */
#define SH_QUICK_MB 8
#define SH_FULL_MB  64

enum sh_prog { P_PIGZ, P_ZSTD, P_COUNT };
enum sh_input { IN_RAW, IN_GZ, IN_ZST, IN_COUNT };

static const char *const prog_names[P_COUNT] = {"pigz", "zstd"};
static const char *const input_names[IN_COUNT] = {"input", "input.gz", "input.zst"};

struct sh_cmd {
	const char *variant;
	enum sh_prog prog;
	enum sh_input input; /* the file named last on the command line */
	const char *args[6]; /* between the program and the input */
};

/* The same commands as tests/real/run.sh. */
static const struct sh_cmd cmds[] = {
    {"pigz-c", P_PIGZ, IN_RAW, {"-n", "-p", "2", "-c"}},
    {"pigz-d", P_PIGZ, IN_GZ, {"-d", "-p", "2", "-c"}},
    {"zstd-c", P_ZSTD, IN_RAW, {"-q", "-T2", "-c"}},
    {"zstd-d", P_ZSTD, IN_ZST, {"-q", "-T2", "-d", "-c"}},
};
#define SH_CMDS ((int)(sizeof(cmds) / sizeof(cmds[0])))
/* The compressing command whose output is each compressed input. */
static const int maker[IN_COUNT] = {-1, 0, 2};

static struct {
	char prog[P_COUNT][PATH_MAX]; /* "" when not installed */
	char shim[PATH_MAX];
	int cmd_of_variant[BENCH_MAX_VARIANTS];
	char **env_plain, **env_shim, **env_stats;
	char dir[PATH_MAX]; /* the temporary directory, "" until made */
	char missing[PATH_MAX + 1024];
	char note[PATH_MAX + 1024];
	size_t note_len;
} sh;

/* ------------------------------------------------------------- set-up */

static void append(char *buf, size_t size, const char *sep, const char *text)
{
	size_t n = strlen(buf);
	snprintf(buf + n, size - n, "%s%s", n ? sep : "", text);
}

/* The program's path in $PATH, as execvp would find it. */
static bool find_prog(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *e = strchr(path, ':');
		size_t len = e ? (size_t)(e - path) : strlen(path);
		snprintf(out, size, "%.*s/%s", (int)len, len ? path : ".", name);
		struct stat st;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return true;
		if (!e)
			break;
		path = e + 1;
	}
	out[0] = '\0';
	return false;
}

/* Our environment without LD_PRELOAD and URSA_SHIM_STATS, plus extra
 * (NULL-terminated) entries. */
static char **make_env(const char *const *extra)
{
	extern char **environ;
	size_t n = 0, k = 0, x = 0;
	while (environ[n])
		n++;
	while (extra[x])
		x++;
	char **env = calloc(n + x + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) &&
		    strncmp(environ[i], "URSA_SHIM_STATS=", 16))
			env[k++] = environ[i];
	for (size_t i = 0; i < x; i++)
		env[k++] = (char *)extra[i];
	return env;
}

/*
 * Start argv[0] with stdin from /dev/null, stdout to out and stderr to err
 * (inherited when NULL), wait for it, and give the wall time in *secs.
 * Returns 0, the exit status (> 0) or 128 + the signal that ended it, or
 * -errno when it could not be started.
 */
static int sh_spawn(char *const argv[], char *const envp[], const char *out, const char *err,
		    double *secs)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int r, status;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out, O_WRONLY | O_CREAT | O_TRUNC,
					 0600);
	if (err)
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err,
						 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	uint64_t t0 = bench_now_ns();
	r = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (r)
		return -r;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	*secs = (double)(bench_now_ns() - t0) / 1e9;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void sh_cleanup(void)
{
	char path[PATH_MAX + 32];
	if (!sh.dir[0])
		return;
	for (int i = 0; i < IN_COUNT; i++) {
		snprintf(path, sizeof(path), "%s/%s", sh.dir, input_names[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/shim-stats", sh.dir);
	unlink(path);
	rmdir(sh.dir);
	sh.dir[0] = '\0';
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * size bytes of text, the same on every machine: lines of 3..14 words drawn
 * from a seeded vocabulary of 20 000 words, then a 30-bit number, about as
 * compressible as a log file (gzip ~3:1), like tests/real/gen.py.
 */
static int gen_input(const char *path, size_t size)
{
	enum { VOCAB = 20000, WORD_MAX = 10 };
	static char vocab[VOCAB][WORD_MAX + 1];
	uint64_t seed = 20240601;
	int ret = 0;

	for (int i = 0; i < VOCAB; i++) {
		int len = 2 + (int)(splitmix64(&seed) % (WORD_MAX - 1));
		for (int j = 0; j < len; j++)
			vocab[i][j] = (char)('a' + splitmix64(&seed) % 26);
		vocab[i][len] = '\0';
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return bench_fail("pthread-shim: create input", errno);
	size_t cap = 1u << 20, done = 0;
	char *buf = malloc(cap + 256);
	if (!buf) {
		close(fd);
		return bench_fail("malloc", ENOMEM);
	}
	while (done < size && !ret) {
		size_t n = 0;
		while (n < cap) { /* a line is < 256 bytes: 14 * 11 + 12 */
			int words = 3 + (int)(splitmix64(&seed) % 12);
			for (int w = 0; w < words; w++) {
				const char *v = vocab[splitmix64(&seed) % VOCAB];
				size_t l = strlen(v);
				memcpy(buf + n, v, l);
				n += l;
				buf[n++] = ' ';
			}
			n += (size_t)sprintf(buf + n, "%u\n",
					     (unsigned)(splitmix64(&seed) & ((1u << 30) - 1)));
		}
		if (n > size - done)
			n = size - done;
		for (size_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, n - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				ret = bench_fail("pthread-shim: write input", w < 0 ? errno : EIO);
				break;
			}
			off += (size_t)w;
		}
		done += n;
	}
	free(buf);
	if (close(fd) && !ret)
		ret = bench_fail("pthread-shim: write input", errno);
	return ret;
}

static void input_path(enum sh_input in, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", sh.dir, input_names[in]);
}

/* argv for cmds[c]: program, its arguments, the input file. */
static void make_argv(int c, char *argv[8], char *in_path, size_t size)
{
	const struct sh_cmd *cmd = &cmds[c];
	int n = 0;
	input_path(cmd->input, in_path, size);
	argv[n++] = sh.prog[cmd->prog];
	for (int i = 0; cmd->args[i]; i++)
		argv[n++] = (char *)cmd->args[i];
	argv[n++] = in_path;
	argv[n] = NULL;
}

static int report_exit(const char *variant, const char *impl, int r)
{
	if (r < 0)
		return bench_fail("pthread-shim: posix_spawn", r);
	fprintf(stderr, "\nursa-bench: pthread-shim: %s (%s) %s %d\n", variant, impl,
		r > 128 ? "was killed by signal" : "exited with status", r > 128 ? r - 128 : r);
	return -1;
}

/* Once per run, at the first measurement (--quick is known by then): the
 * temporary directory, the input, and its compressed forms. */
static int sh_prepare(void)
{
	static bool done;
	char path[PATH_MAX + 32];
	if (done)
		return 0;
	done = true;

	const char *tmp = getenv("TMPDIR");
	snprintf(sh.dir, sizeof(sh.dir), "%s/ursa-bench-shim.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(sh.dir)) {
		int e = errno;
		sh.dir[0] = '\0';
		return bench_fail("pthread-shim: mkdtemp", e);
	}
	atexit(sh_cleanup);

	input_path(IN_RAW, path, sizeof(path));
	size_t mb = bench_opt.quick ? SH_QUICK_MB : SH_FULL_MB;
	if (gen_input(path, mb << 20))
		return -1;
	for (int in = IN_GZ; in < IN_COUNT; in++) {
		int c = maker[in];
		char *argv[8], in_path[PATH_MAX + 32];
		double secs;
		if (!sh.prog[cmds[c].prog][0])
			continue;
		make_argv(c, argv, in_path, sizeof(in_path));
		input_path((enum sh_input)in, path, sizeof(path));
		int r = sh_spawn(argv, sh.env_plain, path, NULL, &secs);
		if (r)
			return report_exit(cmds[c].variant, "making the compressed input", r);
	}
	return 0;
}

/* "ursa-pthread[pid prog]: ... name=N ...": N, or 0 when absent. */
static unsigned long stat_count(const char *report, const char *name)
{
	size_t len = strlen(name);
	for (const char *p = report; (p = strstr(p, name)); p += len)
		if ((p == report || p[-1] == ' ') && p[len] == '=')
			return strtoul(p + len + 1, NULL, 10);
	return 0;
}

/* After the shim's warm-up run: what its counters say, into the note. */
static void note_stats(int c, const char *stats_path)
{
	char buf[4096] = "", line[160];
	const char *report = NULL;
	FILE *f = fopen(stats_path, "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
		report = strstr(buf, "ursa-pthread[");
	}
	unsigned long locks = report ? stat_count(report, "mutex_lock") : 0;
	unsigned long waits = report ? stat_count(report, "cond_wait") : 0;
	if (locks || waits)
		snprintf(line, sizeof(line), "%s %lu mutex_lock, %lu cond_wait", cmds[c].variant,
			 locks, waits);
	else
		snprintf(line, sizeof(line), "%s NONE (the program never reached the shim)",
			 cmds[c].variant);
	size_t n = strlen(sh.note);
	snprintf(sh.note + n, sizeof(sh.note) - n, "%s%s", n > sh.note_len ? "; " : "", line);
}

static int sh_measure(bool shim, const struct bench_point *pt, double *v)
{
	int c = sh.cmd_of_variant[pt->variant];
	char *argv[8], in_path[PATH_MAX + 32], stats_path[PATH_MAX + 32];
	bool stats = shim && pt->warmup;

	if (sh_prepare())
		return -1;
	make_argv(c, argv, in_path, sizeof(in_path));
	snprintf(stats_path, sizeof(stats_path), "%s/shim-stats", sh.dir);
	char **env = !shim ? sh.env_plain : stats ? sh.env_stats : sh.env_shim;
	int r = sh_spawn(argv, env, "/dev/null", stats ? stats_path : NULL, &v[0]);
	if (r) {
		if (stats) { /* its error went to the file */
			FILE *f = fopen(stats_path, "r");
			char buf[512];
			size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
			buf[n] = '\0';
			if (f)
				fclose(f);
			fprintf(stderr, "\n%s", buf);
		}
		return report_exit(cmds[c].variant, shim ? "ursa-shim" : "glibc", r);
	}
	if (stats)
		note_stats(c, stats_path);
	return 0;
}

static int sh_glibc(const struct bench_point *pt, double *v)
{
	return sh_measure(false, pt, v);
}

static int sh_shim(const struct bench_point *pt, double *v)
{
	return sh_measure(true, pt, v);
}

/* ------------------------------------------------------------- register */

void bench_shim_register(struct bench_scenario *s)
{
	*s = (struct bench_scenario){
	    .name = "pthread-shim",
	    .what = "pigz -p 2 and zstd -T2, plainly vs LD_PRELOAD=libursa-pthread.so (wall time)",
	    .axis = "threads",
	    .npoints = 1,
	    .points = {SH_THREADS},
	    .nvariants = 0,
	    .nmetrics = 1,
	    .metrics = {{"wall", "s", false}},
	};
	bench_add_impl(s, "glibc", NULL, sh_glibc);

	const char *shim = getenv("URSA_BENCH_SHIM");
	snprintf(sh.shim, sizeof(sh.shim), "%s", shim && *shim ? shim : URSA_BENCH_SHIM);
	if (!sh.shim[0] || access(sh.shim, R_OK)) {
		snprintf(sh.missing, sizeof(sh.missing),
			 "no libursa-pthread.so at '%s' (build lib/shim/libursa-pthread.la, "
			 "or set URSA_BENCH_SHIM)",
			 sh.shim);
		s->missing = sh.missing;
		return;
	}
	static char preload[PATH_MAX + 16];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", sh.shim);
	sh.env_plain = make_env((const char *const[]){NULL});
	sh.env_shim = make_env((const char *const[]){preload, NULL});
	sh.env_stats = make_env((const char *const[]){preload, "URSA_SHIM_STATS=1", NULL});
	if (!sh.env_plain || !sh.env_shim || !sh.env_stats) {
		s->missing = "out of memory";
		return;
	}

	bool usable[P_COUNT];
	for (int p = 0; p < P_COUNT; p++) {
		char why[PATH_MAX + 200];
		usable[p] = false;
		if (!find_prog(prog_names[p], sh.prog[p], sizeof(sh.prog[p]))) {
			snprintf(why, sizeof(why), "%s: not installed (apt-get install %s)",
				 prog_names[p], prog_names[p]);
			append(sh.missing, sizeof(sh.missing), "; ", why);
			continue;
		}
		/* Does the shim load into it? (A sanitizer build's shim does
		 * not: its runtime must come first in the program.) */
		char *argv[] = {sh.prog[p], "--version", NULL};
		double secs;
		if (sh_spawn(argv, sh.env_shim, "/dev/null", "/dev/null", &secs)) {
			snprintf(why, sizeof(why),
				 "%s: `LD_PRELOAD=%s %s --version` fails (a sanitizer build?)",
				 prog_names[p], sh.shim, prog_names[p]);
			append(sh.missing, sizeof(sh.missing), "; ", why);
			sh.prog[p][0] = '\0';
			continue;
		}
		usable[p] = true;
	}
	for (int c = 0; c < SH_CMDS && s->nvariants < BENCH_MAX_VARIANTS; c++) {
		if (!usable[cmds[c].prog])
			continue;
		sh.cmd_of_variant[s->nvariants] = c;
		s->variants[s->nvariants++] = cmds[c].variant;
	}
	if (s->nvariants) {
		snprintf(sh.note, sizeof(sh.note),
			 "LD_PRELOAD=%s; calls the shim handled in the warm-up run: ", sh.shim);
		sh.note_len = strlen(sh.note);
		bench_add_impl(s, "ursa-shim", sh.note, sh_shim);
	}
	if (sh.missing[0])
		s->missing = sh.missing;
}
