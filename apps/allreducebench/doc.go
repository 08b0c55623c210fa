// Command allreducebench measures Allreduce (float64, Sum) over all the ranks of a job the
// way the OSU micro-benchmark osu_allreduce does, Bcast, Reduce, Allgather and Alltoall as
// osu_bcast, osu_reduce, osu_allgather and osu_alltoall do, and Barrier as osu_barrier does.
//
//	golaunch -n 2 ./bin/allreducebench                             # 8 B to 64 MiB, then Barrier
//	golaunch -n 4 ./bin/allreducebench --max-size 1M --json=ar.json
//	golaunch -n 2 ./bin/allreducebench --algo ring --min-size 1M
//	golaunch -n 2 -x GORMA_ALLREDUCE=rabenseifner ./bin/allreducebench --test allreduce
//	golaunch -n 2 ./bin/allreducebench --fresh --min-size 1M         # new buffers per call
//	golaunch -n 2 ./bin/allreducebench --scratch fresh --sizes 1M,16M,64M  # scratch per call
//	golaunch -n 2 ./bin/allreducebench --test overlap                # Iallreduce 16 MiB + compute
//	golaunch -n 4 ./bin/allreducebench --test bcast,alltoall --sizes 8,1K,1M
//	golaunch -n 4 ./bin/allreducebench --test colls --max-size 1M    # every test but overlap
//
// --test takes a comma-separated list of allreduce, bcast, reduce, allgather, alltoall and
// barrier, run in that order whatever the list's order; all (the default) is allreduce and
// barrier, colls is all six; overlap runs alone.
//
// Method (as osu_allreduce): for each size (powers of two from --min-size to --max-size,
// 8 B to 64 MiB by default, or the list of --sizes such as 8,1M,24M), every rank times
// each call on its own monotonic clock (read before and after collectives.Allreduce: two
// clock reads, as the C twin's MPI_Wtime pair) and a
// Barrier follows each call, outside the timed region, so that calls do not pipeline; warmup calls (a tenth, at least 3) are not
// timed. Before the first size the job warms up for 50 ms (rank 0's clock) with untimed
// calls of the first size, so that the job's start-up does not land on the first row. Each rank's mean over the measured calls is reduced over the ranks: the table
// gives their average (avg_us, OSU's "Avg Latency(us)"), minimum and maximum, and the
// bandwidths from the average: algorithm bandwidth algbw = bytes / avg_us (GB/s, 10^9
// bytes per second) and bus bandwidth busbw = algbw * 2(p-1)/p, the fraction of the
// link or memory bandwidth that a bandwidth-optimal Allreduce moves (the nccl-tests
// convention). --iters calls per size up to 16 KiB, scaled down in proportion above (at
// least --min-iters); --size-time caps a size's measured calls by the time the warmup
// says they would take (the slowest rank's warmup mean decides, so every rank agrees),
// never below 3. Each size's result is checked against the exact sum after the
// measured calls (the inputs are small integers, so the float64 sums are exact).
//
// Bcast, Reduce, Allgather and Alltoall follow the same method (the same warm-ups, counts
// and figures) on float64 vectors, Bcast and Reduce (Sum) with root 0. The size is the
// vector for Bcast and Reduce, and one rank's block for Allgather and Alltoall, as in OSU:
// Allgather sends size bytes and receives p blocks of size; Alltoall sends and receives
// p blocks of size, one per rank. Each test warms the job up for 50 ms with its own calls
// of the first size, each followed by a Barrier as in the timed loop. After a size's measured calls, every rank that expects a result
// overwrites it with a wrong pattern, one more call (untimed) runs, and its result is
// checked element by element (a wrong element fails the run). Their bandwidths follow
// nccl-tests: for Bcast and Reduce busbw = algbw = size / avg_us; for Allgather and
// Alltoall algbw = p * size / avg_us (the p blocks received) and busbw = algbw * (p-1)/p
// (the blocks that come from other ranks).
//
// Barrier (--test barrier, all or colls) is osu_barrier: --iters Barriers after a tenth of that
// as warmup, each timed; the same average, minimum and maximum over the ranks. When it is
// the only test, the job first warms up for 50 ms with untimed Barriers, as it does with
// Allreduce before the first size.
//
// Overlap (--test overlap; 16 MiB unless --sizes, --min-size or --max-size say otherwise)
// is the OSU method of osu_iallreduce: per size, t_coll is Allreduce alone, t_comp a
// compute kernel alone (float64 arithmetic over a private 32 KiB array, deterministic,
// calling nothing), calibrated to take the ranks' mean warm-up Allreduce (trial runs
// correct the count), and t_ovl is Iallreduce, the kernel, then Wait. Each iteration runs
// the three in turn (a load change on a shared host hits all three alike), each timed
// and followed by an untimed Barrier; each figure is a rank's mean averaged over the
// ranks, and overlap_% = (t_coll + t_comp
// - t_ovl) / min(t_coll, t_comp) * 100 (100: the collective hidden entirely, 0: the
// blocking sum t_coll + t_comp). --polls N spreads N Request.Test calls through the
// overlapped kernel (MPI_Test in the C twin); scripts/compare-overlap.sh compares.
//
// --algo forces an Allreduce algorithm by setting GORMA_ALLREDUCE before the first
// collective call (collectives reads it then): auto, recdbl, rabenseifner, ring, direct,
// lanes, shm or hier (whatever the collectives package names); an unknown name makes the
// first call fail with the collectives' configuration error. Without --algo, a
// GORMA_ALLREDUCE set in the environment (golaunch -x) applies.
//
// --fresh allocates new send and receive buffers for every call (Go's make; the send
// buffer is filled before the timed region, the receive buffer is left as allocated, so
// its pages are first touched by the Allreduce), instead of reusing one pair: it shows
// what reusing memory buys, since a fresh buffer costs page faults and, for messages
// above the eager limit, a registration-cache miss in the runtime's rendezvous. The
// collectives' own scratch is reused either way; --scratch is the switch for that.
//
// --scratch arena|fresh sets the collectives' scratch policy (collectives.SetScratch, on
// every rank before its first collective call; without the flag GORMA_SCRATCH applies,
// else arena). arena reuses scratch acquired once from the pre-registered arena; fresh
// makes every Allreduce call map, fault in, register (and, for the shared-memory
// algorithm, exchange with and map at its peers) its scratch and release it before it
// returns, as Open MPI and MPICH do (see the collectives package documentation): the
// difference between the two is what pre-registration buys.
//
// Output: a header (ranks, hosts, transport, algorithm, progress mode, fresh buffers,
// scratch policy; the JSON's "fresh" and "scratch"), one table per
// test ("#bytes iterations avg_us min_us max_us algbw_GB/s busbw_GB/s", in the JSON the
// arrays "allreduce", "bcast", "reduce", "allgather", "alltoall" and "barrier" of rows
// with those fields; for overlap
// "#bytes iterations coll_us comp_us ovl_us sum_us overlap_% passes"), at rank 0;
// --json prints one JSON document instead, --json=FILE writes it to FILE beside the text.
// Each JSON row also holds vcsw_per_call and ivcsw_per_call: the process's voluntary and
// involuntary context switches (getrusage, every thread's) per timed call, averaged over
// the ranks; the JSON's gomaxprocs is rank 0's GOMAXPROCS after Init (GORMA_PROCS).
// --cpuprofile FILE writes a CPU profile of each rank to FILE.RANK (go tool pprof).
// bench/mpi/allreducebench.c is the C twin (same flags but --scratch and --cpuprofile,
// method, output and JSON);
// scripts/compare-allreduce.sh runs both side by side under Open MPI and MPICH.
package main
