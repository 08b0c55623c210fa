package collectives

import (
	"encoding/binary"
	"errors"
	"fmt"
	goruntime "runtime"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/internal/futex"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Shared-memory scratch and flags for the collectives of ranks on one host.
//
// A shmGroup is a set of ranks (the whole World, or the ranks of one host) that map each
// other's arena scratch. Each member owns one arena region, laid out as
//
//	[flag line 0, 1 | sleepers bell | small slot 0, 1 | big buffer 0, 1]
//
// where a flag line is one 64-byte cache line [seq | bytes | inline data (48 bytes)]. A
// member publishes a step by storing the step's number in the seq word of the flag line of
// the step's parity (steps are numbered 1, 2, ... in the same order by every member, since
// collective calls are made in the same order with the same counts). "member i has
// published v" reads as "the seq of i's flag line v&1 is at least v" (each line's seq only
// grows, and every step is published). After publishing v a member waits until every
// other member has, but in a call's last step on the group a member that reads nothing
// in it (a short Gather's or Reduce's ranks but root, a short Bcast's or Scatter's root)
// goes on at once (stepLast). It waits for the others at the start of its next call on
// the group, before it writes anything (settle), and there also sees a member that was
// at another call. So no short rooted call waits at the ranks that only give. The data
// a member writes
// before publishing v lives in one of three places. It is in its flag line v&1 (up to 48
// bytes: the one line a peer fetches carries the step's number, byte count and data), in a
// small slot (by v's parity), or in a big buffer (alternating; bigFree records when its
// readers are done). The others read it before they publish their next step. So when a
// member is about to publish v, every member has published v-1 and the line and slot of
// v-2 are free again. The bytes word of flag line v&1 holds the byte count of a call's
// first step, so that mismatched counts are seen. A waiting member reads only the
// publisher's flag line (and, to sleep, its sleepers and bell line, which the publisher
// only reads).
//
// Waiting follows the rank's waiting rule (substrate.WaitRule): a bounded spin, then
// sleeps on the publisher's doorbell word, a shared futex. When every rank has a
// processor the spin is bare: it polls the one flag line for the rule's budget. It
// yields to the Go scheduler (runtime.Gosched) every shmSpinCheck polls only where the
// rule says that wakes no thread (one P). With more Ps a yield wakes an idle thread of
// the process, which takes a processor from a spinning rank. That rank's peer then
// waits long enough to yield too, and so on. A wait also yields after each futex sleep
// of the full bound (shmSleep), so that the rank's other goroutines get a turn in a
// long wait (one that outlasts a peer's computation). A wait that slept tells the rule
// how long it lasted (Waiting.Done), which adapts the budget. When the host has more ranks than
// processors the spin gives the processor away (sched_yield) at every poll, for up to
// shmYieldFor (waitYield), so that the ranks sharing a core take turns at once. To
// sleep, the waiter counts itself in the publisher's sleepers word, reads the bell,
// checks the condition once more and sleeps while the bell is unchanged. The publisher
// stores its seq with a release store (on amd64 a plain store, so that it does not stall
// until the peers give up the line), then rings (bumps bell and wakes) only if it sees a
// sleeper. With no fence between that store and that look, a sleeper that counts itself
// at that very moment can be missed while it misses the store: its first sleep is
// therefore short (shmSleepFirst), later ones bounded by shmSleep. Every few polls, and
// after each sleep, the waiter checks ctx and the publisher's liveness
// (substrate.Remote.Err): nothing waits forever on a dead peer.
//
// Every member stores only into its own region (allreduce_shm.go). Copies into the big
// buffers are plain, except where the tuning asks for non-temporal stores (copyShared,
// shmTuning): a plain store to a line a peer has read must wait for the peer to give the
// line up, but the peers then read the data from this core's cache instead of memory.
const (
	shmOffFlag  = 0   // flag line 0; flag line 1 follows
	shmLine     = 64  // bytes of a flag line (a cache line)
	shmFlagSeq  = 0   // in a flag line: the step number
	shmFlagMeta = 8   // in a flag line: a call's byte count
	shmFlagData = 16  // in a flag line: inline data
	shmOffSleep = 128 // low half: waiters sleeping on this member's bell; high half: peers that let go (state_cleanup.go)
	shmOffBell  = 136 // the futex word
	shmOffReset = 192 // nonzero: the member left this region for a new setup in the call it names (resetMark), on a line of its own
	shmOffReads = 200 // nonzero: the member reads every member's user memory (markReads), on the reset line: written at setup only
	shmOffSmall = 256

	// shmInlineMax is the largest vector (bytes) that travels in the flag line itself.
	shmInlineMax = shmLine - shmFlagData

	// shmSmallMax is the largest vector (bytes) reduced in a single step: every member
	// copies it into a small slot, and every member reduces all of them.
	shmSmallMax = 8 << 10
	// shmChunkMin and shmChunkMax bound a big buffer (bytes): long vectors are pipelined
	// through the two big buffers in chunks of at most shmChunkMax.
	shmChunkMin = 64 << 10
	shmChunkMax = 1 << 20
	// shmHostBig bounds the big buffers of one group's members on a host (bytes, two per
	// member) beyond shmChunkMin each: a host of many ranks gets smaller chunks, so that
	// its shared memory grows by a fixed share per rank. The selection sweep
	// (scripts/device16-select.sh, class big) measures the chunk sizes.
	shmHostBig = 32 << 20

	// shmDescMax bounds a region's description and the meta word behind it (setup).
	shmDescMax = 128

	shmSleep      = time.Millisecond      // bound of one futex sleep
	shmSleepFirst = 50 * time.Microsecond // bound of a wait's first futex sleep (see publish)
	shmSpinCheck  = 4096                  // polls between checks of ctx, liveness and the clock (a bare spin)
)

// shmGroup is one rank's view of a group sharing scratch. It is used by one collective
// call at a time (the state's busy flag); the shared words are touched only through
// sync/atomic.
type shmGroup struct {
	ranks    []int              // World ranks of the members, ascending
	me       int                // this rank's index in ranks
	chunk    int                // bytes of each big buffer
	oversub  bool               // more ranks on this host than processors: yield while spinning
	shared   bool               // other ranks' Worlds live in this process (substrate.SharesProcess)
	nt       bool               // copies into big buffers use non-temporal stores (shmTuning.nt)
	ntSpread bool               // so do the copies of blocks each read by one other member (Alltoall, ReduceScatter)
	medium   int                // bytes from which Allreduce and Reduce go by blocks (shmMediumFor)
	rule     *substrate.Waiting // the rank's waiting rule: the spin's budget, and whether it yields

	shmMaps // this member's region and its mappings of the members' (shm_maps.go)

	moved    shmMoved  // bytes this member copied through scratch (the byte model)
	seq      uint64    // last step published
	bigNext  int       // big buffer of the next step that writes one
	bigFree  [2]uint64 // step after which each big buffer's readers are done
	broken   bool      // a call failed: set up again before the next use
	lazy     uint64    // a call's last step, published, that some member may not have published yet (stepLast)
	clean    bool      // the current call failed at its first step, every member left in step (cleanFail)
	callSeq  uint64    // the number of the call that last prepared g (fail's resetMark)
	callBig  int       // bigNext when the current call began (cleanFail)
	callFree [2]uint64 // bigFree when the current call began (cleanFail)

	// Under ScratchFresh the region holds no big buffers: they live in a region of their
	// own per member, acquired by a call that needs them and released before it returns
	// (scratch_shm.go).
	fresh  bool // set up for ScratchFresh
	shmBig      // the call's fresh big buffers
}

// shmRegionSize is the size of a region whose big buffers hold chunk bytes each.
func shmRegionSize(chunk int) int { return shmOffSmall + 2*shmSmallMax + 2*chunk }

// shmChunkFor returns the big buffer size that suits vectors of bytes bytes on a host
// of local ranks.
func shmChunkFor(bytes, local int) int {
	t := shmTune()
	c := min(shmChunkMin, t.chunkMax)
	for c < bytes && c < t.chunkMax && (t.chunkSet || 2*(2*c)*2*local <= shmHostBig) {
		c *= 2
	}
	return c
}

// prepare makes g ready for a call on vectors of bytes bytes, setting it up (a
// collective step over the group's members, with point-to-point messages) on first use,
// after a failure, or to grow the big buffers. Every member decides alike, since they
// pass the same byte counts.
//
// Under ScratchFresh the region is set up once (flag lines and small slots only: the
// control structure that Open MPI's and MPICH's shared-memory collectives also keep for
// the job's life). A call on a vector too long for one step acquires its big buffers
// (acquireBig). The caller releases them with releaseBig before the call returns.
func (g *shmGroup) prepare(c *call, bytes int) error {
	if _, err := shmTuned(); err != nil {
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
	g.callSeq = uint64(c.s.seq)
	g.peerReset(c)
	if err := g.settle(c); err != nil {
		return err
	}
	fresh, err := freshScratch()
	if err != nil {
		return err
	}
	want := 0
	if bytes > shmSmallMax {
		want = shmChunkFor(bytes, c.s.comm.LocalSize())
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
func (g *shmGroup) ready(w *runtime.World, descs [][]byte) error {
	if err := g.attach(w, g.ranks, g.me, descs); err != nil {
		return err
	}
	g.freeBigOld()
	g.broken = false
	return nil
}

// resetMark is the shmOffReset word of a member that leaves its region in its call
// number seq (state.seq: every member numbers a call alike).
func resetMark(seq uint64) uint64 { return seq<<1 | 1 }

// peerReset marks g for a new setup when a member has left the region g maps in an
// earlier call, for a new setup of its own (shmOffReset): a call that failed there and
// not here, or a call whose counts made that member grow its buffers and not this one.
// This call's setup then pairs them, where a step would wait for a member that waits for
// descriptions. A member that left in this very call, or in a later one, is another
// matter: it failed, or set up for counts of its own, in the call this member is in (the
// step tells), or it has gone on to its next call and set up there (as this member will
// once this call ends). One load per member, of a line written only at setup and failure.
func (g *shmGroup) peerReset(c *call) {
	if g.mem == nil || g.broken {
		return
	}
	for i := range g.ranks {
		if m := atomic.LoadUint64(word(g.mem[i], shmOffReset)); i != g.me && m != 0 && m>>1 < uint64(c.s.seq) {
			g.broken = true
			return
		}
	}
}

// settle waits, at the start of a call, until every member has published the last step
// of this member's previous call on g, when that step did not wait for them all
// (stepLast). The step after it rewrites the flag line and the small slot of the step
// before it, which the others read before they publish it. It also takes the state a
// count mismatch at the call's first step returns to (cleanFail).
func (g *shmGroup) settle(c *call) error {
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
		own := shmMetaCall(atomic.LoadUint64(word(g.mem[g.me], flagOff(v)+shmFlagMeta)))
		for i := range g.ranks {
			if shmMetaCall(atomic.LoadUint64(word(g.mem[i], flagOff(v)+shmFlagMeta))) != own {
				g.broken = true
			}
		}
	}
	g.lazy = 0
	g.callBig, g.callFree = g.bigNext, g.bigFree
	return nil
}

// setup allocates this member's region (big buffers of chunk bytes, none if fresh),
// marks in it whether this member reads the others' user memory (markReads), exchanges
// region descriptions with every member through the group's first (exchangeDescs) and
// maps theirs (attachDescs).
func (g *shmGroup) setup(c *call, chunk int, fresh bool) error {
	w := c.s.comm
	if g.region != nil {
		atomic.StoreUint64(word(g.region.Bytes(), shmOffReset), resetMark(uint64(c.s.seq)))
		g.old, g.region = g.region, nil
	}
	r, err := substrate.AllocHostRegion(w, shmRegionSize(chunk))
	if err != nil {
		return fmt.Errorf("shared-memory scratch: %w", err)
	}
	g.initRegion(w, r, chunk, fresh)
	if err := markReads(w, g.ranks, g.me, r.Bytes()); err != nil { // single_shm.go
		return err
	}
	// The description travels with the call's meta word behind it (shmMeta, byte count
	// 0): a member at another call, whose message of the same tag this receive may take,
	// is told and named here, where the calls first meet, rather than as a transport's
	// refusal of a description that is not one.
	desc := r.AppendDesc(make([]byte, 0, shmDescMax))
	desc = binary.LittleEndian.AppendUint64(desc, shmMeta(c, 0))
	descs, err := exchangeDescs(c, g.ranks, g.me, desc) // shm_descs.go
	if err != nil {
		return err
	}
	for i, peer := range g.ranks {
		if i == g.me {
			continue
		}
		d := descs[i]
		if len(d) < 8 || shmMetaCall(binary.LittleEndian.Uint64(d[len(d)-8:])) != shmMetaCall(shmMeta(c, 0)) {
			theirs := "a call that sent " + strconv.Itoa(len(d)) + " bytes"
			if len(d) >= 8 {
				theirs = shmCallText(binary.LittleEndian.Uint64(d[len(d)-8:]) &^ shmMetaBytes)
			}
			return fmt.Errorf("%w: rank %d is in %s, rank %d in %s (call #%d on this World's numbering): every rank must make its collective calls in the same order, with the same root and counts",
				ErrMismatch, peer, theirs, w.Rank(), shmCallText(shmMeta(c, 0)), c.s.seq)
		}
		descs[i] = d[:len(d)-8]
	}
	return g.ready(w, descs)
}

// initRegion makes r, a new region of w's memory with big buffers of chunk bytes (none
// if fresh), g's own, cleared of its flags, and marks g broken until ready maps the
// members' regions. The caller has closed g's mappings of the previous regions.
func (g *shmGroup) initRegion(w *runtime.World, r *substrate.Region, chunk int, fresh bool) {
	g.closeRemotes()
	g.closeBigRemotes()
	g.fresh = fresh
	b := r.Bytes()
	for _, off := range []int{shmOffFlag + shmFlagSeq, shmOffFlag + shmFlagMeta, shmOffFlag + shmLine + shmFlagSeq,
		shmOffFlag + shmLine + shmFlagMeta, shmOffSleep, shmOffBell, shmOffReset, shmOffReads} {
		atomic.StoreUint64(word(b, off), 0)
	}
	g.rule = substrate.WaitRule(w)
	g.oversub = g.rule.Oversub || w.LocalSize() > w.HostCPUs()
	g.shared = substrate.SharesProcess()
	g.nt, g.ntSpread = shmTune().nt, shmTune().ntSpread
	g.medium = shmMediumFor(len(g.ranks))
	g.region, g.chunk, g.seq, g.bigNext, g.bigFree, g.lazy = r, chunk, 0, 0, [2]uint64{}, 0
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
func (g *shmGroup) fail() {
	if g != nil {
		for _, r := range []*substrate.Region{g.region, g.old} {
			if r != nil && len(r.Bytes()) > shmOffReset {
				atomic.StoreUint64(word(r.Bytes(), shmOffReset), resetMark(g.callSeq)) // the peers set up again at their next call (peerReset)
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

func word(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }

// view returns n elements of member i's region from byte offset off.
func view[T runtime.Elem](g *shmGroup, i, off, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&g.mem[i][off])), n)
}

// flagOff returns the offset of the flag line of step v.
func flagOff(v uint64) int { return shmOffFlag + int(v&1)*shmLine }

// smallSlot returns n elements of member i's slot for step v: inline in the step's flag
// line up to shmInlineMax bytes, a small slot otherwise.
func smallSlot[T runtime.Elem](g *shmGroup, i int, v uint64, n int) []T {
	if n*elemSize[T]() <= shmInlineMax {
		return view[T](g, i, flagOff(v)+shmFlagData, n)
	}
	return view[T](g, i, shmOffSmall+int(v&1)*shmSmallMax, n)
}

// big returns n elements of member i's big buffer b.
func big[T runtime.Elem](g *shmGroup, i, b, n int) []T {
	if g.bigMem != nil {
		return unsafe.Slice((*T)(unsafe.Pointer(&g.bigMem[i][b*g.chunk])), n)
	}
	return view[T](g, i, shmOffSmall+2*shmSmallMax+b*g.chunk, n)
}

// takeBig returns the big buffer for a step v that writes one and whose data is read
// until the members publish step free. It waits for the buffer's previous readers if they
// may not be done (never with the alternation the algorithms use).
func (g *shmGroup) takeBig(c *call, v, free uint64) (int, error) {
	b := g.bigNext
	g.bigNext ^= 1
	if g.bigFree[b] > v-1 {
		if err := g.waitAll(c, g.bigFree[b], -1); err != nil {
			return 0, err
		}
	}
	g.bigFree[b] = free
	return b, nil
}

// A call's first step carries a meta word:
//
//	bits  0-35  the call's byte count (modulo 64 GiB)
//	bit     36  shmFreshMeta: acquireBig's step under ScratchFresh
//	bits 37-52  the low bits of the call's tag (c.tag: its number, kind and root, see kindTag)
//	bits 53-59  the call's kind (shmKind)
//	bits 60-63  the call's root plus 1, 15 for a root of 14 or more (0: no root)
//
// Steps are numbered by the group, not by call. A rank whose call takes no step (a count
// of 0 returns at once) goes on to its next call, whose first step then has the number
// the others' call is waiting for. With the byte count alone, a next call of the same
// count (or the stale meta word of the step two before, under a Barrier, which stores
// none otherwise) passed for the others' call, which then returned a result mixed from
// two calls, as a success. The call number tells them apart; the kind tells a Bcast from
// an Allreduce of as many bytes; kind and root name the other member's call in the error.
const (
	shmMetaBytes     = 1<<36 - 1
	shmMetaCallShift = 37
	shmMetaCallMask  = 1<<16 - 1
	shmMetaKindShift = 53
	shmMetaRootShift = 60
	shmMetaRootMax   = 15
)

// shmMeta is the meta word of call c on vectors of bytes bytes (shmFreshMeta may be set).
func shmMeta(c *call, bytes int) uint64 {
	root := uint64(0)
	if c.root >= 0 {
		root = uint64(min(c.root+1, shmMetaRootMax))
	}
	return root<<shmMetaRootShift | uint64(c.kind)<<shmMetaKindShift |
		uint64(c.tag&shmMetaCallMask)<<shmMetaCallShift | uint64(bytes)&(shmMetaBytes|shmFreshMeta)
}

// shmMetaCall is the part of a meta word that names the call (not its byte count).
func shmMetaCall(m uint64) uint64 { return m >> shmMetaCallShift }

// shmCallText describes the call a meta word names, for mismatch errors.
func shmCallText(m uint64) string {
	t := shmKindName(uint8(m >> shmMetaKindShift & (1<<shmKindBits - 1)))
	switch r := m >> shmMetaRootShift; {
	case r == shmMetaRootMax:
		t += " (root 14 or more)"
	case r > 0:
		t += fmt.Sprintf(" (root %d)", r-1)
	}
	if b := m & shmMetaBytes; b > 0 {
		t += fmt.Sprintf(" of %d bytes", b)
	}
	return t
}

// setMeta records call c's meta word (byte count and call number) for step v (a call's
// first step).
func (g *shmGroup) setMeta(c *call, v uint64, bytes int) {
	storeRelease(word(g.mem[g.me], flagOff(v)+shmFlagMeta), shmMeta(c, bytes))
}

// publish announces step v: seq of flag line v&1 = v, with a release store (on amd64 a
// plain store, which does not stall the member until the peers give up the line: it goes
// on to poll them meanwhile), then a ring if someone is seen sleeping on this member.
// Without a fence between the store and the look, a sleeper that counts itself just then
// may be missed while it misses the store. Its first sleep is short (shmSleepFirst), so
// that costs it at most that, in that rare race.
func (g *shmGroup) publish(v uint64) {
	b := g.mem[g.me]
	storeRelease(word(b, flagOff(v)+shmFlagSeq), v)
	if atomic.LoadUint64(word(b, shmOffSleep)) != 0 {
		atomic.AddUint64(word(b, shmOffBell), 1)
		futex.Wake(word(b, shmOffBell), futex.All)
	}
}

// step publishes v and waits until every member has; bytes >= 0 checks that the members'
// call numbers and byte counts (setMeta) match.
func (g *shmGroup) step(c *call, v uint64, bytes int) error {
	return g.stepLast(c, v, bytes, shmWaitAll)
}

// Whom stepLast waits for: every member, none, or member i (i >= 0).
const (
	shmWaitAll  = -1
	shmWaitNone = -2
)

// stepLast publishes v and waits for the members this member reads from in step v: every
// member (shmWaitAll: step), none, or member only. A step that does not wait for every
// member must be the last of the call on g: the next call's settle waits for the rest
// before any write (so no member rewrites a slot another has yet to read). The wait
// checks the call numbers and byte counts of the members it waits for (bytes >= 0);
// a member that waits for none checks none, and leaves that to those that read its data.
func (g *shmGroup) stepLast(c *call, v uint64, bytes, only int) error {
	g.publish(v)
	var err error
	switch only {
	case shmWaitAll:
		err = g.waitAll(c, v, bytes)
	case shmWaitNone:
	default:
		if err = g.wait(c, only, v); err == nil && bytes >= 0 {
			err = g.checkMeta(c, only, v, bytes)
		}
	}
	if err != nil {
		var ce shmCountErr
		if errors.As(err, &ce) {
			return g.cleanFail(v, err)
		}
		return err
	}
	g.seq = v
	if only != shmWaitAll {
		g.lazy = v
	}
	return nil
}

// shmCountErr is a mismatch seen at a call's first step v by every member that can see
// it: counts that differ within one call (not another call's number), or a v-form's
// verdict. Every member that saw it published v and no other step of the call, and a
// member that did not see it ended the call with v (stepLast), so the group's steps are
// still in step: cleanFail keeps the group, which needs no new setup.
type shmCountErr struct{ error }

func (e shmCountErr) Unwrap() error { return e.error }

// cleanFail records that the call failed at its first step v without leaving the group
// out of step (shmCountErr): the group keeps its setup, and the big buffers' turn goes
// back to where the call began. localState.fail reads clean.
func (g *shmGroup) cleanFail(v uint64, err error) error {
	g.seq, g.bigNext, g.bigFree, g.clean, g.lazy = v, g.callBig, g.callFree, true, v
	if _, ok := err.(shmCountErr); ok {
		return err
	}
	return shmCountErr{err}
}

// chunkStep is step for chunk-by-chunk calls: the call's first chunk (first) carries its
// meta word, and its step checks the members' call numbers and byte counts.
func (g *shmGroup) chunkStep(c *call, v uint64, first bool, bytes int) error {
	if !first || bytes < 0 {
		return g.step(c, v, -1)
	}
	g.setMeta(c, v, bytes)
	return g.step(c, v, bytes)
}

// waitAll waits until every other member has published step v; bytes >= 0 also checks
// their call numbers and byte counts for step v.
func (g *shmGroup) waitAll(c *call, v uint64, bytes int) error {
	// Load every member's flag line first. The loads are independent, so their line
	// transfers overlap; one wait after another would take them one at a time, and a
	// step on many members would cost a transfer per member.
	late := false
	for i := range g.ranks {
		if i != g.me && atomic.LoadUint64(word(g.mem[i], flagOff(v)+shmFlagSeq)) < v {
			late = true
		}
	}
	for i := range g.ranks {
		if i == g.me {
			continue
		}
		if late {
			if err := g.wait(c, i, v); err != nil {
				return err
			}
		}
		if bytes < 0 {
			continue
		}
		if err := g.checkMeta(c, i, v, bytes); err != nil {
			return err
		}
	}
	return nil
}

// checkMeta checks member i's meta word of step v, a call's first, against this call's.
// Another byte count within the same call is a shmCountErr.
func (g *shmGroup) checkMeta(c *call, i int, v uint64, bytes int) error {
	got, want := atomic.LoadUint64(word(g.mem[i], flagOff(v)+shmFlagMeta)), shmMeta(c, bytes)
	switch {
	case shmMetaCall(got) != shmMetaCall(want):
		return fmt.Errorf("%w: rank %d is in %s, rank %d in %s (call #%d on this World's numbering): every rank must make its collective calls in the same order, with the same root and counts (a count of 0 returns without a step)",
			ErrMismatch, g.ranks[i], shmCallText(got), g.ranks[g.me], shmCallText(want), c.s.seq)
	case got != want:
		return shmCountErr{fmt.Errorf("%w: rank %d passed %d bytes to %s, rank %d passed %d (do all ranks pass the same counts?)",
			ErrMismatch, g.ranks[i], got&shmMetaBytes, shmKindName(c.kind), g.ranks[g.me], want&shmMetaBytes)}
	}
	return nil
}

// wait waits until member i has published step v (see the type's documentation).
func (g *shmGroup) wait(c *call, i int, v uint64) error {
	b := g.mem[i]
	ctr := word(b, flagOff(v)+shmFlagSeq)
	if atomic.LoadUint64(ctr) >= v {
		return nil
	}
	c.s.flushEvents(false) // while the peer is on its way
	// Each rank has a processor: a bare spin for the waiting rule's budget, so that the
	// publisher's store is seen one line transfer after it happens (see the type's
	// documentation). Oversubscribed: waitYield.
	var start time.Time // from the first check (most waits end before)
	if g.oversub {
		if done, err := g.waitYield(c, i, ctr, v); done || err != nil {
			return err
		}
	} else if budget := g.rule.Budget(); budget > 0 {
		yield := g.rule.Yields()
		var first, last time.Duration // substrate.WaitClock at the first and the last check
		for n := 1; ; n++ {
			if atomic.LoadUint64(ctr) >= v {
				return nil
			}
			if n%shmSpinCheck == 0 {
				if err := g.check(c, i); err != nil {
					return err
				}
				now := substrate.WaitClock()
				if first == 0 {
					first, start = now, time.Now()
				} else if g.rule.Spun(last, now) || now-first > budget {
					break
				}
				last = now
				if yield {
					goruntime.Gosched() // one P: the rank's other goroutines get a turn, no thread wakes
				}
			}
		}
	}
	if start.IsZero() {
		start = time.Now()
	}
	for d := shmSleepFirst; ; d = shmSleep {
		atomic.AddUint64(word(b, shmOffSleep), 1)
		bell := uint32(atomic.LoadUint64(word(b, shmOffBell)))
		if atomic.LoadUint64(ctr) >= v {
			atomic.AddUint64(word(b, shmOffSleep), ^uint64(0))
			g.rule.Done(time.Since(start), true)
			return nil
		}
		futex.Wait(word(b, shmOffBell), bell, d)
		atomic.AddUint64(word(b, shmOffSleep), ^uint64(0))
		if atomic.LoadUint64(ctr) >= v {
			g.rule.Done(time.Since(start), true)
			return nil
		}
		if err := g.check(c, i); err != nil {
			return err
		}
		if d == shmSleep {
			goruntime.Gosched() // a long wait: the rank's other goroutines get a turn
		}
	}
}

// check returns ctx's error or member i's failure.
func (g *shmGroup) check(c *call, i int) error {
	c.s.flushEvents(true) // a wait this long has time for it
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if err := g.remotes[i].Err(); err != nil {
		var pe *runtime.ProcError
		if errors.As(err, &pe) {
			return err
		}
		return fmt.Errorf("rank %d waiting for rank %d: %w", g.ranks[g.me], g.ranks[i], err)
	}
	if c.s.comm != nil {
		return substrate.Broken(c.s.comm) // another member failed: the one waited for may have left
	}
	return nil
}

// shmMoved counts the bytes a member copies through scratch: stored into its own, and
// loaded from the members' (its own slot included where an algorithm reads it back).
// collectives/design.md's byte model gives them per call, and TestSHMByteModel checks
// the counts against it. Plain adds: a group serves one call at a time.
type shmMoved struct{ stored, loaded int }

// scratchIn copies src into dst, this member's scratch, and counts the bytes.
func scratchIn[T runtime.Elem](g *shmGroup, dst, src []T) {
	g.moved.stored += copy(dst, src) * elemSize[T]()
}

// scratchInBig copies src into dst, this member's big buffer, and counts the bytes: with
// non-temporal stores (copyShared) where nt says so, the tuning's choice for the caller's
// kind of block (shmGroup.nt, shmGroup.ntSpread).
func scratchInBig[T runtime.Elem](g *shmGroup, dst, src []T, nt bool) {
	if !nt {
		scratchIn(g, dst, src)
		return
	}
	g.moved.stored += copyShared(dst, src) * elemSize[T]()
}

// scratchOut copies src, a member's scratch, into dst, and counts the bytes.
func scratchOut[T runtime.Elem](g *shmGroup, dst, src []T) {
	g.moved.loaded += copy(dst, src) * elemSize[T]()
}
