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
// Started by golaunch (golaunch -n 4 ./prog), Init joins the job: it connects to the
// local agent (package pmi), exchanges cards in one fence and opens the transports, shm
// for peers on the same host and tcp otherwise. A pair of ranks connects on first
// contact. Started by Slurm (srun --mpi=pmi2), MPICH's Hydra (mpiexec.hydra) or Flux, it
// does the same through their PMI server (PMI-1 or PMI-2) with one fence and a few PMI
// round trips whatever the job's size. Started on its own, the program gets a world of
// one rank in which everything works (under a launcher without PMI-1 or PMI-2, rank 0
// says so on stderr). World.Listen and World.Dial give ranks net.Conn streams to each
// other, for net/rpc, gRPC or net/http code.
//
// # Messages and communicators
//
// Send, Recv, Isend, Irecv, Sendrecv, Probe and Iprobe carry slices of fixed-size numbers
// (Elem) with a tag in 0..MaxTag, and follow MPI's matching rules. A receive names a source or
// AnySource and a tag or AnyTag, Status reports source, tag and size, and two messages from one
// sender that a receive could both match arrive in the order sent. WaitAny, WaitAll, WaitSome
// and their Test forms work on sets of Requests (nil entries skipped). The other MPI send modes
// (Ssend, Bsend with BufferAttach, Rsend), Isendrecv, Mprobe and Mrecv, Cancel, Free and
// persistent Requests (SendInit, RecvInit, Start) are here too, and ProcNull is a peer whose
// operations complete at once. SendType, RecvType, SendrecvType and their I forms carry
// datatype layouts. Each World has its own context: Dup makes another over the same ranks,
// Split, Create and CreateGroup one over a subset or a Group (World.Group, with MPI's set
// operations), SplitShared one per host, and Free gives a World's contexts back.
// CreateIntercomm joins two disjoint groups in an intercommunicator, whose point-to-point calls
// name the other group's ranks (Merge makes one World of both). A World has a name (SetName)
// and attributes (NewKeyval, SetAttr, GetAttr) whose copy functions run at Dup and delete
// functions at Free.
//
// Small messages go eagerly (GORMA_EAGER_LIMIT) and a Send of one returns at once; large
// ones go by rendezvous, read by the receiver straight into its buffer. There is no
// progress goroutine: the goroutines inside runtime calls drive progress, waiting as
// GORMA_PROGRESS says (spin, hybrid or block). A blocking Send or Recv of an eager
// message, Barrier, and IsendWith/IrecvWith on reused Requests allocate nothing in steady
// state. design.md describes Init's wiring, the message paths, progress and failure.
//
// # Errors and failure
//
// Errors wrap the sentinels of errors.go (ErrInvalid, ErrConfig, ErrTruncated,
// ErrFinalized, ...), to be tested with errors.Is. Every blocking call takes a context;
// when it ends the call returns its error. A peer that dies, or that the agent reports
// failed, fails every pending and later operation that involves it with a *ProcError
// wrapping ErrProcFailed, naming the rank and its host; receives from AnySource and
// Barrier fail too. An aborted job (Abort, or another rank's) fails every call with a
// *ProcError wrapping ErrAborted. A ProcError's text leads with the rank, its host and
// what became of it ("rank 1 on host vm failed: exited with code 3"); what the transport
// saw stays in its chain (errors.Is, errors.As) and is printed only with GORMA_VERBOSE=1.
// After Finalize every call but Free fails with ErrFinalized; a nil World is ErrInvalid.
//
// # Layers above: Tracks
//
// Packages collectives and window name their calls in hang reports with a Track
// (World.NewTrack: Next, BeginSig with a CallSig, End); under GORMA_CHECK=1, Check
// compares a CallSig across the ranks and fails a mismatch at every rank (MismatchError).
//
// # Concurrency contract
//
// A World, its Requests and every function of this package are safe for concurrent use
// by any number of goroutines (MPI_THREAD_MULTIPLE). Messages sent concurrently by
// different goroutines to one peer with one tag are ordered as the calls took the
// engine's lock. Buffer ownership: a Send's buffer is the caller's again when Send
// returns; an Isend's or Irecv's buffer belongs to the runtime until its Request
// completes (Wait returned, or Test reported true); a Recv's buffer is written only
// during the Recv. Goroutines and how they stop: the agent event watcher (golaunch only),
// with two devices one relay per completion queue, and the connection listener with a
// goroutine per connection being made, all stopped by Finalize (or when the agent
// connection ends).
package runtime
