package collectives

import (
	"context"
	"fmt"
	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/trace"
	"os"
	"reflect"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// state is what the collectives keep per World: the communication context they use (a
// Dup of the user's World, so collective messages never match user receives), the call
// sequence number that tags each call's messages, reusable Requests and scratch buffers.
//
// Calls on one World are sequential (the package's concurrency contract); busy catches a
// second goroutine entering while a call is running, which would otherwise deadlock or
// mix two calls' messages. Nonblocking calls wait in q and run one at a time on its
// worker, through begin as any call; a blocking call waits in begin for the calls queued
// before it (queue.go). A persistent Request's calls run on a state of its own, with its
// own q (persistent_match.go).
//
// A state does not keep its World alive: user is weak, and when the World becomes
// unreachable its cleanup (forget, state_cleanup.go) drops the state and releases its
// shared-memory scratch.
type state struct {
	user       weak.Pointer[runtime.World] // the World of the calls (zero for a sub-group)
	comm       *runtime.World
	rank, size int
	force      algo  // GORMA_ALLREDUCE, algoAuto if unset
	cfgErr     error // a bad GORMA_ALLREDUCE, returned by every Allreduce

	busy  uint32                // 1 while a call runs: taken by CAS in open, given back by releaseBusy
	q     queue                 // the nonblocking (or a persistent Request's) calls started and not finished (queue.go)
	pers  persistentSet         // the World's persistent Requests (persistent_match.go)
	seq   uint32                // calls made on this World; guarded by busy
	track *substrate.Track      // names the call under way in hang reports (nil for a sub-group)
	sigs  [4]*substrate.CallSig // recent calls' signatures, never changed (Track.BeginSig); guarded by busy
	kinds [4]uint8              // hostgroup.Kind of each of sigs' calls
	sigAt uint8                 // the entry of sigs that the next new signature replaces
	cur   call                  // the call in progress (begin, or sub for a sub-group), passed by pointer

	reqs    []*runtime.Request // reusable; replaced after a failed call
	scratch [2][]uint64        // reusable scratch; replaced after a failed call

	ranks      []int        // a sub-group's World ranks by member index (nil: the World itself)
	local      *localState  // locality and shared-memory scratch (allreduce_hier.go), made on first use
	push       *pushScratch // allreduceDirect's scratch in its push form (allreduce_direct_push.go)
	noZeroCopy int8         // no pair of members has substrate.ReachZeroCopy (tcp): 1 yes, -1 no, 0 not known yet

	obs        *substrate.Obs       // this rank's observer (substrate.Observe), nil when off or for a sub-group
	internal   bool                 // the World is a layer's own (substrate.MarkInternal): its calls are not the user's (observe.go)
	ln         *prof.Local          // obs's counts of this state's calls, which busy serializes (nil: profile off)
	bt         *trace.Batch         // obs's events of this state's calls (nil: timeline off); guarded by busy, flushed in waits (the host group's, through call.Flush)
	members    []int                // the job ranks of the World's ranks, for obs (nil: Init's World)
	ob         callObs              // the observation of the call in progress (observe.go); guarded by busy
	labels     map[[2]string]uint16 // the timeline's labels by call and algorithm (observe.go); guarded by busy
	recent     [4]recentLabel       // the labels found most recently (observe.go); guarded by busy
	nextRecent uint8                // the entry of recent that the next label found replaces
}

// world returns the World rank of member r (the rank itself unless s is a sub-group).
func (s *state) world(r int) int {
	if s.ranks == nil {
		return r
	}
	return s.ranks[r]
}

// states maps a user's World, by weak pointer, to its *state; lastState is the state of
// the World used last, which saves the map lookup when one World makes call after call.
//
// Neither keeps a World alive: the key is weak, the state's user is weak, and a cleanup on
// the World (forget) deletes its entry and clears lastState if it holds the state.
// Holding the World itself, as the key and as state.user, kept every World that ever made
// a collective call (a Dup'd World, the Worlds of finished in-process jobs) reachable for
// the process's life, with its Sibling, its rank's engine and its shared-memory scratch
// (TestLeakDupWorlds).
var (
	states    stateMap
	lastState atomic.Pointer[state]
)

// stateMap maps weak pointers to Worlds to their states. Its methods are safe for
// concurrent use.
type stateMap struct {
	m sync.Map // weak.Pointer[runtime.World] -> *state
}

// Load returns w's state, if it has one.
func (m *stateMap) Load(w *runtime.World) (*state, bool) { return m.load(weak.Make(w)) }

func (m *stateMap) load(key weak.Pointer[runtime.World]) (*state, bool) {
	s, ok := m.m.Load(key)
	if !ok {
		return nil, false
	}
	return s.(*state), true
}

// loadOrStore returns key's state if it has one (loaded), and otherwise stores s.
func (m *stateMap) loadOrStore(key weak.Pointer[runtime.World], s *state) (actual *state, loaded bool) {
	a, loaded := m.m.LoadOrStore(key, s)
	return a.(*state), loaded
}

// delete deletes key's entry if it holds s.
func (m *stateMap) delete(key weak.Pointer[runtime.World], s *state) { m.m.CompareAndDelete(key, s) }

// stateOf returns w's state (w non-nil), making it on first use, with w's Sibling as the
// World of its messages: a context of its own that w determines, so that ranks agree on
// it whatever the order in which their goroutines first call on their Worlds.
//
// The fast path compares lastState's user with w through the weak pointer (one
// dereference, no allocation), not by address. A dropped World's memory may hold a new
// World before the dropped one's cleanup has cleared lastState, and the weak pointer,
// cleared before that memory is reused, tells the two apart.
func stateOf(w *runtime.World) (*state, error) {
	if s := lastState.Load(); s != nil && s.user.Value() == w {
		return s, nil
	}
	key := weak.Make(w)
	if s, ok := states.load(key); ok {
		lastState.Store(s)
		return s, nil
	}
	c, err := substrate.Sibling(w)
	if err != nil {
		return nil, err
	}
	mine := &state{user: key, comm: c, rank: w.Rank(), size: w.Size(), track: substrate.NewTrack(w)}
	mine.obs, mine.members = substrate.Observe(w)
	mine.internal = mine.track.Internal()
	mine.ln, mine.bt = mine.obs.NewLocal(), mine.obs.NewBatch()
	mine.force, mine.cfgErr = parseAllreduceEnv(os.Getenv(EnvAllreduce))
	s, loaded := states.loadOrStore(key, mine)
	if loaded {
		mine.track.Close() // another goroutine's state won
		mine.obs.DropBatch(mine.bt)
	} else {
		// s reaches w only through the weak pointer, and c shares w's engine but not w.
		goruntime.AddCleanup(w, forget, stateEntry{key: key, s: s})
	}
	lastState.Store(s)
	// w stays reachable until its state is in lastState, so that its cleanup, which
	// clears lastState, cannot run before this Store.
	goruntime.KeepAlive(w)
	return s, nil
}

// call is one collective call in progress: its state, context, name and message tag.
// The World it was made on (w), which end keeps reachable until the call is over: the
// collective functions need only c after begin. A World collected in the middle of a
// call would have its state's scratch released under it (forget).
//
// A call lives in its state (state.cur; a sub-group's call in the sub-group's state, see
// sub) and the functions pass it by pointer: by value, its seven words would be copied at
// every level of the call chain. The first copy of one just built field by field stalls
// on a failed store forward, which a short Allreduce feels (`go test -bench Allreduce8B
// ./collectives` measures it).
type call struct {
	s    *state
	w    *runtime.World // nil for a sub-group's call within a call
	ctx  context.Context
	name string
	tag  int   // the call's number with its kind (kindTag) and root (rootTag) mixed in
	kind uint8 // the call's kind as the shared-memory meta word carries it (hostgroup.Kind)
	root int   // the call's root, -1 for none
}

// begin starts the collective name on w. Every rank must pass the same count of elements (-1:
// the ranks' counts may differ) of type typ ("" for none), operator (op, "" for none) and root
// (-1 for none). That is the call's signature, which hang reports show and which GORMA_CHECK=1
// compares across the ranks before the call runs (substrate.Track.Check). A call made while
// nonblocking calls started before it are unfinished waits for them, unless it is one of them,
// run by the World's worker (ctx is its jobCtx), whose name (Iallreduce...) and number (taken
// at its start) it then takes. A persistent call runs on its Request's state (jobCtx.own). When
// the rank observes its calls, begin starts observing this one and end records it
// (observe.go). The caller must call c.end.
func begin(ctx context.Context, w *runtime.World, name string, count int, typ, op string, root int) (*call, error) {
	s, tracked, seq, err := open(ctx, w, name)
	if err != nil {
		return nil, err
	}
	if s.obs != nil {
		s.ob = s.beginObs(name, tracked)
	}
	if seq == 0 {
		seq = s.track.Next()
	}
	sig, k := s.signature(tracked, count, typ, op, root)
	s.cur.kind, s.cur.root = s.kinds[k], root
	s.cur.tag = kindTag(s.cur.tag, s.cur.kind) // calls of different kinds never match
	s.track.BeginSig(sig, seq)
	if err := s.track.Check(ctx, seq, sig); err != nil {
		return nil, s.cur.end(err)
	}
	return &s.cur, nil
}

// open makes name the call in progress on w's state (s.cur), with what every collective
// call does first: it checks w, waits for the rank's unfinished nonblocking calls on w
// and marks the state busy. For a nonblocking call run by the World's worker it returns
// the name and number the call took at its start (tracked, seq); else name's tracked
// name and 0.
func open(ctx context.Context, w *runtime.World, name string) (s *state, tracked string, seq uint64, err error) {
	if w == nil {
		return nil, "", 0, fmt.Errorf("collectives: %s: %w: nil World", name, runtime.ErrInvalid)
	}
	if err := substrate.FreedErr(w); err != nil {
		return nil, "", 0, fmt.Errorf("collectives: %s: %w", name, err)
	}
	if w.IsInter() {
		return nil, "", 0, errNotInter(name)
	}
	s, err = stateOf(w)
	if err != nil {
		return nil, "", 0, fmt.Errorf("collectives: %s: %w", name, err)
	}
	if j, ok := ctx.(*jobCtx); ok && j.own != nil {
		s = j.own // a persistent call runs on its Request's state
	}
	tracked = trackName(name)
	if s.q.n.Load() != 0 {
		if j := s.q.job(ctx); j != nil {
			// Iallreduce, AllreduceInit...: MPI matches them only with their kind. The
			// number is the one the call took when it was started.
			tracked, seq = j.call, j.seq
		} else if err := s.q.waitIdle(ctx); err != nil {
			// Started earlier at this rank, the nonblocking calls come first.
			return nil, "", 0, fmt.Errorf("collectives: %s: rank %d waiting for its nonblocking calls on this World: %w", name, s.rank, err)
		}
	}
	if !atomic.CompareAndSwapUint32(&s.busy, 0, 1) {
		return nil, "", 0, fmt.Errorf("collectives: %s: %w: another collective call is running on this World", name, ErrConcurrent)
	}
	s.seq++
	s.cur = call{s: s, w: w, ctx: ctx, name: name, tag: int(s.seq & runtime.MaxTag), root: -1}
	return s, tracked, seq, nil
}

// signature returns the call's signature: one of s.sigs when a recent call had it, or a
// new one (reports may be reading an old one: a signature never changes). A program
// that alternates a few calls (an Allreduce and a Barrier, say) allocates none in steady
// state: an allocation per call costs a spinning rank far more than its own time (`go
// test -run ZeroAllocs ./collectives` checks it, `bin/allreducebench` measures it).
func (s *state) signature(name string, count int, typ, op string, root int) (*substrate.CallSig, int) {
	for i, g := range s.sigs {
		if g != nil && g.Call == name && g.Count == count && g.Type == typ && g.Op == op && g.Root == root {
			return g, i
		}
	}
	// A copy of op: keeping the caller's string would make escape analysis move every Op
	// (its functions included) to the heap, at every call.
	g := &substrate.CallSig{Call: name, Count: count, Type: typ, Op: strings.Clone(op), Root: root}
	i := int(s.sigAt)
	s.sigs[i], s.kinds[i] = g, hostgroup.Kind(name)
	s.sigAt = (s.sigAt + 1) % uint8(len(s.sigs))
	return g, i
}

// typeName names the element type T in call signatures: a constant for the predeclared
// types, reflect's name (which costs a lookup at every call) for types defined on them.
func typeName[T runtime.Elem]() string {
	switch any(*new(T)).(type) {
	case float64:
		return "float64"
	case float32:
		return "float32"
	case int64:
		return "int64"
	case int32:
		return "int32"
	case uint64:
		return "uint64"
	case uint32:
		return "uint32"
	case int8:
		return "int8"
	case int16:
		return "int16"
	case uint8:
		return "uint8"
	case uint16:
		return "uint16"
	case complex64:
		return "complex64"
	case complex128:
		return "complex128"
	}
	return reflect.TypeFor[T]().String()
}

// blockOf returns the elements each rank contributes to a gathering call: len(mine),
// or, in place (mine nil), len(all)/Size().
func blockOf[T runtime.Elem](w *runtime.World, mine, all []T) int {
	if mine != nil || w == nil {
		return len(mine)
	}
	return len(all) / w.Size()
}

// inputLen returns the length of a rank's input: send, or recv in place (send nil).
func inputLen[T runtime.Elem](send, recv []T) int {
	if send == nil {
		return len(recv)
	}
	return len(send)
}

// trackName is the name a hang report gives the collective begin calls name.
func trackName(name string) string {
	switch name {
	case "allgather":
		return "Allgather"
	case "allgatherv":
		return "Allgatherv"
	case "allreduce":
		return "Allreduce"
	case "alltoall":
		return "Alltoall"
	case "alltoallv":
		return "Alltoallv"
	case "barrier":
		return "Barrier"
	case "bcast":
		return "Bcast"
	case "exscan":
		return "Exscan"
	case "gather":
		return "Gather"
	case "reduce":
		return "Reduce"
	case "reduce_scatter":
		return "ReduceScatter"
	case "scan":
		return "Scan"
	case "scatter":
		return "Scatter"
	case "gatherv":
		return "Gatherv"
	case "scatterv":
		return "Scatterv"
	case "reduce_scatter_v":
		return "ReduceScatterV"
	case "alltoallw":
		return "Alltoallw"
	case "allreduce_loc":
		return "AllreduceLoc"
	case "reduce_loc":
		return "ReduceLoc"
	case "reduce type":
		return "ReduceType"
	case "allreduce type":
		return "AllreduceType"
	}
	return name
}

// end finishes the call and wraps err with the collective's name. After a failure the
// call's Requests and scratch may still be in the runtime's hands (a receive withdrawn
// too late, a rendezvous send still offered), so they are dropped, not reused.
func (c *call) end(err error) error { return c.close(err, true) }

// close is end; numbered is false for a call that took no number, report or observation
// of its own (beginPart).
func (c *call) close(err error, numbered bool) error {
	if err != nil {
		c.s.reqs = nil
		c.s.scratch = [2][]uint64{}
		if c.s.local != nil {
			c.s.local.fail()
		}
		c.s.failPush() // set up again at the next call
		err = fmt.Errorf("collectives: %s: %w", c.name, err)
	}
	s, w := c.s, c.w
	if numbered && s.ob.c.On() {
		s.record()
	}
	// The states must keep neither the World (its cleanup is what frees them) nor ctx:
	// clear this call (*c is s.cur) and those sub made on the sub-groups.
	s.eachState(clearCall)
	if numbered {
		s.track.End()
	}
	releaseBusy(&s.busy)
	goruntime.KeepAlive(w)
	return err
}

// overlap reports whether send and recv share memory (empty slices share none). A
// collective's send and recv must not overlap unless send is nil (in place): the
// algorithms read send while they write recv, and some (direct, shm) read send after
// writing recv, so an overlap would give a wrong result silently.
func overlap[T runtime.Elem](send, recv []T) bool {
	if len(send) == 0 || len(recv) == 0 {
		return false
	}
	es := uintptr(elemSize[T]())
	s, r := uintptr(unsafe.Pointer(&send[0])), uintptr(unsafe.Pointer(&recv[0]))
	return s < r+uintptr(len(recv))*es && r < s+uintptr(len(send))*es
}

// errOverlap is the ErrInvalid error of a call whose send and recv overlap.
func errOverlap() error {
	return invalid("send and recv overlap (pass a nil send for in place)")
}

// invalid returns an ErrInvalid error for a bad argument.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", runtime.ErrInvalid, fmt.Sprintf(format, args...))
}

// clearCall clears s's call (end, through eachState).
func clearCall(s *state) { s.cur = call{} }

// sub returns the call on sub-group state s within c: same context, name and tag. It
// lives in s.cur, which c's end clears.
func (c *call) sub(s *state) *call {
	s.cur = call{s: s, ctx: c.ctx, name: c.name, tag: c.tag, kind: c.kind, root: c.root}
	return &s.cur
}

// req returns the i-th reusable Request.
func (c *call) Req(i int) *runtime.Request {
	for len(c.s.reqs) <= i {
		c.s.reqs = append(c.s.reqs, new(runtime.Request))
	}
	return c.s.reqs[i]
}

// scratchOf returns n elements of the call's scratch slot (0 or 1), reused across calls:
// it grows to the largest size used and stays allocated. Its contents are undefined.
func scratchOf[T runtime.Elem](c *call, slot, n int) []T {
	var z T
	words := (n*int(unsafe.Sizeof(z)) + 7) / 8
	b := &c.s.scratch[slot]
	if cap(*b) < words {
		*b = make([]uint64, max(words, 2*cap(*b)))
	}
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(*b))), n)
}

// checkStatus verifies that a message from src had exactly the expected length.
func (c *call) checkStatus(st runtime.Status, err error, src, want int) error {
	if err != nil {
		return fmt.Errorf("rank %d receiving %d elements from rank %d: %w", c.s.rank, want, src, err)
	}
	if st.Count != want {
		return fmt.Errorf("%w: rank %d received %d elements from rank %d, expected %d (do all ranks pass the same counts?)",
			ErrMismatch, c.s.rank, st.Count, src, want)
	}
	return nil
}

// send sends buf to dst.
func send[T runtime.Elem](c *call, buf []T, dst int) error {
	if err := runtime.Send(c.ctx, c.s.comm, buf, c.s.world(dst), c.tag); err != nil {
		return fmt.Errorf("rank %d sending %d elements to rank %d: %w", c.s.rank, len(buf), dst, err)
	}
	return nil
}

// recv receives exactly len(buf) elements from src into buf.
func recv[T runtime.Elem](c *call, buf []T, src int) error {
	st, err := runtime.Recv(c.ctx, c.s.comm, buf, c.s.world(src), c.tag)
	return c.checkStatus(st, err, src, len(buf))
}

// postRecv posts a receive of exactly len(buf) elements from src on request q.
func postRecv[T runtime.Elem](c *call, q *runtime.Request, buf []T, src int) error {
	if err := runtime.IrecvWith(q, c.s.comm, buf, c.s.world(src), c.tag); err != nil {
		return fmt.Errorf("rank %d receiving from rank %d: %w", c.s.rank, src, err)
	}
	return nil
}

// postSend starts sending buf to dst on request q.
func postSend[T runtime.Elem](c *call, q *runtime.Request, buf []T, dst int) error {
	if err := runtime.IsendWith(q, c.s.comm, buf, c.s.world(dst), c.tag); err != nil {
		return fmt.Errorf("rank %d sending %d elements to rank %d: %w", c.s.rank, len(buf), dst, err)
	}
	return nil
}

// exchange sends sbuf to dst while receiving exactly len(rbuf) elements from src into
// rbuf. The receive is posted first, so that two ranks exchanging large (rendezvous)
// messages with each other, or a ring of them, cannot deadlock.
func exchange[T runtime.Elem](c *call, sbuf []T, dst int, rbuf []T, src int) error {
	r := c.Req(0)
	if err := postRecv(c, r, rbuf, src); err != nil {
		return err
	}
	if err := send(c, sbuf, dst); err != nil {
		return err
	}
	st, err := r.Wait(c.ctx)
	return c.checkStatus(st, err, src, len(rbuf))
}

// combine sets acc = in ∘ acc (inFirst: in holds lower ranks' contribution) or
// acc = acc ∘ in. It may overwrite in. len(in) == len(acc).
func combine[T runtime.Elem](op Op[T], acc, in []T, inFirst bool) {
	if len(acc) == 0 {
		return
	}
	if !inFirst || op.commutative {
		op.fn(acc, in)
		return
	}
	op.fn(in, acc)
	copy(acc, in)
}

// pof2Below returns the largest power of two <= n (n >= 1).
func pof2Below(n int) int {
	p := 1
	for p*2 <= n {
		p *= 2
	}
	return p
}

// block returns the bounds of block i of n elements split into p nearly equal blocks.
func block(n, p, i int) (lo, hi int) {
	return i * n / p, (i + 1) * n / p
}

func elemSize[T runtime.Elem]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// bytesOf is x's memory as bytes.
func bytesOf[T runtime.Elem](x []T) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), len(x)*elemSize[T]())
}
