// Command scalebench measures what a job costs as its rank count grows on one host:
// startup, Barrier, Allreduce of 8 B and 1 MiB, a window's allocation, and the memory,
// descriptors and shared memory the job holds at its peak.
//
//	golaunch -n 64 ./bin/scalebench
//	golaunch -n 256 --tag-output=false ./bin/scalebench --launch-ns $(date +%s%N) \
//	    --shm-base-kb $(awk '/^Shmem:/ {print $2}' /proc/meminfo) --json=scale.json
//
// Phases, after runtime.Init: --iters Barriers, --iters Allreduces of 8 B and --big-iters
// of 1 MiB (float64 sum, checked), each preceded by 3 untimed calls and each call followed
// by an untimed Barrier (as osu_allreduce), every rank timing each call on its own clock.
// Then window.Allocate of --window-size bytes per rank, this rank's memory filled
// (untimed, so that every page is in use whichever way the runtime zeroes it) and one
// Fence. Then the peak point: between two Barriers every rank reads its VmHWM, RssAnon and
// RssShmem (/proc/self/status) and counts its descriptors (/proc/self/fd), and rank 0
// reads the host's Shmem (/proc/meminfo) while every other rank waits in the second
// Barrier. Then Free. Each rank sends its figures to rank 0 (collectives.Gather), which
// prints each figure's median and maximum over the ranks, then every rank calls Finalize.
//
// The figures: startup_s, from the job's launch to Init returned on the wall clock (the
// launch is --launch-ns, taken by the script just before it starts the launcher;
// without it, the earliest rank's process start, which leaves out the launcher's own
// start-up). init_s, from this process's start to Init returned. barrier_us,
// allreduce_8_us and allreduce_1m_us, a rank's mean per call. win_allocate_us (Allocate
// plus the Fence) and win_free_us. vmhwm_kb, the rank's peak resident set, which counts
// every shared page it touched, so that summing it over ranks counts shared memory once
// per rank. rss_anon_kb, its private anonymous memory at the peak point (heap, stacks:
// counted once). rss_shmem_kb, the shared memory resident in it. fds, its open
// descriptors at the peak point. Shared memory per host is shmem_kb: Shmem at the peak
// point minus the baseline, --shm-base-kb as the script read it before the launch, or
// without it the least of the ranks' readings before their Init. Shmem counts tmpfs and
// /dev/shm files, memfd and SysV segments and shared anonymous mappings in use: it is
// the host's, so anything else on the host that grows or frees shared memory during the
// job moves it.
//
// Output at rank 0: a header and a table "figure median max"; --json prints one JSON
// line instead, --json=FILE writes it to FILE beside the text. bench/mpi/scalebench.c is
// the C twin (same flags, phases and JSON); scripts/compare-scale.sh runs both at 8 to
// 256 ranks under golaunch, Open MPI and MPICH, and adds the job's wall time from launch
// to exit.
package main
