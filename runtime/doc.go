// Package runtime is gorma's MPI-style runtime: a rank's World (rank, size, host), typed
// point-to-point messages, communicators, Barrier, and the failure handling around them.
//
// A rank program calls Init, communicates, and calls Finalize:
//
//	w, err := runtime.Init(ctx)        // golaunch's contract, else a PMI server
//	if err != nil { ... }
//	next := (w.Rank() + 1) % w.Size()
//	err = runtime.Send(ctx, w, []float64{1, 2, 3}, next, 0)
//	st, err := runtime.Recv(ctx, w, buf, runtime.AnySource, runtime.AnyTag)
//	err = runtime.Barrier(ctx, w)
//	err = w.Finalize(ctx)
//
// Init joins the job through golaunch's agent or a PMI server (Slurm, Hydra, Flux); a
// program started on its own gets a world of one rank. World.Listen and World.Dial give
// ranks net.Conn streams to each other.
//
// # Messages and communicators
//
// Send, Recv, Sendrecv, Probe, their I- forms, the send modes, Mprobe, Cancel and
// persistent Requests carry slices of numbers (Elem) by MPI's matching rules; SendType
// and RecvType carry datatype layouts. Dup, Split, Create, CreateGroup, SplitShared and
// CreateIntercomm make Worlds with contexts of their own; Free gives them back.
//
// Ranks reach each other over shm on one host and tcp otherwise. Small messages go
// eagerly (GORMA_EAGER_LIMIT), large ones by rendezvous. GORMA_PROFILE and GORMA_TRACE
// record the calls (TraceRegion).
//
// # Errors and failure
//
// Errors wrap the sentinels (ErrInvalid, ErrProcFailed...) for errors.Is. A dead peer
// fails every operation that needs it with a *ProcError, and the launcher aborts the job;
// under GORMA_FT=1 (golaunch --ft) Revoke, GetFailed, AckFailed, Agree and Shrink recover.
//
// # Concurrency contract
//
// A World, its Requests and every function of this package are safe for concurrent use
// (MPI_THREAD_MULTIPLE). Messages sent concurrently to one peer with one tag are ordered
// as the calls took the engine's lock. A Send's buffer is the caller's again when Send
// returns; an Isend's or Irecv's belongs to the runtime until its Request completes.
package runtime
