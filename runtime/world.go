package runtime

import (
	"context"
	"os"
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
)

// AnySource and AnyTag are wildcards for Recv, Irecv and Probe.
const (
	AnySource = -1
	AnyTag    = -1
)

// MaxTag is the largest tag a message may carry; tags are 0..MaxTag.
const MaxTag = 1<<31 - 1

// World is a rank's view of the job: its rank, the number of ranks, and the communication
// context of its messages. Init returns it; Dup, Split and the others derive Worlds. A
// World is safe for concurrent use.
type World struct {
	e   *engine
	ctx uint16 // user messages; ctx+1 carries the World's internal traffic (Barrier)
	// Every World made by Init or Dup reserves four contexts: ctx and ctx+1 for itself,
	// ctx+2 and ctx+3 for its sibling (Sibling), which has none of its own.
	sibling bool
	k       kind       // what it spans: the job, a group, or two groups (kind.go)
	g       *group     // the ranks its point-to-point calls name: its own, or an intercommunicator's remote group
	own     *group     // its own ranks, this rank's place among them: g, or an intercommunicator's local group
	life    *worldLife // shared with its siblings; nil for Init's World (free.go)
	// calls counts the collective calls its Tracks began (hang.go), made by the first
	// NewTrack; Tracks hold the counter, not the World, which they must not keep alive.
	calls    atomic.Pointer[atomic.Uint64]
	internal atomic.Bool // MarkInternal (hang.go)
	attrs    attrSet     // its name and attributes (attr.go)
	ft       *ftWorld    // its failed members, revoke and agreements, shared with its sibling (ft.go)
}

// Rank is this process's rank, in [0, Size).
func (w *World) Rank() int { return w.own.me }

// Size is the number of ranks of the World: of the job, or of a World made by Split; of
// the local group for an intercommunicator (RemoteSize is the other's).
func (w *World) Size() int { return len(w.own.ranks) }

// Host is the name of this rank's host (the launcher's name for it; the OS host name in a
// world of one).
func (w *World) Host() string { return w.e.host }

// LocalRank is this rank's index among the World's ranks on its host.
func (w *World) LocalRank() int { return w.own.localRank }

// LocalSize is the number of the World's ranks on this rank's host.
func (w *World) LocalSize() int { return w.own.localSize }

// HostCPUs is the number of processors this rank's host gives the job's ranks: the
// union of their affinities, capped by the CPU quota of this rank's cgroup.
func (w *World) HostCPUs() int { return w.e.ncpu }

// HostOf returns the host name of rank r, "" if r is out of range. Under a foreign process
// manager the first call for a node may cost a PMI get.
func (w *World) HostOf(r int) string {
	jr, ok := jobRank(w, r)
	if !ok || jr >= w.e.links.known() {
		return ""
	}
	return w.e.links.hostName(jr)
}

// Transport returns the provider ("shm" or "tcp") that carries messages to rank r, "self"
// for this rank, or "" if r is out of range. It names the provider for people; a layer
// that chooses by the transport reads ReachOf.
func (w *World) Transport(r int) string {
	e := w.e
	r, ok := jobRank(w, r)
	switch {
	case !ok:
		return ""
	case r == e.rank:
		return "self"
	}
	p, _ := e.links.between(e.rank, r)
	return p
}

// TransportBetween returns the transport rank a uses to reach rank b: what Transport(b)
// returns at rank a ("shm" or "tcp", "self" when a == b, "" out of range). Every rank
// computes the same answer, so that a library can agree on the layout without messages.
// It uses the cards all ranks exchanged at Init (under golaunch) or the node map (under
// a foreign process manager), and the job's transport setting. ReachBetween gives the
// same pair's capabilities, which a library chooses by. Package collectives asks whether
// other hosts' ranks share memory (they do not under golaunch --transport tcp). A rank
// alone on its host cannot tell that from its own ReachOf (see collectives'
// TestAllreduceHierUnmappedIsConfigError).
func (s *subWorld) TransportBetween(a, b int) string {
	w := (*World)(s)
	e := w.e
	a, okA := jobRank(w, a)
	b, okB := jobRank(w, b)
	switch {
	case !okA || !okB:
		return ""
	case a == b:
		return "self"
	}
	p, err := e.links.between(a, b)
	if err != nil {
		return ""
	}
	return p
}

// CPUsOf returns the processors rank r may run on, as its card says (its affinity, read
// at its Init), ascending; nil when r is out of range or its card cannot be read. Every
// rank computes the same answer, so that a library can agree on a layout without
// messages (collectives' teams by cache domain). Under a foreign process manager the
// first call for a rank may cost a PMI get.
func (s *subWorld) CPUsOf(r int) []int {
	w := (*World)(s)
	l := &w.e.links
	jr, ok := jobRank(w, r)
	switch {
	case !ok || jr >= l.known():
		return nil
	case l.pm == nil: // a world of one, which exchanged no cards
		if jr == w.e.rank {
			a := affinity()
			return setList(&a)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(l.stop, cmConnectTime)
	defer cancel()
	c, err := l.cardOf(ctx, jr)
	if err != nil {
		return nil
	}
	return setList(&c.cpus)
}

// Connections returns how many ranks of the job this rank holds a connection to. A
// connection is made on first contact (a send, a receive naming the rank, an Attach), so
// right after Init it is 0, and a rank that talks to a few peers holds a few.
func (s *subWorld) Connections() int {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, p := range e.links.peers {
		if p != nil && p.ready {
			n++
		}
	}
	return n
}

// Dup returns a World with the same ranks and a communication context of its own: messages
// sent on one never match receives on the other. Every rank calls Dup the same number of
// times, in the same order relative to its Free calls (MPI_Comm_dup). It does not
// communicate, unless it reuses a freed World's contexts (see Free) or its block is full
// (see Split). At most 16383 Worlds derived from Init's live at once. Attributes whose copy
// functions keep them are copied (NewKeyval).
func (w *World) Dup() (d *World, err error) {
	if err := w.live(); err != nil {
		return nil, withOp("dup", err)
	}
	defer dupAttrs(w, &d, &err) // attr.go: the copy functions run after mu is released
	e := w.e
	e.mu.Lock()
	// Reusing a freed context may wait (dupReuseLocked), and a wait may have taken the
	// poller role: pass it on, or a goroutine parked behind it would not be woken.
	err = e.checkLocked()
	full := false
	if err == nil {
		d, full, err = w.k.dupLocked(w)
	}
	e.poll.handoffLocked()
	e.mu.Unlock()
	if err != nil || !full {
		return d, withOp("dup", err)
	}
	// The block of a split World or an intercommunicator is full: a Split with one color
	// makes the same group again, on a block of its own, with every rank (each makes
	// this Dup at the same point). It waits for the other ranks, as Split does.
	d, err = w.k.split(context.Background(), w, 0, w.Rank())
	return d, withOp("dup", err)
}

// Sibling returns a World with the same ranks as w and a communication context of its
// own that w's determines: messages on one never match receives on the other, and unlike
// Dup's, the context does not depend on the order of calls. So ranks may ask for it at
// different points, from concurrent goroutines. After Finalize (or an abort) it fails as
// every call does. It is meant for a library that keeps its traffic apart from the
// user's (package collectives makes its calls on a World's sibling). Every call returns
// a World on the same context. A sibling has no sibling (ErrInvalid); Dup it instead.
//
// Receives on a sibling fail, as Barrier's do, once any peer has failed, not only when
// their source has. A library's collective call cannot complete without every rank, and a
// rank waiting on a live peer that left the call with the error would wait for ever.
func (s *subWorld) Sibling() (any, error) {
	w := (*World)(s)
	if err := w.live(); err != nil {
		return nil, withOp("sibling", err)
	}
	w.e.mu.Lock()
	err := w.e.checkLocked()
	w.e.mu.Unlock()
	if err != nil {
		return nil, withOp("sibling", err)
	}
	if w.sibling {
		return nil, withOp("sibling", invalidf("a sibling World has no sibling of its own (Dup it)"))
	}
	return &World{e: w.e, ctx: w.ctx + 2, sibling: true, k: w.k, g: w.g, own: w.own, life: w.life, ft: w.ft}, nil
}

// engine is the state a rank's Worlds share. The fields above mu are set at Init and
// only read afterwards, or guard themselves, or belong to a part that documents its lock;
// mu guards every field below it. Each part of the runtime keeps its state in a type of
// its own: poller (progress and waiting), links (peers and connections), comms
// (communication contexts), lifecycle (Init to Finalize), failures, the matching queues,
// rendezvous, rmaState (one-sided), hangWatch (hang reports) and join (Init's connection).
type engine struct {
	rank, size           int
	host                 string
	localRank, localSize int
	ncpu                 int         // processors this host's ranks share (HostCPUs)
	counted              atomic.Bool // counted in subcore's process ranks until its devices close
	pm                   pmi.Session // the process manager: golaunch's agent or a foreign PMI server; nil in a world of one
	exit                 func(code int)
	cfg                  config

	waiting *subcore.Waiting // the waiting rule (hostfit.go), set before the engine starts

	poll poller // the poller role's spin, sleep and wake-up (poller.go)

	// The parts that hold a rank's Worlds' contexts, its life from Init to Finalize, and
	// the failures it knows of. Each documents its lock; what mu guards is marked.
	comms     // methods in free.go, intercomm.go; its allocator in ctxalloc.go
	lifecycle // methods in init.go, world.go
	failures  // methods in failure.go

	mu    engineLock // lock.go
	links links      // peers, connections and devices (links.go)
	match matcher    // matching and request state (matcher.go)
	rma   rmaState   // one-sided substrate (rma.go, rma_ops.go)
	rndv  rendezvous // rendezvous sends and reads (rndv.go, rndv_iov.go)
	watch hangWatch  // blocking waits and Tracks, for hang reports (hang.go)
	bsend bsendBuf   // the buffer of BufferAttach, for Bsend (bsend.go)
	ft    ftState    // fault tolerance: failures per World, Revoke, Agree (ft.go)
	spawn spawner    // the job's growth: Spawn, a spawned rank's Parent, late devices (spawn.go, grow.go)
	obs   observer   // the profile and the timeline of this rank's calls (observe.go)
}

// rendezvous is the part that runs the rendezvous protocol and its layout offers
// (rndv_iov.go): exposing send buffers, RTS, and the reads of an offer. The send path,
// matching and the out-queue call it, with the engine's mu held; it has no state or lock
// of its own. It reaches the peers, the matcher and completion through e.
type rendezvous struct {
	e *engine
}

// hangWatch is the part that keeps what a rank's goroutines are blocked in: the
// engine's blocking waits and the layers' Tracks. The wait path (untilLocked) and the
// Track calls feed it; the event watcher asks it for reports (answerReport). Locks:
// waiting is guarded by the engine's mu; tracks and inner by mu, its own lock, under
// which no other lock is taken. It reads the rank, the process manager and the count
// of completed requests through e.
type hangWatch struct {
	e       *engine
	waiting []*Request // requests of blocking waits under way
	mu      sync.Mutex
	tracks  []*subcore.Track // the upper layers' calls
	inner   map[uint16]bool  // contexts of Worlds marked internal (MarkInternal), by ctx/4
}

// comms is the part that holds a rank's Worlds' contexts: the allocator, the Worlds
// freed with operations under way, Split's lock, Init's World and the job's identity
// group. World's Dup, Split, Create and Free and the kinds call it;
// matching calls it as messages, free marks and completions arrive. It calls down,
// through e, into the matching queues and the send path.
//
// Locks: ctxs and late are guarded by the engine's mu. splitMu is its own, taken before
// mu. root and all are written at Init; only the first Finalize touches root again.
type comms struct {
	e       *engine
	ctxs    ctxAlloc            // communication contexts: handed out, freed, awaiting marks
	late    map[uint16]lateFree // Worlds freed with operations under way, by context (free.go)
	splitMu sync.Mutex          // one Split at a time (split.go)
	root    *World              // Init's World, until Finalize
	all     *group              // every rank of the job: the groups of whole Worlds (kind.go)
}

// lifecycle is the part that holds a rank's life from Init to Finalize: the engine's
// goroutines (start), the context that ends them, and Finalize's progress. Init and
// Finalize call it; it calls down, through e, into the devices, the process manager and
// the wait path. over and atExit are atomic; finalizing, finalized and quietWait are
// guarded by the engine's mu; stop, halt and bg are set at Init.
type lifecycle struct {
	e          *engine
	stop       context.Context // ends at Finalize: stops relays and the event watcher
	halt       context.CancelFunc
	bg         sync.WaitGroup // the engine's goroutines (start, fenceLocked)
	over       atomic.Bool    // Finalize has begun (Finalized): set with finalizing, never cleared
	atExit     atomic.Bool    // Finalize has run Init's World's attribute delete functions
	finalizing bool
	finalized  bool
}

// failures is the part that holds what this rank knows of failures: the first failed
// peer and the abort. The transport's completions, the connection manager and the
// launcher's events (watchEvents) report to it; it fails what waits, calling down,
// through e, into the peers and the matching queues. Its fields are guarded by the
// engine's mu.
type failures struct {
	e       *engine
	failed  *ProcError    // the first failed peer, or the one the launcher names (AnySource receives fail with it)
	aborted *ProcError    // the job is aborting: every call fails with it
	watched bool          // the agent's events are watched (watchEvents): failures may be held
	heard   bool          // the agent has told of a failure (pmi.ProcFailed, pmi.Aborted)
	held    []heldFailure // peer failures the transport saw, awaiting the agent's word (holdLocked)
}

// checkLocked returns the error every call must fail with, or nil.
func (e *engine) checkLocked() error {
	switch {
	case e.finalized:
		return ErrFinalized
	case e.aborted != nil:
		return e.aborted
	}
	return nil
}

// check is checkLocked for a caller that does not hold mu: AllocRegion and
// RegisterRegion fail with ErrFinalized (or the abort) rather than with the closed
// device's ErrTransport.
func (e *engine) check() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.checkLocked()
}

// Finalize ends this rank's part in the job. It runs the delete functions of Init's World's
// attributes, waits until this rank's sends have completed and every rank has reached
// Finalize (serving peers meanwhile), closes the transport and tells the launcher that this
// rank finished cleanly. Receives pending at its start, and sends pending at its end,
// fail with ErrFinalized. Later calls fail with
// ErrFinalized; a second Finalize returns nil. If ctx ends first, Finalize returns its error
// and the World is left unusable.
func (w *World) Finalize(ctx context.Context) error {
	if w == nil {
		return withOp("finalize", errNilWorld)
	}
	e := w.e
	// MPI's at-exit hook: the delete functions of Init's World's attributes run first,
	// while every call still works.
	if e.atExit.CompareAndSwap(false, true) {
		if r := e.root; r != nil {
			e.root = nil // the engine outlives the World: let it go
			deleteAttrs(r)
			e.obs.finish(ctx, r)
		}
	}
	e.mu.Lock()
	if e.finalized || e.finalizing {
		e.mu.Unlock()
		return nil
	}
	e.finalizing = true
	e.over.Store(true)
	// Receives and probes still posted fail now, with ErrFinalized, as documented. Left
	// posted until the end, they could instead fail with ErrProcFailed: a peer that has
	// passed the fence closes its transport, which this rank sees as its connection
	// failing (over tcp, WRFlushErr) while it still waits for the fence itself.
	e.failQueueLocked(&e.match.posted, -1, ErrFinalized)
	e.failQueueLocked(&e.match.probes, -1, ErrFinalized)
	err := e.drainLocked(ctx)
	if _, pushes := e.pm.(eventSource); err == nil && e.pm != nil && e.ft.on && !pushes {
		err = e.ft.fenceLocked(ctx) // a foreign PM's fence would wait for the dead
	} else if err == nil && e.pm != nil {
		err = e.fenceLocked(ctx)
	}
	e.finalized = true
	e.failAllLocked(ErrFinalized)
	e.mu.Unlock()

	e.shutdown()
	if e.pm != nil {
		if err == nil {
			if ferr := e.pm.Finalize(ctx); ferr != nil {
				err = agentErr(ferr)
			}
		}
		e.pm.Close()
	}
	e.bg.Wait()
	e.obs.mergeTimeline(e.rank) // at the gatherer, while the other ranks exit (observe_out.go)
	if err != nil {
		return withOp("finalize", err)
	}
	return nil
}

// Finalized reports whether Finalize has begun on w's job: one atomic load. A layer that
// touches mapped memory (package window) checks it first and fails instead of faulting.
func (w *World) Finalized() bool { return w.e.over.Load() }

// Abort aborts the job: it tells the launcher (which stops every rank and exits with
// code, printing msg in its summary line; under Slurm, Hydra or Flux, PMI abort) and then
// exits this process with code. It does not return. In a world of one it only exits.
func (w *World) Abort(code int, msg string) {
	e := w.e
	e.mu.Lock()
	if e.aborted == nil {
		e.aborted = &ProcError{Rank: e.rank, Host: e.host, Err: ErrAborted, Why: abortWhy(code, msg), Cause: abortCause(code, msg)}
		e.failAllLocked(e.aborted)
	}
	e.mu.Unlock()
	e.poll.kick()
	if e.pm != nil {
		e.pm.Abort(code, msg)
	}
	e.exit(code)
}

func osExit(code int) { os.Exit(code) }

// drainLocked waits (making progress) until nothing this rank sent is outstanding.
func (l *lifecycle) drainLocked(ctx context.Context) error {
	e := l.e
	r := e.match.newRequestLocked(e, reqSync)
	err := e.untilLocked(ctx, r, true, nil)
	e.match.recycleLocked(r)
	return err
}

// fenceLocked waits until every rank has fenced through the agent, serving peers (making
// progress) meanwhile, so that a peer that still waits for this rank's FIN, or for room
// in this rank's receive slots, is not stuck behind the fence.
func (l *lifecycle) fenceLocked(ctx context.Context) error {
	e := l.e
	r := e.match.newRequestLocked(e, reqSync)
	cl := e.pm
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		err := agentErr(cl.Fence(ctx))
		e.mu.Lock()
		e.completeLocked(r, err)
		e.poll.kickLocked()
		e.mu.Unlock()
	}()
	err := e.waitLocked(ctx, r)
	if err == nil {
		err = r.err
	}
	return err
}
