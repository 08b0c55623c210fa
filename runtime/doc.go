// Package runtime is gorma's MPI-style runtime: a rank's World (rank, size, host),
// typed point-to-point messages, Barrier, and the failure handling around them.
//
// A rank program calls Init, communicates, and calls Finalize:
//
//	w, err := runtime.Init(ctx)        // reads golaunch's GOLAUNCH_* contract
//	if err != nil { ... }
//	next := (w.Rank() + 1) % w.Size()
//	err = runtime.Send(ctx, w, []float64{1, 2, 3}, next, 0)
//	st, err := runtime.Recv(ctx, w, buf, runtime.AnySource, runtime.AnyTag)
//	err = runtime.Barrier(ctx, w)
//	err = w.Finalize(ctx)
//
// Started by golaunch (golaunch -n 4 ./prog), Init joins the job; started on its own, the
// program gets a world of one rank in which everything works (Barrier returns at once, a
// Send to rank 0 is received by a Recv from rank 0).
//
// # What it owns
//
// Init reads the launch contract (pmi.ReadContract), connects to the local agent
// (pmi.Dial), publishes this rank's card (host name, host identity, pid, eager limits)
// under "gorma/card", fences, reads every peer's card, and picks the transport per peer
// in one function (chooseProvider, locality.go): shm when the peer runs on the same host
// — the same launcher host name, and the same kernel boot id, network namespace, pid
// namespace and user, so ranks in different network namespaces count as different hosts
// — and tcp otherwise. golaunch --transport (GOLAUNCH_TRANSPORT) overrides the choice;
// shm with a peer on another host is an ErrTransport error naming the peer. It then opens
// one device per provider in use (the tcp one listening on GOLAUNCH_TCP_ADDR, default
// 127.0.0.1, port 0, authenticated with the job secret from the agent, and given the
// idle-role watch whose descriptors GOLAUNCH_IDLE_WATCH names: tcp.Options.IdleWatch;
// its connections use the congestion control GORMA_TCP_CONGESTION names, cubic by
// default, system for the kernel's: tcp.Options.Congestion),
// creates one queue pair per peer with its eager slots, publishes the endpoints under
// "gorma/ep/<rank>", fences again and connects every queue pair. Init therefore fences twice and Finalize
// once through the agent. The connections are all-to-all and made at Init.
//
// # Messages
//
// Send, Recv, Isend, Irecv, Probe and Iprobe carry slices of fixed-size numbers (Elem),
// with a tag in 0..MaxTag, and match MPI's rules: a receive names a source rank or
// AnySource and a tag or AnyTag; Status reports source, tag, Count (elements) and Bytes;
// two messages from one sender that a receive could both match are received in the
// order they were sent (non-overtaking). Each World has its own communication context
// (Dup makes more), so messages of one never match receives of another, and Barrier's
// messages never match user receives.
//
// Split (MPI_Comm_split) makes Worlds over subsets of the job's ranks, with their own
// rank numbering in every call (split.go): a World made by Split carries its group (the
// job ranks by group rank and the reverse map), and each call translates ranks at the
// World's edge, so the engine below speaks job ranks only. Communication contexts are
// 16-bit: Init's World and its Dups take four each counting up (Dup does not
// communicate, so every rank counts alike); Split agrees among the parent's ranks on a
// block of 32 that none of them uses (each reports a bitmap of its blocks in use) and
// above the highest bottom, and disjoint groups of one Split share the block. A split
// World's Dups come from its block. Free (free.go, MPI_Comm_free) gives a World's
// contexts back: its unreceived messages are discarded, now and on arrival, and each
// rank sends the World's other ranks a free mark; freed contexts are reused (by Dup,
// lowest first, waiting for the marks; by Split, when every rank reports the block free)
// only once every mark has arrived, so no message of the old World reaches the new one.
//
// Sendrecv posts its receive before its send starts (MPI_Sendrecv), so exchanges in pairs
// or rings never deadlock. WaitAny, TestAny, WaitAll and TestAll work on sets of Requests
// (nil entries skipped, as MPI_REQUEST_NULL); WaitAny and TestAny set the entry they
// report to nil. A goroutine parked in WaitAny while another goroutine polls is woken by
// any completion of its set: each Request of the set lists the call's parking token
// (Request.watchers) for that time (multi.go).
//
// Messages up to the eager limit (GORMA_EAGER_LIMIT; default 16 KiB on shm, 64 KiB on
// tcp; the receiver's limit applies) are copied into a registered send slot and land in
// one of the receiver's pre-posted receive slots (eager.go); a Send of such a message
// returns at once. Larger ones use rendezvous (rndv.go): the sender exposes its buffer
// (registration cache, which on shm also backs large buffers with huge pages; each send
// holds a reference on its registration until FIN, and only registrations no send holds
// are evicted, at most 64 and 256 MiB of them kept idle, so any number of rendezvous sends
// may be in flight; where the kernel
// forbids reading its memory, a private copy) and sends RTS; the receiver RDMA-reads straight into its receive buffer and
// answers FIN, which completes the sender. A message that arrives before its receive
// waits in the unexpected queue (eager payloads copied into pooled buffers, rendezvous
// offers as they are). A message to this rank itself is copied, and never blocks. The
// receive slots a rank has handled are posted again in batches, before it next waits or
// once half of a peer's slots are handled, which keeps that work off a message's path.
// Likewise only one message in a quarter of a peer's slots (every 8th with 32 slots) asks
// the provider for a send completion, which frees its slot and those of the messages
// posted before it; at Finalize a peer whose last messages went without one gets a no-op
// message that does.
//
// On shm, a message of at most 4 KiB skips the queue pair altogether (fastbox.go): each
// rank allocates, for every shm peer, a fast box in its arena — a single-producer
// single-consumer ring of 64 cells of 320 bytes, a message taking one cell up to 296
// bytes and several in a row above — and publishes its key with its endpoint;
// the peer maps it at Init. Send writes the message into the box with one copy and a
// release store, and rings the receiver's doorbell (a fence, and a system call only if the
// receiver sleeps); the receiver's poller sees it with one load per peer and matches it
// from the box, again with one copy. No queue-pair or completion-queue lock, no work
// request, no slot to repost. When the box is full, or the message is larger, the queue
// pair carries it, and a count of queue-pair messages in each box cell keeps MPI's
// non-overtaking order across the two paths. Box cells are checked like any message: a
// malformed one fails the peer.
//
// Hot paths allocate nothing: a blocking Send or Recv of an eager message, Barrier, and
// IsendWith/IrecvWith on reused Requests make no allocation in steady state
// (TestZeroAllocs, TestRequestReuse). Isend and Irecv allocate their Request.
//
// # Progress
//
// There is no progress goroutine. The goroutines that call the runtime poll the
// completion queues; at most one at a time (the poller) waits on them, the others park
// until the poller completes their request or hands the role over. How the poller waits
// is GORMA_PROGRESS: spin (poll, yielding the processor: lowest latency when every rank
// has a core), hybrid (spin for GORMA_SPIN, default 50us, then sleep until woken; the
// default; while this rank's rendezvous sends are being read it spins longer, as long as
// copying their bytes at 4 GB/s would take, up to 1 ms, unless the host's ranks
// outnumber its processors) or block (sleep at once). When the host's ranks outnumber its
// processors (World.LocalSize above World.HostCPUs, which golaunch passes in
// GOLAUNCH_HOST_CPUS), a spin may hold the processor the awaited rank needs: a wait for a
// peer bound to this rank's own processor (the endpoint cards carry it; golaunch binds
// such ranks to the cores in turn, --bind-to) gives the processor away at every round
// (sched_yield), a wait for a peer bound elsewhere never does, and any other wait does
// after a few microseconds. Over tcp a hybrid wait on a rank's only connection reads
// the socket itself and tries it for GORMA_SPIN before it sleeps, and that connection's
// goroutine, which serves the peer's requests, tries it for GORMA_SPIN before it sleeps
// while nothing else of the rank runs, unless the host's ranks outnumber its processors. A bad value makes
// Init fail with an ErrConfig error naming the variable and the choices. The runtime
// spins itself, polling every device without holding its lock, and sleeps in the
// device's CQ.Wait (a rank that uses both shm and tcp sleeps through one relay goroutine
// per queue); the spin and the shm CQ's wait also look into the fast boxes, whose senders
// ring the same doorbell as queue-pair messages. A rank whose only
// device is tcp leaves hybrid waiting to tcp's CQ.Wait, whose spin leaves the processor
// to the reader goroutines that deliver tcp's completions. Spinning over tcp needs a
// spare core for those goroutines: with ranks on every core (or GOMAXPROCS=1) a spin
// mode rank sees tcp completions late; use hybrid or block there. Progress happens only while some goroutine of the rank is inside a runtime
// call: a rank that computes for a long time without calling the runtime delays its
// peers' rendezvous sends (not their eager sends, up to the slots available).
//
// # Failures
//
// A peer is failed when its connection fails (its process died or closed its transport:
// the providers report RetryExcErr or flush the queue pair) or when the launcher's agent
// reports it (pmi.ProcFailed, which also covers a hung process or a dead host the network
// has not noticed). From then on every pending and later operation that involves it fails
// with a *ProcError wrapping ErrProcFailed and naming the rank and its host, within the
// detection time of that source; none hangs. Receives from AnySource fail too when any
// peer has failed, unless a matching message is already waiting (ULFM's semantics
// without the acknowledge call; receives from named live sources go on). Barrier fails at
// every rank once any peer has failed: every rank holds a connection to every peer and so
// sees every death, and no rank waits for a live rank that left the barrier with an
// error. An aborted job
// (pmi.Aborted, or this rank's Abort) fails every call with a *ProcError wrapping
// ErrAborted naming the rank that aborted; so does losing the agent's connection outside
// Finalize. Abort tells the agent, which stops every rank, and exits this process with
// the code (in a world of one it only exits).
//
// Every blocking call takes a context: when it ends, the call returns its error (wrapped;
// errors.Is(err, context.Canceled) holds). A receive that has not matched is withdrawn; a
// rendezvous receive whose data is being read waits for the read; a rendezvous send stays
// offered (the receiver may still read the buffer). Errors wrap the sentinels of
// errors.go, to be tested with errors.Is.
//
// # Finalize
//
// Finalize waits until this rank's sends are complete (rendezvous sends read, eager
// sends delivered), then fences through the agent while still serving peers, then closes
// the devices and tells the agent this rank finished. Operations after Finalize fail
// with ErrFinalized (Dup, Sibling, AllocRegion and RegisterRegion included). A Request
// still pending at Finalize fails with ErrFinalized (receives and probes as Finalize
// starts: left posted, they could fail with ErrProcFailed instead when a peer that passed
// the fence closes its transport). A nil World is an ErrInvalid error in every call that
// returns one.
//
// # Concurrency contract
//
// A World, its Requests and every function of this package are safe for concurrent use by
// any number of goroutines (MPI_THREAD_MULTIPLE). One lock per rank (engine.mu, lock.go: a
// compare-and-swap to take it, a plain store to release it) guards the matching queues
// and the peers; it is never held across a wait, and no provider lock is held when it is
// taken. A goroutine that finds it held spins, then yields, then sleeps between tries. Messages sent concurrently by different goroutines to one peer
// with one tag are ordered as the calls took the lock. Buffer ownership: a Send's buffer
// is the caller's again when Send returns; an Isend's or Irecv's buffer belongs to the
// runtime until its Request completes (Wait returned, or Test reported true); a Recv's
// buffer is written only during the Recv. Goroutines and how they stop: the agent event
// watcher and, with two devices, one relay per completion queue, all stopped by Finalize
// (or when the agent connection ends).
package runtime
