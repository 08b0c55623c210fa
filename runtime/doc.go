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
// program started on its own gets a world of one rank. Ranks reach each other over shm on
// one host and tcp otherwise, connecting on first contact. World.Listen and World.Dial
// give ranks net.Conn streams to each other.
//
// # Messages and communicators
//
// Send, Recv, Isend, Irecv, Sendrecv, Probe and Iprobe carry slices of fixed-size numbers
// (Elem) with a tag in 0..MaxTag, by MPI's matching rules: two messages from one sender
// that a receive could both match arrive in the order sent. WaitAny, WaitAll, WaitSome and
// their Test forms work on sets of Requests. The other send modes (Ssend, Bsend, Rsend),
// Mprobe and Mrecv, Cancel and persistent Requests (SendInit, RecvInit, Start) are here
// too; ProcNull is a peer whose operations complete at once. SendType, RecvType and their
// forms carry datatype layouts. Dup, Split, Create, CreateGroup and SplitShared make
// Worlds with contexts of their own, over a Group of ranks; Free gives them back.
// CreateIntercomm joins two groups in an intercommunicator. A World has a name and
// attributes (NewKeyval, SetAttr, GetAttr).
//
// Small messages go eagerly (GORMA_EAGER_LIMIT); large ones by rendezvous, read by the
// receiver straight into its buffer. There is no progress goroutine: the goroutines inside
// runtime calls drive progress, waiting as GORMA_PROGRESS says. A blocking Send or Recv of
// an eager message, Barrier, and IsendWith/IrecvWith allocate nothing in steady state.
// design.md describes Init's wiring, the message paths, progress and failure. Package
// runtime/substrate is what the layers above (window, collectives) use beyond this API.
//
// # Errors and failure
//
// Errors wrap the sentinels ErrInvalid, ErrConfig, ErrTruncated, ErrFinalized and others,
// for errors.Is. Every blocking call takes a context and returns its error when it ends. A
// peer that dies, or that the agent reports failed, fails every operation that involves
// it with a *ProcError wrapping ErrProcFailed; so do receives from AnySource and Barrier.
// An aborted job fails every call with a *ProcError wrapping ErrAborted. After Finalize
// every call but Free fails with ErrFinalized; a nil World is ErrInvalid.
//
// # Concurrency contract
//
// A World, its Requests and every function of this package are safe for concurrent use
// (MPI_THREAD_MULTIPLE). Messages sent concurrently to one peer with one tag are ordered
// as the calls took the engine's lock. A Send's buffer is the caller's again when Send
// returns; an Isend's or Irecv's belongs to the runtime until its Request completes. The
// runtime's goroutines (the agent's event watcher, completion relays, the connection
// listener) stop at Finalize.
package runtime
