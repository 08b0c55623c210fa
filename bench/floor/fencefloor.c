// fencefloor: the floor of an empty Fence of P processes sharing fewer processors, with
// no MPI. Each process stores its count of Fences into a word of shared memory, then
// polls every word until all have reached it. Mode "yield" gives the processor away
// (sched_yield) at every miss, as osc/sm and gorma do on an oversubscribed host. Mode
// "hold" yields only while a process that shares this one's processor (bound to it, or,
// unbound, the same index mod CPUS) has not arrived, and spins otherwise: the fewest
// switches a Fence can take, one per processor.
//
// It prints, for process 0, the mean, the median and the p99 of the per-call times, and
// the share of calls under 5 us. A process that shares its processor is switched out in
// at least every second call, so the median of any implementation is near the round
// trip of a switch once the processor is shared.
//
// Usage: fencefloor [-p P] [-c CPUS] [-n FENCES] [-b] yield|hold
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { lineWords = 8, warmup = 1000 };

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void run(volatile uint64_t *words, int rank, int p, int cpus, int n, int hold, int bind) {
	if (bind) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(rank % cpus, &set);
		if (sched_setaffinity(0, sizeof set, &set) != 0) {
			perror("fencefloor: sched_setaffinity");
			_exit(1);
		}
	}
	double *t = malloc(sizeof(double) * n), sum = 0;
	if (t == NULL) {
		_exit(1);
	}
	for (uint64_t seq = 1; seq <= (uint64_t)(n + warmup); seq++) {
		double start = now_us();
		__atomic_store_n(&words[rank * lineWords], seq, __ATOMIC_RELEASE);
		for (;;) {
			int all = 1, mates = 1;
			for (int q = 0; q < p; q++) {
				if (__atomic_load_n(&words[q * lineWords], __ATOMIC_ACQUIRE) < seq) {
					all = 0;
					if (q % cpus == rank % cpus) {
						mates = 0;
					}
				}
			}
			if (all) {
				break;
			}
			if (hold && mates) {
				__builtin_ia32_pause();
			} else {
				sched_yield();
			}
		}
		if (seq > warmup) {
			t[seq - warmup - 1] = now_us() - start;
			sum += t[seq - warmup - 1];
		}
	}
	if (rank == 0) {
		qsort(t, n, sizeof(double), cmp);
		int fast = 0;
		for (int i = 0; i < n; i++) {
			fast += t[i] < 5;
		}
		printf("%s p=%d cpus=%d %s: mean %.2f us, median %.2f us, p99 %.2f us, under 5 us %.0f%%\n",
		       hold ? "hold" : "yield", p, cpus, bind ? "bound" : "unbound", sum / n, t[n / 2],
		       t[(int)(n * 0.99)], 100.0 * fast / n);
		fflush(stdout);
	}
	_exit(0);
}

int main(int argc, char **argv) {
	int p = 4, cpus = 2, n = 40000, bind = 0, opt;
	while ((opt = getopt(argc, argv, "p:c:n:b")) != -1) {
		switch (opt) {
		case 'p': p = atoi(optarg); break;
		case 'c': cpus = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 'b': bind = 1; break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || p < 2 || cpus < 1 || n < 1) {
		goto usage;
	}
	int hold = strcmp(argv[optind], "hold") == 0;
	if (!hold && strcmp(argv[optind], "yield") != 0) {
		goto usage;
	}
	volatile uint64_t *words = mmap(NULL, (size_t)p * lineWords * 8, PROT_READ | PROT_WRITE,
	                                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (words == MAP_FAILED) {
		perror("fencefloor: mmap");
		return 1;
	}
	for (int r = 0; r < p; r++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fencefloor: fork");
			return 1;
		}
		if (pid == 0) {
			run(words, r, p, cpus, n, hold, bind);
		}
	}
	int bad = 0, status;
	while (wait(&status) > 0) {
		bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	}
	return bad;
usage:
	fprintf(stderr, "usage: fencefloor [-p P] [-c CPUS] [-n FENCES] [-b] yield|hold\n");
	return 2;
}
