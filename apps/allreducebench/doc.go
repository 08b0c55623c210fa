// Command allreducebench measures Allreduce (float64, Sum) over all the ranks of a job the
// way the OSU micro-benchmark osu_allreduce does; Bcast, Reduce, Allgather, Alltoall,
// Gather and Scatter as osu_bcast, osu_reduce, osu_allgather, osu_alltoall, osu_gather and
// osu_scatter do; and Barrier as osu_barrier does.
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
// --test takes a comma-separated list of allreduce, bcast, reduce, allgather, alltoall,
// gather, scatter and barrier, run in that order whatever the list's order; all (the
// default) is allreduce and barrier, colls is all eight; overlap runs alone.
//
// design.md gives the method of every test: OSU's timing, warm-ups, counts, result
// checks and bandwidth formulas, and the overlap test's kernel.
//
// --algo forces an Allreduce algorithm by setting GORMA_ALLREDUCE before the first
// collective call (collectives reads it then): auto, recdbl, rabenseifner, ring, direct,
// lanes, shm or hier (whatever the collectives package names). An unknown name makes the
// first call fail with the collectives' configuration error. Without --algo, a
// GORMA_ALLREDUCE set in the environment (golaunch -x) applies.
//
// --fresh allocates new buffers for every call (page faults and registration misses
// included); --scratch arena|fresh sets the collectives' scratch policy
// (collectives.SetScratch). design.md says what each shows.
//
// Output, at rank 0: a header (ranks, hosts, transport, algorithm, progress mode, fresh
// buffers, scratch policy; the JSON's "fresh" and "scratch"), then one table per test. A
// table's columns are "#bytes iterations avg_us min_us max_us algbw_GB/s busbw_GB/s", and
// for overlap "#bytes iterations coll_us comp_us ovl_us sum_us overlap_% passes". In the
// JSON the arrays "allreduce", "bcast", "reduce", "allgather", "alltoall", "gather",
// "scatter" and "barrier" hold rows with those fields. --json prints one JSON document instead, --json=FILE
// writes it to FILE beside the text. Each JSON row also holds vcsw_per_call and
// ivcsw_per_call: the process's voluntary and involuntary context switches (getrusage,
// every thread's) per timed call, averaged over the ranks; the JSON's gomaxprocs is rank
// 0's GOMAXPROCS after Init (GORMA_PROCS). --cpuprofile FILE writes a CPU profile of each
// rank to FILE.RANK (go tool pprof). bench/mpi/allreducebench.c is the C twin (same flags
// but --scratch and --cpuprofile, method, output and JSON); scripts/compare-allreduce.sh
// runs both side by side under Open MPI and MPICH.
package main
