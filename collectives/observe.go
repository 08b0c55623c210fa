package collectives

import (
	"unsafe"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/trace"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Observation of the calls (design.md, "Profile and timeline"). When the rank observes
// (state.obs, from substrate.Observe), begin starts an ObsCall of the call's kind and end
// records it: one call in the profile with this rank's bytes, and one Collective event
// in the timeline labelled with the call's name and the algorithm it chose. Each public
// function counts the call's data per member right after begin, as Open MPI's coll
// monitoring does. When the rank does not observe, each hook is one nil check.

// callObs is the observation of the call in progress on a state. begin sets it and end
// clears it; the call's functions set algo and bytes. It is zero when observation is off.
type callObs struct {
	c     substrate.ObsCall
	name  string // the call's name in the timeline: "Allreduce", or "Iallreduce" for a queued call
	algo  string // the algorithm it chose ("ring"); "" where it has none to choose
	bytes int    // this rank's data: the size of its send buffer
	count bool   // the profile counts the call and its data: it is the user's (beginObs)
}

// beginObs starts observing the call begin names name; tracked is its name in the
// timeline. A call on a World marked internal (state.internal) serves a layer's call: it
// gets its timeline event, and the profile counts neither it nor its data.
func (s *state) beginObs(name, tracked string) callObs {
	k := callKind(name)
	if s.internal {
		return callObs{c: s.obs.Track(k), name: tracked}
	}
	return callObs{c: s.obs.BeginLocked(s.ln, k), name: tracked, count: true}
}

// callKind returns the profile's kind of the call begin names name. Each call has its
// own kind (Gatherv is not Gather, Exscan is not Scan); the Loc and Type forms of the
// reductions count as their reductions, as MPI counts MPI_Allreduce whatever its datatype.
func callKind(name string) prof.CallKind {
	switch name {
	case "barrier":
		return prof.CallBarrier
	case "bcast":
		return prof.CallBcast
	case "reduce", "reduce_loc", "reduce type":
		return prof.CallReduce
	case "allreduce", "allreduce_loc", "allreduce type":
		return prof.CallAllreduce
	case "gather":
		return prof.CallGather
	case "gatherv":
		return prof.CallGatherv
	case "allgather":
		return prof.CallAllgather
	case "allgatherv":
		return prof.CallAllgatherv
	case "scatter":
		return prof.CallScatter
	case "scatterv":
		return prof.CallScatterv
	case "alltoall":
		return prof.CallAlltoall
	case "alltoallv":
		return prof.CallAlltoallv
	case "alltoallw":
		return prof.CallAlltoallw
	case "reduce_scatter":
		return prof.CallReduceScatter
	case "reduce_scatter_v":
		return prof.CallReduceScatterV
	case "scan":
		return prof.CallScan
	case "exscan":
		return prof.CallExscan
	}
	panic("collectives: no profile kind for call " + name)
}

// observed reports whether the call is observed. A sub-group's call never is: its
// call within is.
func (c *call) observed() bool { return c.s.ob.c.On() }

// counted reports whether the profile counts the call's data (beginObs).
func (c *call) counted() bool { return c.s.ob.count }

// chose names the algorithm the call runs, for the timeline's label; a is a constant.
// The first choice names the call: the calls it makes within (AllreduceLoc's two
// reductions, AllreduceType's Bcast) do not rename it.
func (c *call) chose(a string) {
	if c.observed() && c.s.ob.algo == "" {
		c.s.ob.algo = a
	}
}

// choseAlgo is chose for an Allreduce algorithm.
func (c *call) choseAlgo(a algo) {
	if c.observed() && c.s.ob.algo == "" {
		c.s.ob.algo = a.String()
	}
}

// toAll counts a call in which this rank gives every other member each bytes: Allreduce,
// Allgather(v), Alltoall, Barrier (0), ReduceScatter. bytes is its send buffer's size.
func (c *call) toAll(bytes, each int) {
	if c.observed() {
		c.s.ob.bytes = bytes
	}
	if c.counted() {
		c.s.obs.CollAll(c.s.ln, c.s.members, c.s.rank, c.s.size, each)
	}
}

// atRoot counts a rooted call: root counts each bytes for every other member, the data
// it sends to each (Bcast, Scatter) or receives from each (Reduce, Gather). The other
// ranks count none.
func (c *call) atRoot(root, bytes, each int) {
	if c.observed() {
		c.s.ob.bytes = bytes
	}
	if c.counted() && c.s.rank == root {
		c.s.obs.CollAll(c.s.ln, c.s.members, c.s.rank, c.s.size, each)
	}
}

// toAbove counts a prefix reduction (Scan, Exscan): this rank's bytes for every member
// above it, the ranks its input reaches.
func (c *call) toAbove(bytes int) {
	if c.observed() {
		c.s.ob.bytes = bytes
	}
	if c.counted() {
		for r := c.s.rank + 1; r < c.s.size; r++ {
			c.s.obs.Coll(c.s.ln, c.s.members, r, bytes)
		}
	}
}

// perMember counts a call whose data differ by member: counts[i]*es bytes for each member
// i but this rank, at every rank (root < 0) or at root only. Counts that a bad call gives
// (too few, negative) count nothing.
func (c *call) perMember(bytes int, counts []int, es, root int) {
	if c.observed() {
		c.s.ob.bytes = bytes
	}
	if c.counted() && (root < 0 || c.s.rank == root) {
		c.s.countEach(counts, es)
	}
}

func (s *state) countEach(counts []int, es int) {
	for i := range min(len(counts), s.size) {
		if i != s.rank && counts[i] >= 0 {
			s.obs.Coll(s.ln, s.members, i, counts[i]*es)
		}
	}
}

// record ends the observation of the call in progress (end).
func (s *state) record() {
	ob := &s.ob
	ob.c.EndIn(s.bt, trace.Collective, ob.bytes, trace.NoPeer, -1, s.label(ob.name, ob.algo))
	*ob = callObs{}
}

// flushEvents stores the events of the state's calls in the timeline's recorder
// (state.bt) while a call waits for its peers, so that the recorder's atomic operations
// run while the rank would wait anyway: at the start of a wait when the batch is Due,
// and in any wait long enough to check for failures (long). A sub-group's state shares
// its World's batch.
func (s *state) flushEvents(long bool) {
	if s.bt != nil && (long || s.bt.Due()) {
		s.bt.Flush()
	}
}

// label returns the timeline's label "name algo" (name alone without an algorithm). The
// state keeps the labels it made, so that a call allocates nothing once its label is
// known, and the last few it used, so that a loop of a few calls (an Allreduce and a
// Barrier) finds its label without hashing. Names and algorithms are constants: a recent
// entry matches when its strings are the same memory (same), and any other string takes
// the map.
func (s *state) label(name, algo string) uint16 {
	if s.obs.Rec == nil {
		return 0
	}
	for _, r := range &s.recent {
		if same(r.name, name) && same(r.algo, algo) && r.l != 0 {
			return r.l
		}
	}
	k := [2]string{name, algo}
	l, ok := s.labels[k]
	if !ok {
		full := name
		if algo != "" {
			full = name + " " + algo
		}
		l = s.obs.Label(full)
		if s.labels == nil {
			s.labels = make(map[[2]string]uint16)
		}
		s.labels[k] = l
	}
	s.recent[s.nextRecent%uint8(len(s.recent))] = recentLabel{name, algo, l}
	s.nextRecent++
	return l
}

// same reports whether a and b are the same string in memory: equal, without reading
// their bytes. Equal strings elsewhere in memory are not the same.
func same(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

// recentLabel is a label state.label found, for name and algo.
type recentLabel struct {
	name, algo string
	l          uint16
}

// sendSize returns the size of a scattering call's send buffer: send's at root, recv's
// (what it receives) at the other ranks.
func sendSize[T runtime.Elem](c *call, send, recv []T, root int) int {
	if c.s.rank == root {
		return len(send) * elemSize[T]()
	}
	return len(recv) * elemSize[T]()
}

// perBlock counts Alltoallw's blocks: each member but this rank is given its block's
// bytes (Counts[i] times Sizes[i]). Blocks that a bad call gives count nothing.
func (c *call) perBlock(bytes int, b ByteBlocks) {
	if c.observed() {
		c.s.ob.bytes = bytes
	}
	if !c.counted() {
		return
	}
	s := c.s
	for i := range min(len(b.Counts), s.size) {
		n := b.Counts[i]
		if b.Sizes != nil {
			if i >= len(b.Sizes) {
				break
			}
			n *= b.Sizes[i]
		}
		if i != s.rank && n >= 0 {
			s.obs.Coll(s.ln, s.members, i, n)
		}
	}
}
