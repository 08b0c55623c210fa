package verbstest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// remoteOps are the operations that name remote memory, with what they need.
var remoteOps = []struct {
	op         verbs.Opcode
	need, user verbs.Caps // capability for arena targets; extra one for user-memory targets
	right      verbs.Access
}{
	{verbs.OpRDMAWrite, verbs.CapRDMAWrite, verbs.CapUserMemRDMA, verbs.RemoteWrite},
	{verbs.OpRDMARead, verbs.CapRDMARead, verbs.CapUserMemRDMA, verbs.RemoteRead},
	{verbs.OpAtomicFetchAdd, verbs.CapAtomic, verbs.CapUserMemAtomic, verbs.RemoteAtomic},
	{verbs.OpAtomicCmpSwap, verbs.CapAtomic, verbs.CapUserMemAtomic, verbs.RemoteAtomic},
}

// badAccess is a remote access the target must refuse.
type badAccess struct {
	rkey, off uint64
	n         int
	guard     *buffer // memory that must stay untouched (nil: none)
	// rightOnly marks a valid key used without the needed right, which ArenaStats does not
	// promise to count as a key rejection (stale, forged or out-of-range keys).
	rightOnly bool
}

// accessScenario prepares a refused access of op to memory of kind k on target.
type accessScenario struct {
	name string
	prep func(t *testing.T, target *node, k memKind, op verbs.Opcode, right verbs.Access) []badAccess
}

const mrLen = 4096

var accessScenarios = []accessScenario{
	{"StaleKey", func(t *testing.T, n *node, k memKind, _ verbs.Opcode, _ verbs.Access) []badAccess {
		mr := n.alloc(t, k, mrLen, n.fullAccess(k))
		key := mr.rkey()
		deregOK(t, mr)
		return []badAccess{{rkey: key, n: 8}}
	}},
	{"StaleKeyReusedMemory", func(t *testing.T, n *node, k memKind, _ verbs.Opcode, _ verbs.Access) []badAccess {
		old := n.alloc(t, k, mrLen, n.fullAccess(k))
		key := old.rkey()
		deregOK(t, old)
		var fresh *buffer
		if k == userMem { // register the very same bytes again
			mr, err := n.pd.RegMR(old.b, n.fullAccess(k))
			if err != nil {
				t.Fatalf("RegMR of the same buffer again: %v", err)
			}
			t.Cleanup(func() { _ = mr.Dereg() })
			fresh = &buffer{mr: mr, b: old.b}
		} else { // same size: the arena likely hands out the same bytes
			fresh = n.alloc(t, k, mrLen, n.fullAccess(k))
		}
		if fresh.rkey() == key {
			t.Fatalf("the new MR got the deregistered MR's key %#x", key)
		}
		fill(fresh.b, 71)
		return []badAccess{{rkey: key, n: 8, guard: fresh}, {rkey: key, off: mrLen - 8, n: 8, guard: fresh}}
	}},
	{"ForgedKey", func(t *testing.T, n *node, k memKind, _ verbs.Opcode, _ verbs.Access) []badAccess {
		mr := n.alloc(t, k, mrLen, n.fullAccess(k))
		fill(mr.b, 72)
		rng := rand.New(rand.NewPCG(uint64(mr.rkey()), 3))
		var out []badAccess
		for _, key := range []uint64{rng.Uint64(), rng.Uint64(), mr.rkey() + 1, mr.rkey() - 1, mr.rkey() ^ 1<<63,
			mr.rkey() ^ 1<<44, ^uint64(0)} {
			if key != mr.rkey() {
				out = append(out, badAccess{rkey: key, n: 8, guard: mr})
			}
		}
		return out
	}},
	{"OutOfBounds", func(t *testing.T, n *node, k memKind, op verbs.Opcode, _ verbs.Access) []badAccess {
		mr := n.alloc(t, k, mrLen, n.fullAccess(k))
		fill(mr.b, 73)
		at := func(off uint64, n int) badAccess { return badAccess{rkey: mr.rkey(), off: off, n: n, guard: mr} }
		if op.IsAtomic() { // aligned, so only the bounds are wrong
			return []badAccess{at(mrLen, 8), at(1<<63, 8), at(math.MaxUint64-7, 8)}
		}
		return []badAccess{at(mrLen, 1), at(mrLen-4, 8), at(0, mrLen+1), at(1<<63, 1), at(math.MaxUint64-2, 8)}
	}},
	{"MissingRight", func(t *testing.T, n *node, k memKind, _ verbs.Opcode, right verbs.Access) []badAccess {
		mr := n.alloc(t, k, mrLen, n.fullAccess(k)&^right)
		fill(mr.b, 74)
		none := n.alloc(t, k, mrLen, verbs.LocalWrite)
		fill(none.b, 75)
		return []badAccess{{rkey: mr.rkey(), n: 8, guard: mr, rightOnly: true},
			{rkey: none.rkey(), n: 8, guard: none, rightOnly: true}}
	}},
}

func deregOK(t *testing.T, b *buffer) {
	t.Helper()
	err, ok := within(waitTimeout, b.mr.Dereg)
	if !ok || err != nil {
		t.Fatalf("Dereg: %v (returned: %v)", err, ok)
	}
}

// testRemoteAccessErrors runs every refused-access scenario for every remote operation on
// arena and user memory: the initiator gets RemAccessErr, its QP goes to Err and flushes
// later work, the target memory stays untouched and the target counts a key rejection.
func testRemoteAccessErrors(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	for _, ro := range remoteOps {
		t.Run(ro.op.String(), func(t *testing.T) {
			needCaps(t, ro.need, a, b)
			for _, k := range []memKind{arenaMem, userMem} {
				for _, sc := range accessScenarios {
					t.Run(sc.name+"/"+k.String(), func(t *testing.T) {
						if k == userMem {
							needCaps(t, ro.user, a, b)
						}
						for i, ba := range sc.prep(t, b, k, ro.op, ro.right) {
							what := fmt.Sprintf("%v #%d (rkey %#x offset %#x length %d)", ro.op, i, ba.rkey, ba.off, ba.n)
							remoteFailure(t, e, a, b, ro.op, ba, verbs.RemAccessErr, what)
						}
					})
				}
			}
		})
	}
}

// testMisalignedAtomic checks RemInvReqErr for an atomic on an address that is not 8-byte
// aligned.
func testMisalignedAtomic(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapAtomic, a, b)
	for _, op := range []verbs.Opcode{verbs.OpAtomicFetchAdd, verbs.OpAtomicCmpSwap} {
		for _, off := range []uint64{1, 3, 4, 7, 12} {
			t.Run(fmt.Sprintf("%v@%d", op, off), func(t *testing.T) {
				mr := b.alloc(t, arenaMem, mrLen, verbs.AccessAll)
				fill(mr.b, 76)
				remoteFailure(t, e, a, b, op, badAccess{rkey: mr.rkey(), off: off, n: 8, guard: mr}, verbs.RemInvReqErr,
					fmt.Sprintf("%v at offset %d", op, off))
			})
		}
	}
}

// remoteFailure runs one refused access on a fresh QP pair and checks its consequences.
func remoteFailure(t *testing.T, e *env, a, b *node, op verbs.Opcode, ba badAccess, want verbs.Status, what string) {
	t.Helper()
	x, _ := e.link(t, a, b, qpOpts{})
	loc := a.alloc(t, arenaMem, max(ba.n, 8), verbs.LocalWrite)
	fill(loc.b, 77)
	spare := b.alloc(t, arenaMem, 64, verbs.AccessAll)
	fill(spare.b, 78)
	spareBefore := clone(spare.b)
	var guardBefore []byte
	if ba.guard != nil {
		guardBefore = clone(ba.guard.b)
	}
	rejected := b.dev.Stats().KeyRejections
	post(t, x, verbs.SendWR{WRID: 1, Op: op, Flags: verbs.Signaled, Local: loc.b[:ba.n], LKey: loc.lkey(),
		Remote: verbs.RemoteAddr{RKey: ba.rkey, Offset: ba.off}, CompareAdd: 1, Swap: 2})
	wc := e.waitOne(t, x.cq)
	checkWC(t, what, wc, verbs.WC{WRID: 1, Status: want, Op: verbs.WCOpcodeOf(op), QPN: x.qp.Num()}, fBasic)
	afterError(t, e, x, spare, what)
	if ba.guard != nil {
		checkBytes(t, what+": target memory after the refused access", ba.guard.b, guardBefore)
	}
	checkBytes(t, what+": memory the flushed write named", spare.b, spareBefore)
	if want == verbs.RemAccessErr && !ba.rightOnly {
		if got := b.dev.Stats().KeyRejections; got <= rejected {
			t.Errorf("%s: target's Stats().KeyRejections stayed at %d", what, got)
		}
	}
}

// afterError checks that x is in Err after an error completion and that a later signaled
// write (to spare, which must not change) completes with WRFlushErr.
func afterError(t *testing.T, e *env, x *end, spare *buffer, what string) {
	t.Helper()
	wantState(t, what+": after the error completion", x.qp, verbs.Err)
	if !caps(x.node).Has(verbs.CapRDMAWrite) {
		return
	}
	src := x.node.alloc(t, unregMem, len(spare.b), 0)
	post(t, x, verbs.SendWR{WRID: 2, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b,
		Remote: verbs.RemoteAddr{RKey: spare.rkey()}})
	checkWC(t, what+": write posted after the error", e.waitOne(t, x.cq),
		verbs.WC{WRID: 2, Status: verbs.WRFlushErr, Op: verbs.WCRDMAWrite, QPN: x.qp.Num()}, fBasic)
}
