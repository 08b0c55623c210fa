package hostgroup

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

const (
	offFlag   = 0   // flag line 0; flag line 1 follows
	lineBytes = 64  // bytes of a flag line (a cache line)
	flagSeq   = 0   // in a flag line: the step number
	flagMeta  = 8   // in a flag line: a call's byte count
	FlagData  = 16  // in a flag line: inline data
	offSleep  = 128 // low half: waiters sleeping on this member's bell; high half: peers that let go (detach.go)
	offBell   = 136 // the futex word
	offReset  = 192 // nonzero: the member left this region for a new setup in the call it names (resetMark), on a line of its own
	offReads  = 200 // nonzero: the member reads every member's user memory (markReads), on the reset line: written at setup only
	offSmall  = 256

	// InlineMax is the largest vector (bytes) that travels in the flag line itself.
	InlineMax = lineBytes - FlagData

	// descMax bounds a region's description and the meta word behind it (setup).
	descMax = 128

	sleepMax   = time.Millisecond      // bound of one futex sleep
	sleepFirst = 50 * time.Microsecond // bound of a wait's first futex sleep (see publish)
	spinCheck  = 4096                  // polls between checks of ctx, liveness and the clock (a bare spin)
)

// Group is one rank's view of a group sharing scratch (design.md). It is used by one
// collective call at a time (the caller's state is busy). Its shared words are touched
// only through sync/atomic and release stores.
type Group struct {
	Ranks    []int // World ranks of the members, ascending; set by New, then read only
	Me       int   // this rank's index in Ranks; set by New, then read only
	nt       bool  // copies into big buffers use non-temporal stores (tuning.nt)
	ntSpread bool  // so do the copies of blocks each read by one other member (Alltoall, ReduceScatter)
	waiter         // how this member waits for the others (wait.go)

	mapping // this member's regions and its mappings of the members' (maps.go)
	steps   // this member's place in the step protocol (step.go)

	Moved  Moved // bytes this member copied through scratch (the byte model)
	broken bool  // a call failed: set up again before the next use
	fresh  bool  // set up for ScratchFresh: big buffers are acquired per call (fresh.go)
}

// New returns the group of World ranks ranks (ascending) in which this rank is member
// me. It is set up by its first Prepare.
func New(ranks []int, me int) *Group { return &Group{Ranks: ranks, Me: me} }

// regionSize is the size of a region whose big buffers hold chunk bytes each.
func regionSize(chunk int) int { return offSmall + 2*SmallMax + 2*chunk }

// Prepare makes g ready for a call on vectors of bytes bytes, setting it up (a
// collective step over the group's members, with point-to-point messages) on first use,
// after a failure, or to grow the big buffers. Every member decides alike, since they
// pass the same byte counts.
//
// Under ScratchFresh the region is set up once (flag lines and small slots only: the
// control structure that Open MPI's and MPICH's shared-memory collectives also keep for
// the job's life). A call on a vector too long for one step acquires its big buffers
// (acquireBig). The caller releases them with ReleaseBig before the call returns.
func (g *Group) Prepare(c Call, bytes int) error {
	if _, err := tuned(); err != nil {
		return err
	}
	// The members' mappings end at Finalize (or when a peer's Remote closes): touching
	// them then would fault, so a call on a finalized World fails here with the runtime's
	// error (ErrFinalized) instead. One atomic load per member.
	for _, rm := range g.remotes {
		if rm != nil && !rm.Live() {
			if err := rm.Err(); err != nil {
				return err
			}
			return runtime.ErrFinalized
		}
	}
	g.call = c.ID()
	g.peerReset(c)
	if err := g.settle(c); err != nil {
		return err
	}
	fresh, err := c.FreshScratch()
	if err != nil {
		return err
	}
	want := 0
	if bytes > SmallMax {
		want = ChunkFor(bytes, c.World().LocalSize())
	}
	if fresh {
		if g.mem == nil || g.broken || !g.fresh {
			if err := g.setup(c, 0, true); err != nil {
				return err
			}
		}
		if want == 0 {
			return nil
		}
		return g.acquireBig(c, want, bytes)
	}
	if g.mem != nil && !g.broken && !g.fresh && g.chunk >= want {
		return nil
	}
	return g.setup(c, max(want, g.chunk), false)
}

// ready maps every other member's region from descs (attach), frees the big buffers a
// failed call left (fresh), and g is set up.
func (g *Group) ready(w *runtime.World, descs [][]byte) error {
	if err := g.attach(w, g.Ranks, g.Me, descs); err != nil {
		return err
	}
	g.freeBigOld()
	g.broken = false
	return nil
}

// resetMark is the offReset word of a member that leaves its region in its call
// number seq (state.seq: every member numbers a call alike).
func resetMark(seq uint64) uint64 { return seq<<1 | 1 }

// peerReset marks g for a new setup when a member has left the region g maps in an
// earlier call, for a new setup of its own (offReset): a call that failed there and
// not here, or a call whose counts made that member grow its buffers and not this one.
// This call's setup then pairs them, where a step would wait for a member that waits for
// descriptions. A member that left in this very call, or in a later one, is another
// matter: it failed, or set up for counts of its own, in the call this member is in (the
// step tells), or it has gone on to its next call and set up there (as this member will
// once this call ends). One load per member, of a line written only at setup and failure.
func (g *Group) peerReset(c Call) {
	if g.mem == nil || g.broken {
		return
	}
	for i := range g.Ranks {
		if m := atomic.LoadUint64(word(g.mem[i], offReset)); i != g.Me && m != 0 && m>>1 < g.call.Number {
			g.broken = true
			return
		}
	}
}

// settle waits, at the start of a call, until every member has published the last step
// of this member's previous call on g, when that step did not wait for them all
// (StepLast). The step after it rewrites the flag line and the small slot of the step
// before it, which the others read before they publish it. It also takes the state a
// count mismatch at the call's first step returns to (CleanFail).
func (g *Group) settle(c Call) error {
	if g.lazy != 0 && g.mem != nil && !g.broken {
		v := g.lazy
		g.lazy = 0
		if err := g.waitAll(c, v, -1); err != nil {
			return err
		}
		// A member at another call in step v (another root, another collective) was not
		// seen by this member, which waited for it only now. The members that waited for
		// it then failed and set up again at their next call: this one joins them, so that
		// this call's setup pairs them all.
		own := metaCall(atomic.LoadUint64(word(g.mem[g.Me], flagOff(v)+flagMeta)))
		for i := range g.Ranks {
			if metaCall(atomic.LoadUint64(word(g.mem[i], flagOff(v)+flagMeta))) != own {
				g.broken = true
			}
		}
	}
	g.lazy = 0
	g.callTurn = g.turn
	return nil
}

// setup allocates this member's region (big buffers of chunk bytes, none if fresh),
// marks in it whether this member reads the others' user memory (markReads), exchanges
// region descriptions with every member through the group's first (exchangeDescs) and
// maps theirs (attachDescs).
func (g *Group) setup(c Call, chunk int, fresh bool) error {
	w := c.World()
	if g.region != nil {
		atomic.StoreUint64(word(g.region.Bytes(), offReset), resetMark(c.ID().Number))
		g.old, g.region = g.region, nil
	}
	r, err := substrate.AllocHostRegion(w, regionSize(chunk))
	if err != nil {
		return fmt.Errorf("shared-memory scratch: %w", err)
	}
	g.initRegion(w, r, chunk, fresh)
	if err := markReads(w, g.Ranks, g.Me, r.Bytes()); err != nil { // reads.go
		return err
	}
	// The description travels with the call's meta word behind it (meta, byte count
	// 0): a member at another call, whose message of the same tag this receive may take,
	// is told and named here, where the calls first meet, rather than as a transport's
	// refusal of a description that is not one.
	desc := r.AppendDesc(make([]byte, 0, descMax))
	desc = binary.LittleEndian.AppendUint64(desc, meta(c.ID(), 0))
	descs, err := exchangeDescs(c, g.Ranks, g.Me, desc) // descs.go
	if err != nil {
		return err
	}
	for i, peer := range g.Ranks {
		if i == g.Me {
			continue
		}
		d := descs[i]
		if len(d) < 8 || metaCall(binary.LittleEndian.Uint64(d[len(d)-8:])) != metaCall(meta(c.ID(), 0)) {
			theirs := "a call that sent " + strconv.Itoa(len(d)) + " bytes"
			if len(d) >= 8 {
				theirs = callText(binary.LittleEndian.Uint64(d[len(d)-8:]) &^ metaBytes)
			}
			return fmt.Errorf("%w: rank %d is in %s, rank %d in %s (call #%d on this World's numbering): every rank must make its collective calls in the same order, with the same root and counts",
				runtime.ErrMismatch, peer, theirs, w.Rank(), callText(meta(c.ID(), 0)), c.ID().Number)
		}
		descs[i] = d[:len(d)-8]
	}
	return g.ready(w, descs)
}

// initRegion makes r, a new region of w's memory with big buffers of chunk bytes (none
// if fresh), g's own, cleared of its flags, and marks g broken until ready maps the
// members' regions. The caller has closed g's mappings of the previous regions.
func (g *Group) initRegion(w *runtime.World, r *substrate.Region, chunk int, fresh bool) {
	g.closeRemotes()
	g.closeBigRemotes()
	g.fresh = fresh
	b := r.Bytes()
	for _, off := range []int{offFlag + flagSeq, offFlag + flagMeta, offFlag + lineBytes + flagSeq,
		offFlag + lineBytes + flagMeta, offSleep, offBell, offReset, offReads} {
		atomic.StoreUint64(word(b, off), 0)
	}
	rule := substrate.WaitRule(w)
	g.waiter = waiter{rule: rule, oversub: w.LocalSize() > w.HostCPUs(), shared: substrate.SharesProcess()}
	g.nt, g.ntSpread = tune().nt, tune().spreadNT(len(g.Ranks))
	g.region, g.chunk, g.seq, g.turn, g.lazy = r, chunk, 0, bigTurn{}, 0
	g.broken = true // until ready
}

// fail marks g for a new setup after a failed call, and releases its mappings (a peer
// may have failed). This call's fresh big buffers, which a peer may still be reading, are
// freed at the next setup.
//
// The big buffer size is forgotten as well: in a call whose counts did not match, some
// members may have grown theirs (setup) and others not. A size kept from it would make
// every later setup's regions differ between members. The next setup sizes the buffers
// for its own call's count, on which the members agree.
func (g *Group) Fail() {
	if g != nil && g.clean {
		g.clean = false // the call failed at its first step, every member in step (CleanFail)
		return
	}
	if g != nil {
		for _, r := range []*substrate.Region{g.region, g.old} {
			if r != nil && len(r.Bytes()) > offReset {
				atomic.StoreUint64(word(r.Bytes(), offReset), resetMark(g.call.Number)) // the peers set up again at their next call (peerReset)
			}
		}
		g.broken, g.lazy = true, 0
		g.chunk = 0
		g.closeRemotes()
		g.closeBigRemotes()
		if g.bigReg != nil {
			g.freeBigOld()
			g.bigOld, g.bigReg = g.bigReg, nil
		}
	}
}

// Status is what a member's group holds, for tests and reports.
type Status struct {
	Ready    bool // set up, every member's region mapped, and no failure since
	Fresh    bool // set up for ScratchFresh: big buffers are acquired per call
	BigHeld  bool // fresh big buffers, or mappings of the peers', outlive their call
	Detached int  // peers that let go of this member's region (Detach)
}

// Status returns what g holds now. The caller owns g (no call is on it).
func (g *Group) Status() Status {
	st := Status{Ready: g.mem != nil && !g.broken, Fresh: g.fresh}
	for _, m := range g.mem {
		st.Ready = st.Ready && m != nil
	}
	st.BigHeld = g.bigReg != nil || g.bigMem != nil || g.bigOld != nil
	for _, rm := range g.bigRems {
		st.BigHeld = st.BigHeld || rm != nil
	}
	if g.region != nil {
		st.Detached = int(atomic.LoadUint64(word(g.region.Bytes(), offSleep)) >> detachedShift)
	}
	return st
}
