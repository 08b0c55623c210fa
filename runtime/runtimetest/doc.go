// Package runtimetest runs the ranks of a job as goroutines of one process, for fast tests
// of packages built on the runtime (runtime itself, collectives, window).
//
// Start serves the PMI protocol on a socket in a fresh temporary directory with a Handler
// backed by pmi.NewExchange, and initializes n ranks through the runtime's own Init path,
// each with a GOLAUNCH_* contract of its own (a getenv function, not the process
// environment). Ranks may be placed on different pretend hosts (Options.Hosts): a host
// name of their own and a host identity salt, so that the runtime picks tcp between them
// and shm within each, as it would across real hosts. Run does all of this inside a test
// and finalizes every rank.
//
//	runtimetest.Run(t, 4, runtimetest.Options{Transport: "tcp"}, func(w *runtime.World) error {
//		return runtime.Barrier(ctx, w)
//	})
//
// The fake agent behaves like golaunch's towards the ranks: a rank whose PMI connection
// ends without Finalize is reported to every other rank as failed (pmi.ProcFailed) and
// fails pending fences; Abort is broadcast as pmi.Aborted. It is no substitute for tests
// through the real golaunch: processes, signals and exit codes are not involved.
//
// # Concurrency
//
// A Job is safe for concurrent use. Its Worlds are independent ranks: use each from its
// own goroutines, as separate processes would.
package runtimetest
