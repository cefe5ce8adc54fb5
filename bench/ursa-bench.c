/* SPDX-License-Identifier: MIT */
/*
 * bench/ursa-bench.c — ursa against glibc pthreads, nsync and Concurrency
 * Kit, every scenario in one run.
 *
 * This file is the runner: options, the warm-up / repetitions / median
 * loop, the table on stdout (each implementation's value and its ratio to
 * the first implementation, glibc) and the CSV file. The scenarios live in
 * bench_locks.c (+ bench_tmpl.h), bench_wake.c, bench_async.c and
 * bench_shim.c (real programs under LD_PRELOAD of the pthread shim); the
 * adapters in adapters.h. bench/README.md explains the method and figures.
 */
#include "bench/bench.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

enum { S_UNC, S_CON, S_RW, S_PP, S_SPP, S_HO, S_WAKE, S_ASYNC, S_SHIM, S_CONT, S_COUNT };
static struct bench_scenario scen[S_COUNT];

static FILE *csv;
static const char *csv_path;
static bool progress_tty;

/* jemalloc, when linked, exports mallctl; a weak reference tells us. */
extern int mallctl(const char *, void *, size_t *, void *, size_t) __attribute__((weak));

static void usage(FILE *f)
{
	fprintf(f, "usage: ursa-bench [--quick] [--scenario NAME[,NAME...]] [--threads N] [--pin]\n"
		   "                  [--reps N] [--duration SECONDS] [--csv FILE]\n"
		   "                  [--workloads W[,W...]] [--sections CS[,CS...]] [--outside NS]\n"
		   "                  [--work alu|shared] [--help]\n\n"
		   "  --quick          every scenario, short runs, 3 repetitions (under a minute)\n"
		   "  --scenario NAME  run only these scenarios (comma-separated)\n"
		   "  --threads N      top of the thread axis (default: 2 x CPUs)\n"
		   "  --pin            pin thread i to allowed CPU i mod CPUs\n"
		   "  --reps N         repetitions per point; the median is reported (default 5)\n"
		   "  --duration S     length of one timed repetition (default 1, quick 0.1)\n"
		   "  --csv FILE       also write rows scenario,impl,threads,metric,value,unit\n"
		   "  --workloads W    contention: only these of mutex,rw95,rw50,sem,cond\n"
		   "  --sections CS    contention: only these of empty,100ns,1us,yield\n"
		   "  --outside NS     contention: NS ns of busy work outside the lock after every\n"
		   "                   operation (default 0: nothing between the operations)\n"
		   "  --work KIND      contention: the sections' busy work, alu (default: a\n"
		   "                   register loop) or shared (read-modify-writes of 8 cache\n"
		   "                   lines of protected data, which move with the lock)\n"
		   "                   (contention: default threads 1..32, 5 rounds of 0.3 s;\n"
		   "                   quick 3 rounds of 0.05 s; plots beside the --csv file)\n\n"
		   "scenarios:\n");
	for (int i = 0; i < S_COUNT; i++)
		fprintf(f, "  %-20s %s\n", scen[i].name, scen[i].what);
	fprintf(f, "\nWithout --scenario every scenario runs except those marked 'only when named'.\n");
}

static bool selected(const char *list, const char *name)
{
	if (!list)
		return true;
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

static void metric_name(const struct bench_scenario *s, int var, int met, char *buf, size_t len)
{
	const char *v = s->variants[var], *m = s->metrics[met].name;
	if (!*v)
		snprintf(buf, len, "%s", m);
	else if (!*m)
		snprintf(buf, len, "%s", v);
	else
		snprintf(buf, len, "%s:%s", v, m);
}

static void fmt_value(char *buf, size_t len, double v)
{
	double a = v < 0 ? -v : v;
	if (a >= 1000)
		snprintf(buf, len, "%.0f", v);
	else if (a >= 100)
		snprintf(buf, len, "%.1f", v);
	else if (a >= 1)
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, "%.3f", v);
}

#define COLW 18

static void print_header(const struct bench_scenario *s)
{
	printf("\n== %s: %s\n", s->name, s->what);
	printf("%7s  %-22s %-7s", s->axis, "metric", "unit");
	for (int i = 0; i < s->nimpls; i++) {
		char name[32];
		snprintf(name, sizeof(name), "%s%s", s->impls[i].name, s->impls[i].note ? "*" : "");
		printf(" %*s", COLW, name);
	}
	printf("\n");
}

static void print_footer(const struct bench_scenario *s)
{
	int higher = 0;
	for (int m = 0; m < s->nmetrics; m++)
		higher += s->metrics[m].higher_better;
	printf("   (ratio = value / %s; ", s->impls[0].name);
	if (higher == 0 || higher == s->nmetrics) {
		printf("%s is better)\n", higher ? "higher" : "lower");
	} else {
		printf("higher is better for");
		for (int m = 0; m < s->nmetrics; m++)
			if (s->metrics[m].higher_better)
				printf(" %s", s->metrics[m].name);
		printf(", lower for the rest)\n");
	}
	for (int i = 0; i < s->nimpls; i++)
		if (s->impls[i].note)
			printf("   * %s: %s\n", s->impls[i].name, s->impls[i].note);
	if (s->missing)
		printf("   not measured: %s\n", s->missing);
}

static void progress(const struct bench_scenario *s, int point, int var, const char *impl, int rep,
		     int reps)
{
	const char *v = s->variants[var], *sp = *v ? " " : "";
	if (progress_tty)
		fprintf(stderr, "\r\033[K[%s] %s=%d%s%s %s rep %d/%d", s->name, s->axis, point, sp,
			v, impl, rep, reps);
	else if (rep == 0)
		fprintf(stderr, "ursa-bench: [%s] %s=%d%s%s %s\n", s->name, s->axis, point, sp, v,
			impl);
	fflush(stderr);
}

static void progress_clear(void)
{
	if (progress_tty) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
}

static int run_scenario(struct bench_scenario *s)
{
	if (s->run)
		return s->run(s, csv, csv_path);
	if (s->thread_axis) {
		s->npoints = 0;
		for (int t = 1; t < bench_opt.max_threads && s->npoints < BENCH_MAX_POINTS - 1;
		     t *= 2)
			s->points[s->npoints++] = t;
		s->points[s->npoints++] = bench_opt.max_threads;
	}
	print_header(s);
	fflush(stdout);

	for (int p = 0; p < s->npoints; p++) {
		for (int var = 0; var < s->nvariants; var++) {
			double med[BENCH_MAX_IMPLS][BENCH_MAX_METRICS];
			for (int i = 0; i < s->nimpls; i++) {
				const struct bench_impl *im = &s->impls[i];
				struct bench_point pt = {s->points[p], var, true};
				double vals[BENCH_MAX_METRICS];
				double reps[BENCH_MAX_METRICS][64];
				int nrep = bench_opt.reps;

				progress(s, pt.threads, var, im->name, 0, nrep);
				if (im->measure(&pt, vals))
					return -1;
				pt.warmup = false;
				for (int r = 0; r < nrep; r++) {
					progress(s, pt.threads, var, im->name, r + 1, nrep);
					if (im->measure(&pt, vals))
						return -1;
					for (int m = 0; m < s->nmetrics; m++)
						reps[m][r] = vals[m];
				}
				for (int m = 0; m < s->nmetrics; m++)
					med[i][m] = bench_median(reps[m], nrep);
			}
			progress_clear();
			for (int m = 0; m < s->nmetrics; m++) {
				char mname[64];
				metric_name(s, var, m, mname, sizeof(mname));
				printf("%7d  %-22s %-7s", s->points[p], mname, s->metrics[m].unit);
				double base = med[0][m];
				for (int i = 0; i < s->nimpls; i++) {
					char val[32], cell[48];
					fmt_value(val, sizeof(val), med[i][m]);
					if (i == 0)
						snprintf(cell, sizeof(cell), "%s", val);
					else if (base != 0)
						snprintf(cell, sizeof(cell), "%s (%.2fx)", val,
							 med[i][m] / base);
					else
						snprintf(cell, sizeof(cell), "%s (-)", val);
					printf(" %*s", COLW, cell);
					if (csv)
						fprintf(csv, "%s,%s,%d,%s,%.6g,%s\n", s->name,
							s->impls[i].name, s->points[p], mname,
							med[i][m], s->metrics[m].unit);
				}
				printf("\n");
			}
			fflush(stdout);
			if (csv)
				fflush(csv);
		}
	}
	print_footer(s);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"csv", required_argument, NULL, 'c'},
	    {"scenario", required_argument, NULL, 's'},
	    {"threads", required_argument, NULL, 't'},
	    {"pin", no_argument, NULL, 'p'},
	    {"reps", required_argument, NULL, 'r'},
	    {"duration", required_argument, NULL, 'd'},
	    {"workloads", required_argument, NULL, 'W'},
	    {"sections", required_argument, NULL, 'S'},
	    {"outside", required_argument, NULL, 'O'},
	    {"work", required_argument, NULL, 'K'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *only = NULL;
	int reps = 0, threads = 0;
	double duration = 0;

	bench_locks_register(&scen[S_UNC], &scen[S_CON], &scen[S_RW], &scen[S_PP], &scen[S_SPP],
			     &scen[S_HO]);
	bench_wake_register(&scen[S_WAKE]);
	bench_async_register(&scen[S_ASYNC]);
	bench_shim_register(&scen[S_SHIM]);
	bench_contention_register(&scen[S_CONT]);
	if (argc > 1 && !strcmp(argv[1], "--uncontended-child"))
		return bench_uncontended_child(&scen[S_UNC], argc, argv);

	for (int c; (c = getopt_long(argc, argv, "qc:s:t:pr:d:h", opts, NULL)) != -1;) {
		switch (c) {
		case 'q':
			bench_opt.quick = true;
			break;
		case 'c':
			csv_path = optarg;
			break;
		case 's':
			only = optarg;
			break;
		case 't':
			threads = atoi(optarg);
			if (threads < 1) {
				fprintf(stderr, "ursa-bench: --threads wants a positive number\n");
				return 2;
			}
			break;
		case 'p':
			bench_opt.pin = true;
			break;
		case 'r':
			reps = atoi(optarg);
			if (reps < 1 || reps > 64) {
				fprintf(stderr, "ursa-bench: --reps wants 1..64\n");
				return 2;
			}
			break;
		case 'd':
			duration = atof(optarg);
			if (!(duration > 0)) {
				fprintf(stderr, "ursa-bench: --duration wants seconds > 0\n");
				return 2;
			}
			break;
		case 'W':
			bench_opt.cn_workloads = optarg;
			break;
		case 'S':
			bench_opt.cn_sections = optarg;
			break;
		case 'O': {
			char *end;
			bench_opt.cn_outside_ns = strtod(optarg, &end);
			if (end == optarg || *end || !(bench_opt.cn_outside_ns >= 0) ||
			    bench_opt.cn_outside_ns > 1e6) {
				fprintf(stderr, "ursa-bench: --outside wants nanoseconds, 0..1000000\n");
				return 2;
			}
			break;
		}
		case 'K':
			if (!strcmp(optarg, "shared")) {
				bench_opt.cn_work_shared = true;
			} else if (strcmp(optarg, "alu")) {
				fprintf(stderr, "ursa-bench: --work wants alu or shared\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (only) {
		/* Every name in the list must be a scenario. */
		char *copy = strdup(only), *save = NULL;
		for (char *tok = strtok_r(copy, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			bool ok = false;
			for (int i = 0; i < S_COUNT; i++)
				ok |= !strcmp(tok, scen[i].name);
			if (!ok) {
				fprintf(stderr, "ursa-bench: unknown scenario '%s'\n\n", tok);
				usage(stderr);
				free(copy);
				return 2;
			}
		}
		free(copy);
	}

	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		for (int c = 0; c < CPU_SETSIZE && bench_opt.ncpu < 1024; c++)
			if (CPU_ISSET(c, &set))
				bench_opt.cpus[bench_opt.ncpu++] = c;
	}
	if (bench_opt.ncpu <= 0) {
		bench_opt.ncpu = 1;
		bench_opt.cpus[0] = 0;
	}

	bool q = bench_opt.quick;
	bench_opt.max_threads = threads ? threads : 2 * bench_opt.ncpu;
	bench_opt.threads_set = threads > 0;
	bench_opt.reps_set = reps > 0;
	bench_opt.duration_set = duration > 0;
	bench_opt.reps = reps ? reps : (q ? 3 : 5);
	bench_opt.duration_s = duration > 0 ? duration : (q ? 0.1 : 1.0);
	bench_opt.uncontended_ops = q ? 2000000 : 20000000;
	bench_opt.pingpong_rounds = q ? 2000 : 20000;
	bench_opt.handoff_samples = q ? 100 : 500;
	bench_opt.wake_rounds = q ? 5 : 20;
	progress_tty = isatty(STDERR_FILENO);

	if (csv_path) {
		csv = fopen(csv_path, "w");
		if (!csv) {
			fprintf(stderr, "ursa-bench: %s: %s\n", csv_path, strerror(errno));
			return 1;
		}
		fprintf(csv, "scenario,impl,threads,metric,value,unit\n");
	}

	bench_calibrate();
	struct utsname u;
	uname(&u);
	printf("ursa-bench: %s %s, %d CPUs, threads 1..%d, median of %d reps, %.2f s per timed "
	       "run%s%s\n",
	       u.sysname, u.release, bench_opt.ncpu, bench_opt.max_threads, bench_opt.reps,
	       bench_opt.duration_s, bench_opt.pin ? ", pinned" : "", q ? ", quick" : "");
	printf("work loops: %.2f iterations/ns (the fastest calibration timing); %.0f%% of the "
	       "timings over all CPUs and ~0.25 s ran below 0.85 of it%s\n",
	       bench_iters_per_ns, 100 * bench_speed_slow,
	       bench_speed_slow > 0.05 ? " (CPUs change speed: README \"Method\")" : "");
	printf("implementations: glibc pthreads (baseline), ursa%s%s%s; allocator: %s\n",
#ifdef HAVE_NSYNC
	       ", nsync",
#else
	       " (nsync not built)",
#endif
#ifdef HAVE_CK
	       ", Concurrency Kit (ck)",
#else
	       " (Concurrency Kit not built)",
#endif
	       bench_have_absl ? ", absl::Mutex (contention only)" : "",
	       mallctl ? "jemalloc" : "libc malloc");

	int ret = 0;
	for (int i = 0; i < S_COUNT && !ret; i++)
		if (only ? selected(only, scen[i].name) : !scen[i].opt_in)
			ret = run_scenario(&scen[i]);
	progress_clear();
	if (csv && fclose(csv)) {
		fprintf(stderr, "ursa-bench: %s: %s\n", csv_path, strerror(errno));
		ret = -1;
	}
	return ret ? 1 : 0;
}
