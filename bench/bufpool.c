/* SPDX-License-Identifier: MIT */
/*
 * bench/bufpool.c — ursa-bufpool, the buffer-pool demo: options, the data
 * file, running the engines, the consistency check, the report (table, CSV,
 * gnuplot PNG). See bench/BUFPOOL.md.
 *
 * Per engine: a fresh (cold) pool over the same file, a warm-up, a measured
 * window, then stop: every transaction in flight commits, the workers are
 * joined, the pool is flushed, and the whole file is read back and checked:
 * every page's checksum, and the sum of the page counters against the
 * number of write transactions the engine committed. A fast wrong answer
 * fails that check and the program exits 1.
 */
#include "bench/bufpool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The gnuplot configure found (URSA_GNUPLOT, config.h; plain "gnuplot" from
 * PATH when it found none), quoted for popen's shell. */
#ifndef URSA_GNUPLOT
#define URSA_GNUPLOT "gnuplot"
#endif
#define GNUPLOT_CMD "'" URSA_GNUPLOT "' 2>&1"

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

static const char *const engine_names[BP_NENGINES] = {"threads", "threads-ursa", "ring",
							"threads-aio", "threads-aio-timed"};
static int (*const engine_fns[BP_NENGINES])(struct bp_run *) = {
    bp_engine_threads_pthread, bp_engine_threads_ursa,	   bp_engine_ring,
    bp_engine_threads_aio,     bp_engine_threads_aio_timed,
};
/* Run when no --engine is given: the main comparison. */
static const bool engine_default[BP_NENGINES] = {true, true, true, false, false};

/* ---- options ------------------------------------------------------------ */

struct opts {
	bool engine[BP_NENGINES];
	bool any_engine;
	double seconds;
	double warmup;
	int rounds;
	int workers, loops, inflight, txn_pages, write_pct, hot_pages;
	double theta;
	const char *preset;
	long pool_pages;
	long file_mb;
	const char *csv;
	const char *plot;
	const char *dir;
	bool quick, buffered, recreate, unsafe, sweep, no_prefetch, procs, no_fixed,
	    eager_submit;
	/* which options the command line gave (a preset fills the others) */
	bool set_workers, set_inflight, set_write_pct, set_theta, set_hot, set_txn_pages;
};

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: ursa-bufpool [options]\n"
	       "The buffer-pool demo: the same transactions over a file of 8 KiB pages, through\n"
	       "a pool smaller than the file, run by three engines; then a consistency check.\n"
	       "  --engine NAME     threads | threads-ursa | ring | threads-aio |\n"
	       "                    threads-aio-timed | all (repeatable; default the first\n"
	       "                    three). threads-aio: worker threads reading through their\n"
	       "                    own io_uring with blocking locks (PostgreSQL 18's\n"
	       "                    io_method=io_uring): it deadlocks, a watchdog reports it\n"
	       "                    and stops the run; -timed: the workaround (drain own\n"
	       "                    completions before every wait, timed waits)\n"
	       "  --seconds N       measured seconds per engine (default 15; --quick: 3)\n"
	       "  --rounds N        split them in N rounds, engines interleaved (default 3)\n"
	       "  --warmup N        unmeasured seconds before each round (default 0.5)\n"
	       "  --quick           a few seconds per engine\n"
	       "  --inflight N      transactions in flight, the same for every engine: threads\n"
	       "                    engines run N threads, ring spreads N over its loops\n"
	       "                    (default 8 x CPUs)\n"
	       "  --sweep           run N = CPUs, 2 x CPUs, ... 64 x CPUs in flight; the plot\n"
	       "                    shows throughput against p99 latency, a curve per engine\n"
	       "  --preset NAME     default | contended: every transaction also updates one of\n"
	       "                    8 hot pages, holding its lock to commit (pgbench tpcb's\n"
	       "                    branch row), so page locks are really waited for\n"
	       "  --hot-pages N     that, with N hot pages (0: none; contended: 8)\n"
	       "  --no-prefetch     engines with asynchronous reads (ring, threads-aio*) read\n"
	       "                    each page when they reach it, instead of starting the\n"
	       "                    reads of all a transaction's pages at its start\n"
	       "  --procs           workers (threads engines) and loops (ring) are forked\n"
	       "                    processes over a MAP_SHARED pool with process-shared\n"
	       "                    locks and wait queues (PostgreSQL's model)\n"
	       "  --no-fixed        ring: plain reads and writes instead of fixed-buffer ones\n"
	       "                    on the pool's frames registered with each loop's ring\n"
	       "  --eager-submit    ring: submit the SQEs queued by every round of ready\n"
	       "                    transactions at once, instead of holding them for one\n"
	       "                    more round while transactions are still ready\n"
	       "  --workers N       threads engines only: N threads (unequal concurrency)\n"
	       "  --loops N         ring: event loops (default one per two CPUs, at least\n"
	       "                    one: bench/BUFPOOL.md says why)\n"
	       "  --file-mb N       data file size (default 64)\n"
	       "  --pool-pages N    pool buffers (default a quarter of the file's pages)\n"
	       "  --txn-pages N     pages per transaction besides the hot one (default 4)\n"
	       "  --write-pct N     %% of transactions that modify a page (default 20)\n"
	       "  --theta X         zipf skew of the page choice (default 0.9)\n"
	       "  --dir DIR         where the data file lives (default bench/out, else $TMPDIR)\n"
	       "  --buffered        page-cache I/O instead of O_DIRECT\n"
	       "  --recreate        rewrite the data file first\n"
	       "  --csv FILE        write rows scenario,impl,threads,metric,value,unit\n"
	       "  --plot FILE       PNG of throughput and p99 (default: the CSV's name, .png)\n"
	       "  --unsafe-writes   self-test of the checker: writers take the page lock SHARED,\n"
	       "                    so updates are lost and pages torn; the check must fail\n");
}

static long parse_long(const char *s, const char *what, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		bp_die("ursa-bufpool: %s: expected an integer in [%ld, %ld], got '%s'\n", what, lo,
		       hi, s);
	return v;
}

static double parse_double(const char *s, const char *what, double lo, double hi)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !(v >= lo && v <= hi))
		bp_die("ursa-bufpool: %s: expected a number in [%g, %g], got '%s'\n", what, lo, hi,
		       s);
	return v;
}

static int ncpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

static void parse_opts(struct opts *o, int argc, char **argv)
{
	enum {
		O_ENGINE = 256,
		O_SECONDS,
		O_WARMUP,
		O_QUICK,
		O_WORKERS,
		O_LOOPS,
		O_INFLIGHT,
		O_FILE_MB,
		O_POOL,
		O_TXN_PAGES,
		O_WRITE_PCT,
		O_THETA,
		O_DIR,
		O_BUFFERED,
		O_RECREATE,
		O_CSV,
		O_PLOT,
		O_UNSAFE,
		O_HELP,
		O_ROUNDS,
		O_SWEEP,
		O_PRESET,
		O_HOT,
		O_NO_PREFETCH,
		O_PROCS,
		O_NO_FIXED,
		O_EAGER_SUBMIT
	};
	static const struct option lo[] = {
	    {"engine", required_argument, 0, O_ENGINE},
	    {"seconds", required_argument, 0, O_SECONDS},
	    {"warmup", required_argument, 0, O_WARMUP},
	    {"quick", no_argument, 0, O_QUICK},
	    {"workers", required_argument, 0, O_WORKERS},
	    {"loops", required_argument, 0, O_LOOPS},
	    {"inflight", required_argument, 0, O_INFLIGHT},
	    {"file-mb", required_argument, 0, O_FILE_MB},
	    {"pool-pages", required_argument, 0, O_POOL},
	    {"txn-pages", required_argument, 0, O_TXN_PAGES},
	    {"write-pct", required_argument, 0, O_WRITE_PCT},
	    {"theta", required_argument, 0, O_THETA},
	    {"dir", required_argument, 0, O_DIR},
	    {"buffered", no_argument, 0, O_BUFFERED},
	    {"recreate", no_argument, 0, O_RECREATE},
	    {"csv", required_argument, 0, O_CSV},
	    {"plot", required_argument, 0, O_PLOT},
	    {"unsafe-writes", no_argument, 0, O_UNSAFE},
	    {"help", no_argument, 0, O_HELP},
	    {"rounds", required_argument, 0, O_ROUNDS},
	    {"sweep", no_argument, 0, O_SWEEP},
	    {"preset", required_argument, 0, O_PRESET},
	    {"hot-pages", required_argument, 0, O_HOT},
	    {"no-prefetch", no_argument, 0, O_NO_PREFETCH},
	    {"procs", no_argument, 0, O_PROCS},
	    {"no-fixed", no_argument, 0, O_NO_FIXED},
	    {"eager-submit", no_argument, 0, O_EAGER_SUBMIT},
	    {0, 0, 0, 0},
	};
	int cpus = ncpus();
	*o = (struct opts){.seconds = -1,
			   .warmup = -1,
			   .rounds = -1,
			   .workers = 8 * cpus,
			   /* One loop per two CPUs: spreading the transactions
			    * over more loops costs more than the loops gain on
			    * this 2-vCPU machine (bench/BUFPOOL.md, "How many
			    * loops"). */
			   .loops = (cpus + 1) / 2,
			   .inflight = 8 * cpus,
			   .preset = "default",
			   .txn_pages = 4,
			   .write_pct = 20,
			   .theta = 0.9,
			   .pool_pages = -1,
			   .file_mb = 64};
	for (int c; (c = getopt_long(argc, argv, "h", lo, NULL)) != -1;) {
		switch (c) {
		case O_ENGINE: {
			bool found = false;
			for (int e = 0; e < BP_NENGINES; e++)
				if (!strcmp(optarg, engine_names[e]) || !strcmp(optarg, "all")) {
					o->engine[e] = true;
					found = true;
				}
			if (!found)
				bp_die("ursa-bufpool: unknown engine '%s' (threads, "
				       "threads-ursa, ring, threads-aio, threads-aio-timed, "
				       "all)\n",
				       optarg);
			o->any_engine = true;
			break;
		}
		case O_SECONDS:
			o->seconds = parse_double(optarg, "--seconds", 0.1, 86400);
			break;
		case O_ROUNDS:
			o->rounds = (int)parse_long(optarg, "--rounds", 1, 100);
			break;
		case O_WARMUP:
			o->warmup = parse_double(optarg, "--warmup", 0, 3600);
			break;
		case O_QUICK:
			o->quick = true;
			break;
		case O_WORKERS:
			o->workers = (int)parse_long(optarg, "--workers", 1, 4096);
			o->set_workers = true;
			break;
		case O_LOOPS:
			o->loops = (int)parse_long(optarg, "--loops", 1, 1024);
			break;
		case O_INFLIGHT:
			o->inflight = (int)parse_long(optarg, "--inflight", 1, 4096);
			o->set_inflight = true;
			break;
		case O_SWEEP:
			o->sweep = true;
			break;
		case O_NO_PREFETCH:
			o->no_prefetch = true;
			break;
		case O_PROCS:
			o->procs = true;
			break;
		case O_NO_FIXED:
			o->no_fixed = true;
			break;
		case O_EAGER_SUBMIT:
			o->eager_submit = true;
			break;
		case O_PRESET:
			if (strcmp(optarg, "default") && strcmp(optarg, "contended"))
				bp_die("ursa-bufpool: unknown preset '%s' (default, contended)\n",
				       optarg);
			o->preset = optarg;
			break;
		case O_HOT:
			o->hot_pages = (int)parse_long(optarg, "--hot-pages", 0, 1 << 20);
			o->set_hot = true;
			break;
		case O_FILE_MB:
			o->file_mb = parse_long(optarg, "--file-mb", 1, 1L << 20);
			break;
		case O_POOL:
			o->pool_pages = parse_long(optarg, "--pool-pages", 16, 1L << 26);
			break;
		case O_TXN_PAGES:
			o->txn_pages = (int)parse_long(optarg, "--txn-pages", 1, 1024);
			o->set_txn_pages = true;
			break;
		case O_WRITE_PCT:
			o->write_pct = (int)parse_long(optarg, "--write-pct", 0, 100);
			o->set_write_pct = true;
			break;
		case O_THETA:
			o->theta = parse_double(optarg, "--theta", 0.01, 0.999);
			o->set_theta = true;
			break;
		case O_DIR:
			o->dir = optarg;
			break;
		case O_BUFFERED:
			o->buffered = true;
			break;
		case O_RECREATE:
			o->recreate = true;
			break;
		case O_CSV:
			o->csv = optarg;
			break;
		case O_PLOT:
			o->plot = optarg;
			break;
		case O_UNSAFE:
			o->unsafe = true;
			break;
		case O_HELP:
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}
	if (!o->any_engine)
		for (int e = 0; e < BP_NENGINES; e++)
			o->engine[e] = engine_default[e];
	/* contended: pgbench tpcb's shape. Every transaction updates one of a
	 * handful of hot pages (the branch rows), holding its lock until it
	 * commits, besides its ordinary accesses. */
	if (!strcmp(o->preset, "contended") && !o->set_hot)
		o->hot_pages = 8;
	if (!o->set_workers)
		o->workers = o->inflight;
	if (o->rounds < 0)
		o->rounds = o->sweep ? 1 : 3;
	if (o->seconds < 0)
		o->seconds = o->sweep ? (o->quick ? 1 : 2) : o->quick ? 3 : 15;
	if (o->warmup < 0)
		o->warmup = o->quick ? 0.3 : 0.5;
}

/* ---- the data file --------------------------------------------------------- */

static char *data_path(const struct opts *o)
{
	const char *dir = o->dir;
	struct stat st;
	if (!dir) {
		if (stat("bench", &st) == 0 && S_ISDIR(st.st_mode))
			dir = "bench/out";
		else if (!(dir = getenv("TMPDIR")) || !*dir)
			dir = "/tmp";
	}
	if (mkdir(dir, 0777) && errno != EEXIST)
		bp_die("ursa-bufpool: mkdir %s: %s\n", dir, strerror(errno));
	char *path;
	if (asprintf(&path, "%s/bufpool-%ldMiB.dat", dir, o->file_mb) < 0)
		bp_die("ursa-bufpool: out of memory\n");
	return path;
}

/* Write the file's pages, each with counter 0 and a valid checksum. */
static void create_file(const char *path, uint64_t npages)
{
	fprintf(stderr, "ursa-bufpool: creating %s (%llu pages)...\n", path,
		(unsigned long long)npages);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		bp_die("ursa-bufpool: create %s: %s\n", path, strerror(errno));
	enum { CHUNK = 128 };
	unsigned char *buf = bp_alloc(4096, CHUNK * BP_PAGE_SIZE);
	for (uint64_t p = 0; p < npages; p += CHUNK) {
		uint64_t n = npages - p < CHUNK ? npages - p : CHUNK;
		for (uint64_t i = 0; i < n; i++)
			bp_page_init(buf + i * BP_PAGE_SIZE, p + i);
		size_t len = n * BP_PAGE_SIZE;
		if (pwrite(fd, buf, len, (off_t)(p * BP_PAGE_SIZE)) != (ssize_t)len)
			bp_die("ursa-bufpool: write %s: %s\n", path, strerror(errno));
	}
	if (fsync(fd))
		bp_die("ursa-bufpool: fsync %s: %s\n", path, strerror(errno));
	close(fd);
	free(buf);
}

/* Open the data file for the run, creating it if it is missing or of
 * another size. O_DIRECT unless buffered (or the file system refuses it). */
static int open_file(const struct opts *o, const char *path, uint64_t npages, bool *direct)
{
	struct stat st;
	if (o->recreate || stat(path, &st) || (uint64_t)st.st_size != npages * BP_PAGE_SIZE)
		create_file(path, npages);
	int fd = -1;
	*direct = !o->buffered;
	if (*direct) {
		fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
		if (fd < 0 && errno == EINVAL) {
			fprintf(stderr,
				"ursa-bufpool: %s: the file system refuses O_DIRECT; "
				"using the page cache\n",
				path);
			*direct = false;
		}
	}
	if (fd < 0 && !*direct)
		fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		bp_die("ursa-bufpool: open %s: %s\n", path, strerror(errno));
	return fd;
}

/* Read the whole file back: count pages that fail verification, sum the
 * page counters. */
static uint64_t scan_file(const struct bp_config *c, uint64_t *sum)
{
	enum { CHUNK = 128 };
	unsigned char *buf = bp_alloc(4096, CHUNK * BP_PAGE_SIZE);
	uint64_t bad = 0;
	*sum = 0;
	for (uint64_t p = 0; p < c->npages; p += CHUNK) {
		uint64_t n = c->npages - p < CHUNK ? c->npages - p : CHUNK;
		size_t len = n * BP_PAGE_SIZE;
		if (pread(c->fd, buf, len, (off_t)(p * BP_PAGE_SIZE)) != (ssize_t)len)
			bp_die("ursa-bufpool: reading the file back: %s\n", strerror(errno));
		for (uint64_t i = 0; i < n; i++) {
			const unsigned char *pg = buf + i * BP_PAGE_SIZE;
			if (bp_page_verify(pg, p + i)) {
				if (bad < 5)
					fprintf(stderr,
						"ursa-bufpool: page %llu fails verification\n",
						(unsigned long long)(p + i));
				bad++;
			} else {
				*sum += ((const struct bp_page_hdr *)(const void *)pg)->counter;
			}
		}
	}
	free(buf);
	return bad;
}

/* ---- counting syscalls ------------------------------------------------------ */

/*
 * Exact syscall counts, when the kernel lets us: a perf counter on the
 * raw_syscalls:sys_enter tracepoint, inherited by every thread the engine
 * creates (read() of the parent event adds its children's counts). Needs
 * tracefs mounted and perf permission (root, or perf_event_paranoid low
 * enough); without them, only the syscalls the demo makes itself are
 * counted (pread, pwrite, io_uring_enter), not the futex calls inside the
 * lock libraries.
 */
static long tracepoint_id(void)
{
	static const char *const paths[] = {
	    "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
	    "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
	};
	for (unsigned i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		FILE *f = fopen(paths[i], "re");
		long id;
		if (!f)
			continue;
		int ok = fscanf(f, "%ld", &id) == 1;
		fclose(f);
		if (ok)
			return id;
	}
	return -1;
}

static int syscall_counter_open(const char **why)
{
	long id = tracepoint_id();
	if (id < 0) {
		*why = "tracefs not mounted";
		return -1;
	}
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_TRACEPOINT;
	a.size = sizeof(a);
	a.config = (uint64_t)id;
	a.inherit = 1;
	a.sample_period = 0;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		*why = errno == EACCES || errno == EPERM ? "no perf permission" : strerror(errno);
	return fd;
}

static int64_t syscall_counter_read(int fd)
{
	uint64_t v;
	if (fd < 0 || read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return -1;
	return (int64_t)v;
}

/* ---- running an engine ------------------------------------------------------- */

/*
 * One engine's results, summed over its rounds. The engines run in
 * interleaved rounds (threads, threads-ursa, ring, threads, ...) so that a
 * change in the machine's load during the run (it may be shared) biases
 * no engine in particular; every round starts a cold pool and ends with the
 * consistency check.
 */
struct result {
	bool ran;
	const char *skip;
	int os_threads;
	int inflight; /* transactions in flight at once: threads, or loops x inflight */
	int rounds;
	struct bp_stats tot;
	double secs;		 /* measured windows, summed */
	double tps_min, tps_max; /* over the rounds */
	double csw, cpu_us;	 /* context switches, CPU time, summed */
	double host_us;		 /* every CPU's busy time (/proc/stat), summed */
	bool host_ok;		 /* every round had it */
	int64_t sys;		 /* kernel syscall count, summed */
	bool exact_sys;		 /* every round had the kernel count */
	uint64_t scanned, flushed;
	bool consistent; /* every round's check passed */
	int stalls;	 /* rounds the engine's watchdog found deadlocked */
	char stall[740]; /* the first one's report */
	char why[200];	 /* the first failure, or the last success */
	/* derived by finish_result() */
	double tps, p50_us, p99_us, max_us;
	double cs_per_txn, cpu_us_per_txn, host_us_per_txn, sys_per_txn, own_sys_per_txn;
	double lock_waits_per_txn, io_waits_per_txn, hit_pct, writebacks_per_txn;
	double prefetches_per_txn, timeouts_per_txn;
};

struct sample {
	struct rusage ru0, ru1, rc0, rc1; /* self, and reaped children (--procs) */
	int perf_fd;
	int64_t sys1;
	double host0, host1; /* busy CPU time of the whole machine, us; < 0: unknown */
};

/* Busy time of every CPU since boot, in microseconds: /proc/stat's first
 * line, user + nice + system + irq + softirq + steal (idle and iowait left
 * out). It counts what a process's rusage misses: interrupt and softirq work
 * (block completions) that ran while the CPU was idle or in another task,
 * and kernel threads working for the process. It also counts everything
 * else the machine runs: read it on a quiet machine. -1 if unreadable. */
static double host_busy_us(void)
{
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	unsigned long long v[8] = {0};
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		       &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8)
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	return hz > 0 ? (double)busy * 1e6 / (double)hz : -1;
}

static void on_joined(struct bp_run *r)
{
	struct sample *sm = r->priv;
	getrusage(RUSAGE_SELF, &sm->ru1);
	getrusage(RUSAGE_CHILDREN, &sm->rc1);
	sm->sys1 = syscall_counter_read(sm->perf_fd);
	sm->host1 = host_busy_us();
}

static double tv_us(struct timeval a, struct timeval b)
{
	return (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_usec - a.tv_usec);
}

/* Run engine e once (one round), add what it measured to *res, and check
 * the file. *baseline: the page counters' sum before; updated. */
static void run_round(int e, int round, const struct bp_config *c, uint64_t *baseline,
		      struct result *res)
{
	struct sample sm = {.perf_fd = -1, .sys1 = -1};
	const char *why = NULL;
	sm.perf_fd = syscall_counter_open(&why);
	struct bp_run r = {.cfg = c, .phase = BP_WARMUP, .joined = on_joined, .priv = &sm};

	fprintf(stderr, "ursa-bufpool: round %d/%d %-12s %.1f s warm-up + %.1f s measured\n",
		round + 1, res->rounds, engine_names[e], c->warmup, c->seconds);
	getrusage(RUSAGE_SELF, &sm.ru0);
	getrusage(RUSAGE_CHILDREN, &sm.rc0);
	int64_t sys0 = syscall_counter_read(sm.perf_fd);
	sm.host0 = host_busy_us();
	if (c->procs)
		bp_arena_begin();
	int rc = engine_fns[e](&r);
	bp_arena_end();
	if (sm.perf_fd >= 0)
		close(sm.perf_fd);
	if (r.skip) {
		res->skip = r.skip;
		fprintf(stderr, "ursa-bufpool: %s skipped: %s\n", engine_names[e], r.skip);
		bp_free(r.stats);
		return;
	}
	if (rc)
		bp_die("ursa-bufpool: engine %s failed\n", engine_names[e]);

	struct bp_stats t = {0};
	for (int i = 0; i < r.nstats; i++)
		bp_stats_add(&t, &r.stats[i]);
	bp_free(r.stats);
	double secs = (double)(r.t_stop - r.t_measure) / 1e9;
	double tps = secs > 0 ? (double)t.win_commits / secs : 0;
	if (!res->ran) {
		res->ran = true;
		res->consistent = true;
		res->exact_sys = true;
		res->host_ok = true;
		res->tps_min = res->tps_max = tps;
	}
	res->os_threads = r.os_threads;
	bp_stats_add(&res->tot, &t);
	res->secs += secs;
	res->tps_min = tps < res->tps_min ? tps : res->tps_min;
	res->tps_max = tps > res->tps_max ? tps : res->tps_max;
	res->csw +=
	    (double)(sm.ru1.ru_nvcsw - sm.ru0.ru_nvcsw + sm.ru1.ru_nivcsw - sm.ru0.ru_nivcsw) +
	    (double)(sm.rc1.ru_nvcsw - sm.rc0.ru_nvcsw + sm.rc1.ru_nivcsw - sm.rc0.ru_nivcsw);
	res->cpu_us +=
	    tv_us(sm.ru0.ru_utime, sm.ru1.ru_utime) + tv_us(sm.ru0.ru_stime, sm.ru1.ru_stime) +
	    tv_us(sm.rc0.ru_utime, sm.rc1.ru_utime) + tv_us(sm.rc0.ru_stime, sm.rc1.ru_stime);
	if (sm.host0 >= 0 && sm.host1 >= sm.host0)
		res->host_us += sm.host1 - sm.host0;
	else
		res->host_ok = false;
	if (sys0 >= 0 && sm.sys1 >= sys0)
		res->sys += sm.sys1 - sys0;
	else
		res->exact_sys = false;
	res->flushed += r.flushed;
	if (r.stalls && !res->stalls)
		snprintf(res->stall, sizeof(res->stall), "round %d: %s", round + 1, r.stall);
	res->stalls += r.stalls;

	/* The consistency check: the pool was flushed; read everything back. */
	uint64_t sum, bad = scan_file(c, &sum);
	uint64_t expect = *baseline + t.writes;
	bool ok = !bad && sum == expect && !t.bad_pages && !r.problems;
	res->scanned += c->npages;
	if (ok && res->consistent)
		snprintf(res->why, sizeof(res->why),
			 "%d round(s): after each, all %llu pages pass their checksum and the "
			 "counters sum to the one before plus the writes committed (%llu in all)",
			 round + 1, (unsigned long long)c->npages,
			 (unsigned long long)(res->tot.writes));
	else if (!ok && res->consistent)
		snprintf(
		    res->why, sizeof(res->why),
		    "round %d: %llu bad pages on disk, %llu bad page reads, %ld pool problems; "
		    "counters sum %llu, expected %llu (%+lld)",
		    round + 1, (unsigned long long)bad, (unsigned long long)t.bad_pages, r.problems,
		    (unsigned long long)sum, (unsigned long long)expect, (long long)(sum - expect));
	res->consistent &= ok;
	*baseline = sum;
}

static void finish_result(struct result *res)
{
	const struct bp_stats *t = &res->tot;
	double n = t->commits ? (double)t->commits : 1;
	res->tps = res->secs > 0 ? (double)t->win_commits / res->secs : 0;
	res->p50_us = bp_hist_quantile(t, 0.50) / 1e3;
	res->p99_us = bp_hist_quantile(t, 0.99) / 1e3;
	res->max_us = bp_hist_quantile(t, 1.0) / 1e3;
	res->cs_per_txn = res->csw / n;
	res->cpu_us_per_txn = res->cpu_us / n;
	res->host_us_per_txn = res->host_ok ? res->host_us / n : 0;
	res->sys_per_txn = res->exact_sys ? (double)res->sys / n : 0;
	res->own_sys_per_txn = (double)t->syscalls / n;
	res->lock_waits_per_txn = (double)t->lock_waits / n;
	res->io_waits_per_txn = (double)t->io_waits / n;
	res->writebacks_per_txn = (double)t->writebacks / n;
	res->prefetches_per_txn = (double)t->prefetches / n;
	res->timeouts_per_txn = (double)t->lock_timeouts / n;
	res->hit_pct = t->accesses ? 100.0 * (1.0 - (double)t->misses / (double)t->accesses) : 0;
}

/* ---- the report ------------------------------------------------------------ */

struct metric {
	const char *csv, *unit;
	double value;
};

static int metrics_of(const struct result *r, struct metric *m)
{
	int n = 0;
	m[n++] = (struct metric){"txn_per_s", "txn/s", r->tps};
	m[n++] = (struct metric){"txn_per_s_min_round", "txn/s", r->tps_min};
	m[n++] = (struct metric){"txn_per_s_max_round", "txn/s", r->tps_max};
	m[n++] = (struct metric){"p50_latency", "us", r->p50_us};
	m[n++] = (struct metric){"p99_latency", "us", r->p99_us};
	m[n++] = (struct metric){"max_latency", "us", r->max_us};
	m[n++] = (struct metric){"ctx_switches_per_txn", "count", r->cs_per_txn};
	m[n++] = (struct metric){"cpu_per_txn", "us", r->cpu_us_per_txn};
	if (r->host_ok)
		m[n++] = (struct metric){"host_cpu_per_txn", "us", r->host_us_per_txn};
	if (r->exact_sys)
		m[n++] = (struct metric){"syscalls_per_txn", "count", r->sys_per_txn};
	m[n++] = (struct metric){"own_syscalls_per_txn", "count", r->own_sys_per_txn};
	m[n++] = (struct metric){"lock_waits_per_txn", "count", r->lock_waits_per_txn};
	m[n++] = (struct metric){"io_waits_per_txn", "count", r->io_waits_per_txn};
	m[n++] = (struct metric){"hit_ratio", "%", r->hit_pct};
	m[n++] = (struct metric){"writebacks_per_txn", "count", r->writebacks_per_txn};
	m[n++] = (struct metric){"prefetches_per_txn", "count", r->prefetches_per_txn};
	m[n++] = (struct metric){"timed_out_waits_per_txn", "count", r->timeouts_per_txn};
	m[n++] = (struct metric){"deadlocks", "rounds", (double)r->stalls};
	m[n++] = (struct metric){"committed", "txn", (double)r->tot.commits};
	m[n++] = (struct metric){"in_flight", "txn", (double)r->inflight};
	m[n++] = (struct metric){"consistent", "bool", r->consistent ? 1 : 0};
	return n;
}

/* One point's rows. The threads column: the OS threads the engine ran, or,
 * in a sweep, the transactions in flight (the sweep's x). */
static void write_csv_rows(FILE *f, const char *scenario, const struct result *res, bool sweep)
{
	for (int e = 0; e < BP_NENGINES; e++) {
		if (!res[e].ran)
			continue;
		struct metric m[24];
		int n = metrics_of(&res[e], m);
		for (int i = 0; i < n; i++)
			fprintf(f, "%s,%s,%d,%s,%.6g,%s\n", scenario, engine_names[e],
				sweep ? res[e].inflight : res[e].os_threads, m[i].csv, m[i].value,
				m[i].unit);
	}
}

static void write_plot(const char *png, const struct result *res, const char *title)
{
	FILE *g = popen(GNUPLOT_CMD, "w");
	if (!g) {
		printf("plot: gnuplot could not be started\n");
		return;
	}
	fprintf(g,
		"set terminal pngcairo size 1200,450 noenhanced font ',10'\n"
		"set bmargin 5\n"
		"set output '%s'\n"
		"set multiplot layout 1,3 title '%s'\n"
		"set style data histograms\nset style fill solid 0.8 border -1\n"
		"set boxwidth 0.6\nset grid ytics\nset yrange [0:*]\nunset key\n"
		"set xtics font ',8' rotate by -20\n"
		"$d << EOD\n",
		png, title);
	for (int e = 0; e < BP_NENGINES; e++)
		if (res[e].ran) {
			char note[64];
			if (res[e].stalls)
				snprintf(note, sizeof(note), "DEADLOCKED");
			else
				snprintf(note, sizeof(note), "%d in flight", res[e].inflight);
			fprintf(g, "\"%s\" %.3f %.3f %.3f \"%s\"\n", engine_names[e],
				res[e].stalls ? 0 : res[e].tps, res[e].stalls ? 0 : res[e].p99_us,
				res[e].stalls ? 0 : res[e].cpu_us_per_txn, note);
		}
	fprintf(g, "EOD\n"
		   "lbl(x) = stringcolumn(1).\"\\n\".stringcolumn(5)\n"
		   "set title 'throughput (transactions/s, higher is better)'\n"
		   "plot $d using 2:xtic(lbl(0)) linecolor rgb '#4477aa'\n"
		   "set title 'p99 latency (us, lower is better)'\n"
		   "plot $d using 3:xtic(lbl(0)) linecolor rgb '#cc6677'\n"
		   "set title 'CPU per transaction (us, lower is better)'\n"
		   "plot $d using 4:xtic(lbl(0)) linecolor rgb '#228833'\n"
		   "unset multiplot\n");
	int st = pclose(g);
	if (st == 0)
		printf("plot: %s\n", png);
	else
		printf("plot: not written (gnuplot missing or failed; exit status %d)\n",
		       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* v in fmt, or "-" when it was not measured. */
static void fmt_known(char *buf, size_t len, const char *fmt, bool known, double v)
{
	if (known)
		snprintf(buf, len, fmt, v);
	else
		snprintf(buf, len, "-");
}

static void print_table(const struct result *res)
{
	const char *ex = "n/a";
	for (int e = 0; e < BP_NENGINES; e++)
		if (res[e].ran && res[e].exact_sys)
			ex = "kernel count";
	printf("\n%-17s %4s %10s %9s %9s %8s %8s %8s %9s %9s %8s %8s %6s  %s\n", "engine", "thr",
	       "txn/s", "p50 us", "p99 us", "cs/txn", "cpu us", "host us", "sys/txn", "own sys",
	       "lockw", "iowait", "hit %", "consistent");
	for (int e = 0; e < BP_NENGINES; e++) {
		const struct result *r = &res[e];
		if (!r->ran) {
			if (r->skip)
				printf("%-17s skipped: %s\n", engine_names[e], r->skip);
			continue;
		}
		char sys[32], host[32];
		fmt_known(host, sizeof(host), "%.1f", r->host_ok, r->host_us_per_txn);
		fmt_known(sys, sizeof(sys), "%.2f", r->exact_sys, r->sys_per_txn);
		printf("%-17s %4d %10.0f %9.1f %9.1f %8.2f %8.1f %8s %9s %9.2f %8.2f %8.3f %6.1f  %s\n",
		       engine_names[e], r->os_threads, r->tps, r->p50_us, r->p99_us, r->cs_per_txn,
		       r->cpu_us_per_txn, host, sys, r->own_sys_per_txn, r->lock_waits_per_txn,
		       r->io_waits_per_txn, r->hit_pct, r->consistent ? "yes" : "NO");
	}
	for (int e = 0; e < BP_NENGINES; e++) {
		const struct result *r = &res[e];
		if (r->ran && r->stalls)
			printf("  %s DEADLOCKED (watchdog; its row covers the round up to the stall, "
			       "further rounds skipped): %s\n",
			       engine_names[e], r->stall);
		else if (r->ran && (r->prefetches_per_txn > 0 || r->timeouts_per_txn > 0))
			printf("  %s: %.2f reads started ahead per txn%s", engine_names[e],
			       r->prefetches_per_txn, r->timeouts_per_txn > 0 ? "" : "\n");
		if (r->ran && !r->stalls && r->timeouts_per_txn > 0)
			printf(", %.2f timed waits expired per txn (the workaround's wake-ups)\n",
			       r->timeouts_per_txn);
	}
	printf("  txn/s over the rounds (per round:");
	for (int e = 0; e < BP_NENGINES; e++)
		if (res[e].ran)
			printf(" %s %.0f..%.0f", engine_names[e], res[e].tps_min, res[e].tps_max);
	printf(")\n");
	printf("  per-transaction figures are over whole rounds (warm-up and drain included);\n"
	       "  txn/s and latencies over the measured windows. sys/txn: every syscall of the\n"
	       "  process (%s); own sys: the ones the demo makes itself (pread, pwrite,\n"
	       "  io_uring_enter). lockw: lock acquisitions that had to wait; iowait: waits\n"
	       "  for a page another worker was reading. cpu us: user+system CPU per txn\n"
	       "  (the process's rusage); host us: every CPU's busy time per txn\n"
	       "  (/proc/stat: user, system, irq, softirq; it also counts interrupt work\n"
	       "  rusage charges to no one, and anything else the machine runs).\n",
	       ex);

	const struct result *base = &res[BP_THREADS];
	if (base->ran && base->tps > 0) {
		for (int e = 1; e < BP_NENGINES; e++) {
			const struct result *r = &res[e];
			if (!r->ran || r->stalls)
				continue;
			printf("%s vs threads: %.2fx throughput, p99 %.2fx, context switches "
			       "%.2fx, CPU per txn %.2fx",
			       engine_names[e], r->tps / base->tps,
			       base->p99_us > 0 ? r->p99_us / base->p99_us : 0,
			       base->cs_per_txn > 0 ? r->cs_per_txn / base->cs_per_txn : 0,
			       base->cpu_us_per_txn > 0 ? r->cpu_us_per_txn / base->cpu_us_per_txn
							: 0);
			if (r->host_ok && base->host_ok && base->host_us_per_txn > 0)
				printf(" (host %.2fx)", r->host_us_per_txn / base->host_us_per_txn);
			printf("\n");
		}
	}
	printf("\nconsistency check (pool flushed, file read back):\n");
	for (int e = 0; e < BP_NENGINES; e++)
		if (res[e].ran)
			printf("  %-17s %s: %s\n", engine_names[e],
			       res[e].consistent ? "OK" : "FAILED", res[e].why);
}

/* Run every chosen engine at the configuration c, in interleaved rounds. */
static void run_point(const struct opts *o, const struct bp_config *c, uint64_t *baseline,
		      struct result *res)
{
	memset(res, 0, BP_NENGINES * sizeof(*res));
	for (int k = 0; k < o->rounds; k++)
		for (int e = 0; e < BP_NENGINES; e++)
			if (o->engine[e] && !res[e].skip) {
				res[e].rounds = o->rounds;
				res[e].inflight = e == BP_RING ? c->inflight : c->workers;
				/* A deadlocked engine stays deadlocked: one round tells. */
				if (res[e].stalls)
					continue;
				run_round(e, k, c, baseline, &res[e]);
			}
	for (int e = 0; e < BP_NENGINES; e++)
		if (res[e].ran)
			finish_result(&res[e]);
}

/* The sweep's plot: throughput (x) against p99 latency (y), a curve per
 * engine, each point labelled with its transactions in flight. */
static void write_sweep_plot(const char *png, const struct result (*pts)[BP_NENGINES], int npts,
			     const int *ns, const char *title)
{
	FILE *g = popen(GNUPLOT_CMD, "w");
	if (!g) {
		printf("plot: gnuplot could not be started\n");
		return;
	}
	fprintf(g,
		"set terminal pngcairo size 900,600 noenhanced font ',10'\n"
		"set output '%s'\n"
		"set title '%s'\n"
		"set xlabel 'throughput (transactions/s)'\n"
		"set ylabel 'p99 latency (us, log scale)'\n"
		"set logscale y\nset grid\nset key top left\n",
		png, title);
	int idx = 0, used[BP_NENGINES];
	for (int e = 0; e < BP_NENGINES; e++) {
		used[e] = -1;
		bool any = false;
		for (int i = 0; i < npts; i++)
			any |= pts[i][e].ran;
		if (!any)
			continue;
		used[e] = idx++;
		fprintf(g, "$e%d << EOD\n", e);
		for (int i = 0; i < npts; i++)
			if (pts[i][e].ran)
				fprintf(g, "%.3f %.3f %d\n", pts[i][e].tps, pts[i][e].p99_us, ns[i]);
		fprintf(g, "EOD\n");
	}
	static const char *const colors[] = {"#4477aa", "#228833", "#cc6677", "#ccbb44",
					      "#aa3377", "#66ccee"};
	fprintf(g, "plot ");
	bool first = true;
	for (int e = 0; e < BP_NENGINES; e++) {
		if (used[e] < 0)
			continue;
		fprintf(g,
			"%s$e%d using 1:2 with linespoints lw 2 pt 7 lc rgb '%s' title '%s', "
			"$e%d using 1:2:3 with labels offset 0.8,0.8 font ',8' tc rgb '%s' "
			"notitle",
			first ? "" : ", ", e, colors[e % 6], engine_names[e], e, colors[e % 6]);
		first = false;
	}
	fprintf(g, "\n");
	int st = pclose(g);
	if (st == 0)
		printf("plot: %s\n", png);
	else
		printf("plot: not written (gnuplot missing or failed; exit status %d)\n",
		       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static char *png_of(const struct opts *o)
{
	char *png = NULL;
	if (o->plot)
		return strdup(o->plot);
	const char *dot = strrchr(o->csv, '.'), *slash = strrchr(o->csv, '/');
	size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - o->csv) : strlen(o->csv);
	if (asprintf(&png, "%.*s.png", (int)stem, o->csv) < 0)
		png = NULL;
	return png;
}

int main(int argc, char **argv)
{
	struct opts o;
	parse_opts(&o, argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);

	struct bp_config c = {
	    .seconds = o.seconds / o.rounds,
	    .warmup = o.warmup,
	    .workers = o.workers,
	    .loops = o.loops,
	    .inflight = o.inflight,
	    .txn_pages = o.txn_pages,
	    .write_pct = o.write_pct,
	    .hot_pages = o.hot_pages,
	    .theta = o.theta,
	    .unsafe = o.unsafe,
	    .prefetch = !o.no_prefetch,
	    .procs = o.procs,
	    .no_fixed = o.no_fixed,
	    .eager_submit = o.eager_submit,
	    .npages = (uint64_t)o.file_mb * (1024 * 1024 / BP_PAGE_SIZE),
	};
	c.nbufs = (uint32_t)(o.pool_pages > 0 ? (uint64_t)o.pool_pages : c.npages / 4);
	if (c.nbufs < 16)
		c.nbufs = 16;
	if (c.nbufs > c.npages)
		bp_die("ursa-bufpool: the pool (%u pages) must be smaller than the file (%llu)\n",
		       c.nbufs, (unsigned long long)c.npages);
	if ((uint64_t)c.hot_pages * 4 > c.npages)
		bp_die("ursa-bufpool: --hot-pages %d: at most a quarter of the file's pages\n",
		       c.hot_pages);

	/* The in-flight counts to run: one, or the sweep's. */
	int cpus = ncpus(), ns[16], npts = 0;
	if (o.sweep)
		for (int m = 1; m <= 64 && npts < 16; m *= 2)
			ns[npts++] = m * cpus;
	else
		ns[npts++] = o.inflight;

	/* Each transaction pins at most three buffers at once (the hot page,
	 * its page and a victim); keep most of the pool unpinned so the sweep
	 * finds victims. */
	uint64_t inflight = (uint64_t)ns[npts - 1];
	if ((o.engine[BP_THREADS] || o.engine[BP_THREADS_URSA]) && (uint64_t)o.workers > inflight)
		inflight = (uint64_t)o.workers;
	if (c.nbufs < 4 * inflight)
		bp_die("ursa-bufpool: %u buffers is too small for %llu transactions in flight "
		       "(need at least 4 per transaction)\n",
		       c.nbufs, (unsigned long long)inflight);
	c.nparts = 128; /* PostgreSQL's NUM_BUFFER_PARTITIONS */
	bp_zipf_setup(&c);
	if (o.procs) /* the pool's pages, and room for the rest (reserved lazily) */
		bp_arena_create((size_t)c.nbufs * BP_PAGE_SIZE + (256u << 20));

	/* Open the CSV now: a bad path should fail before the run, not after. */
	FILE *csv = NULL;
	if (o.csv && !(csv = fopen(o.csv, "w")))
		bp_die("ursa-bufpool: %s: %s\n", o.csv, strerror(errno));

	char *path = data_path(&o);
	c.fd = open_file(&o, path, c.npages, &c.direct);

	const char *alloc = "glibc malloc";
#ifdef HAVE_JEMALLOC
	static char jbuf[64];
	const char *jv = NULL;
	size_t jsz = sizeof(jv);
	if (mallctl("version", &jv, &jsz, NULL, 0) == 0 && jv) {
		snprintf(jbuf, sizeof(jbuf), "jemalloc %s", jv);
		alloc = jbuf;
	}
#endif
	printf("ursa-bufpool: %s, %llu pages of %u KiB (%ld MiB), %s I/O\n", path,
	       (unsigned long long)c.npages, BP_PAGE_SIZE / 1024, o.file_mb,
	       c.direct ? "O_DIRECT" : "page-cache");
	printf("  pool %u buffers (%.0f%% of the file), %u mapping partitions, clock sweep\n",
	       c.nbufs, 100.0 * c.nbufs / (double)c.npages, c.nparts);
	printf("  preset %s: transactions of %d pages, zipf theta %.2f, %d%% modify one page%s\n",
	       o.preset, c.txn_pages, c.theta, c.write_pct,
	       c.unsafe ? "  [--unsafe-writes: writers take the page lock SHARED]" : "");
	if (c.hot_pages)
		printf("  and every transaction updates one of %d hot pages, holding its lock "
		       "exclusive from its first access to its commit\n",
		       c.hot_pages);
	if (o.sweep)
		printf("  sweep: %d..%d transactions in flight, each engine at each point; ", ns[0],
		       ns[npts - 1]);
	else if (o.set_workers && o.workers != o.inflight)
		printf("  UNEQUAL concurrency: threads engines %d threads, ring %d in flight; ",
		       o.workers, o.inflight);
	else {
		int nl = o.loops < o.inflight ? o.loops : o.inflight;
		printf("  %d transactions in flight for every engine (threads: %d %s; ring: "
		       "%d loop%s); ",
		       o.inflight, o.inflight, o.procs ? "processes" : "threads", nl,
		       o.procs ? (nl == 1 ? " process" : " processes") : (nl == 1 ? "" : "s"));
	}
	printf("%d CPUs; %s\n", cpus, alloc);
	printf("  per engine: %d rounds of %.1f s warm-up + %.1f s measured, engines interleaved\n",
	       o.rounds, c.warmup, c.seconds);

	uint64_t baseline;
	uint64_t bad = scan_file(&c, &baseline);
	if (bad)
		bp_die("ursa-bufpool: %s has %llu invalid pages before the run; rerun with "
		       "--recreate\n",
		       path, (unsigned long long)bad);

	struct result(*pts)[BP_NENGINES] = calloc((size_t)npts, sizeof(*pts));
	if (!pts)
		bp_die("ursa-bufpool: out of memory\n");
	bool all_ok = true;
	int ran = 0;
	for (int i = 0; i < npts; i++) {
		c.inflight = ns[i];
		c.workers = o.sweep || !o.set_workers ? ns[i] : o.workers;
		if (o.sweep)
			printf("\n== %d transactions in flight ==", ns[i]);
		run_point(&o, &c, &baseline, pts[i]);
		print_table(pts[i]);
		for (int e = 0; e < BP_NENGINES; e++) {
			ran += pts[i][e].ran;
			all_ok &= !pts[i][e].ran || pts[i][e].consistent;
		}
	}

	char title[240];
	snprintf(title, sizeof(title),
		 "ursa-bufpool%s%s: %llu pages, pool %u, zipf %.2f, %d%% writes, %d hot pages, "
		 "%s I/O, %d CPUs",
		 o.sweep ? " --sweep" : "", strcmp(o.preset, "default") ? " --preset contended" : "",
		 (unsigned long long)c.npages, c.nbufs, c.theta, c.write_pct, c.hot_pages,
		 c.direct ? "direct" : "buffered", cpus);
	if (o.sweep && npts > 1) {
		printf("\nsweep summary (txn/s, p99 us):\n%-18s", "in flight");
		for (int i = 0; i < npts; i++)
			printf(" %14d", ns[i]);
		printf("\n");
		for (int e = 0; e < BP_NENGINES; e++) {
			if (!pts[0][e].ran)
				continue;
			printf("%-18s", engine_names[e]);
			for (int i = 0; i < npts; i++)
				printf(" %7.0f %6.0f", pts[i][e].tps, pts[i][e].p99_us);
			printf("\n");
		}
	}
	if (csv && ran) {
		fprintf(csv, "scenario,impl,threads,metric,value,unit\n");
		for (int i = 0; i < npts; i++)
			write_csv_rows(csv, o.sweep ? "bufpool_sweep" : "bufpool", pts[i], o.sweep);
		if (fclose(csv))
			bp_die("ursa-bufpool: %s: %s\n", o.csv, strerror(errno));
		printf("CSV: %s\n", o.csv);
		char *png = png_of(&o);
		if (png && o.sweep)
			write_sweep_plot(png, (const struct result(*)[BP_NENGINES])pts, npts, ns,
					 title);
		else if (png)
			write_plot(png, pts[0], title);
		free(png);
	} else if (o.plot && ran) {
		if (o.sweep)
			write_sweep_plot(o.plot, (const struct result(*)[BP_NENGINES])pts, npts,
					 ns, title);
		else
			write_plot(o.plot, pts[0], title);
	}
	if (csv && !ran)
		fclose(csv);
	free(pts);
	close(c.fd);
	free(path);
	if (!all_ok)
		printf("\nCONSISTENCY CHECK FAILED\n");
	return all_ok ? 0 : 1;
}
