/* C twin of apps/scalebench: one job's startup, collectives and memory at scale, with the
 * same flags, phases, figures and JSON line, so one script runs both side by side
 * (scripts/compare-scale.sh).
 *   scalebench_mpi [--iters N] [--big-iters N] [--window-size N] [--launch-ns NS]
 *       [--shm-base-kb KB] [--json[=FILE]]
 * Phases after MPI_Init: --iters MPI_Barriers, --iters MPI_Allreduces of 8 B and
 * --big-iters of 1 MiB (MPI_DOUBLE, MPI_SUM; 3 untimed calls first, an untimed
 * MPI_Barrier after each call; each rank's mean per call), then MPI_Win_allocate of
 * --window-size bytes per rank, this rank's memory filled (untimed), one MPI_Win_fence;
 * between two MPI_Barriers every rank reads VmHWM, RssAnon and RssShmem from
 * /proc/self/status and counts /proc/self/fd, and rank 0 reads the host's Shmem from
 * /proc/meminfo; then MPI_Win_free. Rank 0 gathers every rank's figures (MPI_Gather) and
 * prints each one's median and maximum over the ranks. Startup is launch (--launch-ns,
 * else the earliest rank's start) to MPI_Init returned, on the wall clock. See
 * apps/scalebench/doc.go for the method. */
#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
	F_START_UNIX, F_INIT_UNIX, F_PRE_SHM, F_STARTUP, F_INIT, F_BARRIER, F_AR8, F_AR1M,
	F_WIN_ALLOCATE, F_WIN_FREE, F_VMHWM, F_RSS_ANON, F_RSS_SHMEM, F_FDS, N_FIGURES
};

/* The reported figures' names (the JSON's keys); NULL: an input of the summary. */
static const char *names[N_FIGURES] = {
	[F_STARTUP] = "startup_s", [F_INIT] = "init_s", [F_BARRIER] = "barrier_us",
	[F_AR8] = "allreduce_8_us", [F_AR1M] = "allreduce_1m_us",
	[F_WIN_ALLOCATE] = "win_allocate_us", [F_WIN_FREE] = "win_free_us",
	[F_VMHWM] = "vmhwm_kb", [F_RSS_ANON] = "rss_anon_kb", [F_RSS_SHMEM] = "rss_shmem_kb", [F_FDS] = "fds",
};

#ifdef OPEN_MPI
#define SYSTEM "Open MPI"
#else
#define SYSTEM "MPICH"
#endif

static int rank, nranks;

static double unix_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* kb_field reads "NAME:   1234 kB" of the /proc file path; -1 when it is missing. */
static long kb_field(const char *path, const char *name) {
	FILE *f = fopen(path, "r");
	if (!f) return -1;
	char line[256];
	size_t n = strlen(name);
	long v = -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, name, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* open_fds counts this process's descriptors, without the one reading /proc/self/fd holds. */
static long open_fds(void) {
	DIR *d = opendir("/proc/self/fd");
	if (!d) return -1;
	long n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') n++;
	closedir(d);
	return n - 1;
}

/* time_calls: 3 untimed calls, then iters timed ones, each followed by an untimed
 * MPI_Barrier; this rank's mean per timed call in microseconds. */
static double time_calls(int iters, double *send, double *recv, int count) {
	double total = 0;
	for (int i = 0; i < 3 + iters; i++) {
		double t0 = MPI_Wtime();
		if (count) MPI_Allreduce(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		else MPI_Barrier(MPI_COMM_WORLD);
		if (i >= 3) total += MPI_Wtime() - t0;
		MPI_Barrier(MPI_COMM_WORLD);
	}
	return total * 1e6 / iters;
}

static double allreduce(long bytes, int iters) {
	int n = (int)(bytes / 8);
	double *send = malloc(bytes), *recv = malloc(bytes);
	for (int i = 0; i < n; i++) send[i] = rank + i % 7, recv[i] = 0;
	double us = time_calls(iters, send, recv, n);
	for (int i = 0; i < n; i++) {
		double want = (double)nranks * (nranks - 1) / 2 + (double)nranks * (i % 7);
		if (recv[i] != want) {
			fprintf(stderr, "scalebench_mpi: allreduce of %ld B: element %d is %g, want %g\n", bytes, i, recv[i], want);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	free(send);
	free(recv);
	return us;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* column: figure i of every rank, sorted, into c. */
static void column(const double *all, int i, double *c) {
	for (int r = 0; r < nranks; r++) c[r] = all[r * N_FIGURES + i];
	qsort(c, nranks, sizeof *c, cmp);
}

static double median(const double *c) { return nranks % 2 ? c[nranks / 2] : (c[nranks / 2 - 1] + c[nranks / 2]) / 2; }

static int usage(const char *msg, const char *arg) {
	if (rank == 0) fprintf(stderr, "scalebench_mpi: %s%s\n", msg, arg ? arg : "");
	MPI_Finalize();
	return 2;
}

int main(int argc, char **argv) {
	double v[N_FIGURES] = {0};
	v[F_START_UNIX] = unix_now();
	v[F_PRE_SHM] = kb_field("/proc/meminfo", "Shmem");
	MPI_Init(&argc, &argv);
	v[F_INIT_UNIX] = unix_now();
	v[F_INIT] = v[F_INIT_UNIX] - v[F_START_UNIX];
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	int iters = 100, big_iters = 10;
	long win_bytes = 1L << 20, shm_base = -1;
	long long launch_ns = 0;
	const char *json = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json")) json = "-";
		else if (!strncmp(a, "--json=", 7)) json = a + 7;
		else if (!val) return usage("missing value for ", a);
		else {
			i++;
			if (!strcmp(a, "--iters")) iters = atoi(val);
			else if (!strcmp(a, "--big-iters")) big_iters = atoi(val);
			else if (!strcmp(a, "--window-size")) {
				char *end;
				win_bytes = strtol(val, &end, 10);
				if (*end == 'K' || *end == 'k') win_bytes <<= 10;
				else if (*end == 'M' || *end == 'm') win_bytes <<= 20;
				else if (*end) return usage("--window-size: want bytes such as 4096, 64K or 1M, not ", val);
			} else if (!strcmp(a, "--launch-ns")) launch_ns = atoll(val);
			else if (!strcmp(a, "--shm-base-kb")) shm_base = atol(val);
			else return usage("unknown flag ", a);
		}
	}
	if (iters < 1 || big_iters < 1 || win_bytes < 1 || launch_ns < 0) return usage("want --iters, --big-iters, --window-size >= 1 and --launch-ns >= 0", NULL);

	v[F_BARRIER] = time_calls(iters, NULL, NULL, 0);
	v[F_AR8] = allreduce(8, iters);
	v[F_AR1M] = allreduce(1L << 20, big_iters);

	char *mem;
	MPI_Win win;
	double t0 = MPI_Wtime();
	MPI_Win_allocate(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
	double alloc = MPI_Wtime() - t0;
	memset(mem, rank + 1, win_bytes);
	double t1 = MPI_Wtime();
	MPI_Win_fence(0, win);
	v[F_WIN_ALLOCATE] = (alloc + MPI_Wtime() - t1) * 1e6;
	MPI_Barrier(MPI_COMM_WORLD);
	v[F_VMHWM] = kb_field("/proc/self/status", "VmHWM");
	v[F_RSS_ANON] = kb_field("/proc/self/status", "RssAnon");
	v[F_RSS_SHMEM] = kb_field("/proc/self/status", "RssShmem");
	v[F_FDS] = open_fds();
	long shm_peak = rank == 0 ? kb_field("/proc/meminfo", "Shmem") : 0;
	MPI_Barrier(MPI_COMM_WORLD);
	double t2 = MPI_Wtime();
	MPI_Win_free(&win);
	v[F_WIN_FREE] = (MPI_Wtime() - t2) * 1e6;

	double *all = rank == 0 ? malloc(sizeof v * nranks) : NULL;
	MPI_Gather(v, N_FIGURES, MPI_DOUBLE, all, N_FIGURES, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		double *c = malloc(sizeof *c * nranks);
		char hosts[MPI_MAX_PROCESSOR_NAME];
		int len;
		MPI_Get_processor_name(hosts, &len);
		column(all, F_START_UNIX, c);
		double launch = launch_ns ? launch_ns / 1e9 : c[0];
		const char *base_from = "script";
		if (shm_base < 0) {
			column(all, F_PRE_SHM, c);
			shm_base = (long)c[0];
			base_from = "ranks before Init";
		}
		for (int r = 0; r < nranks; r++) all[r * N_FIGURES + F_STARTUP] = all[r * N_FIGURES + F_INIT_UNIX] - launch;
		FILE *f = NULL;
		if (json) f = strcmp(json, "-") ? fopen(json, "w") : stdout;
		if (json && !f) {
			perror(json);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		if (f) {
			/* One host: the launchers here place every rank on the local host. */
			fprintf(f, "{\"benchmark\":\"scalebench\",\"system\":\"%s\",\"ranks\":%d,\"hosts\":1,\"iters\":%d,\"big_iters\":%d,"
				"\"window_bytes\":%ld,\"launch_from\":\"%s\",\"shm_base_from\":\"%s\",\"shmem_base_kb\":%ld,"
				"\"shmem_peak_kb\":%ld,\"shmem_kb\":%ld,\"figures\":{",
				SYSTEM, nranks, iters, big_iters, win_bytes, launch_ns ? "script" : "first rank", base_from, shm_base,
				shm_peak, shm_peak - shm_base);
			const char *sep = "";
			for (int i = 0; i < N_FIGURES; i++) {
				if (!names[i]) continue;
				column(all, i, c);
				fprintf(f, "%s\"%s\":{\"median\":%.6g,\"max\":%.6g}", sep, names[i], median(c), c[nranks - 1]);
				sep = ",";
			}
			fprintf(f, "}}\n");
			if (f != stdout) fclose(f);
		}
		if (!json || strcmp(json, "-")) {
			printf("# %s scalebench: %d ranks, rank 0 on %s; startup from the %s's launch time\n", SYSTEM, nranks, hosts,
				launch_ns ? "script" : "first rank");
			printf("# shared memory on rank 0's host: %ld kB (Shmem %ld kB at the peak, %ld kB before the job, from the %s)\n",
				shm_peak - shm_base, shm_peak, shm_base, base_from);
			printf("%-18s %14s %14s\n", "# figure", "median", "max");
			for (int i = 0; i < N_FIGURES; i++) {
				if (!names[i]) continue;
				column(all, i, c);
				printf("%-18s %14.3f %14.3f\n", names[i], median(c), c[nranks - 1]);
			}
		}
		free(c);
		free(all);
	}
	MPI_Finalize();
	return 0;
}
