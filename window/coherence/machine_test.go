package coherence

import (
	"errors"
	"fmt"
	"testing"
)

// memNet is a minimal driver for tests: every rank's memory in one place, operations run
// at once in emission order.
type memNet struct {
	ranks, pages int
	ms           []*Machine
	ver, slot    [][]uint64
	flag         [][]uint64
	outs         []Outcome
	ops          []Op // every op executed, in order
}

func newMemNet(ranks, pages int, cfg Config) *memNet {
	n := &memNet{ranks: ranks, pages: pages}
	for r := range ranks {
		c := cfg
		c.Self, c.Ranks, c.Pages = r, ranks, pages
		n.ms = append(n.ms, New(c))
		n.ver = append(n.ver, make([]uint64, pages))
		n.slot = append(n.slot, make([]uint64, pages*ranks))
		n.flag = append(n.flag, make([]uint64, ranks*pages))
	}
	return n
}

func (n *memNet) word(w Word) *uint64 {
	switch w.Kind {
	case Slot:
		return &n.slot[w.Rank][w.Page*n.ranks+w.Cacher]
	case Version:
		return &n.ver[w.Rank][w.Page]
	}
	return &n.flag[w.Rank][w.Home*n.pages+w.Page]
}

// drive runs rank r's Machine until it has no output, executing every op at once.
func (n *memNet) drive(r int) {
	m := n.ms[r]
	for m.HasReady() {
		rd := m.Ready()
		n.outs = append(n.outs, rd.Outcomes...)
		for _, op := range rd.Ops {
			n.ops = append(n.ops, op)
			var res uint64
			var words []uint64
			switch op.Kind {
			case ReadData:
			case ReadSlots:
				words = n.slot[op.Target][op.Page*n.ranks : (op.Page+op.N)*n.ranks]
			default:
				p := n.word(op.Word)
				res = *p
				switch op.Kind {
				case Write:
					*p = op.Value
				case CAS:
					if *p == op.Expect {
						*p = op.Value
					}
				case FetchAdd:
					*p += op.Value
				}
			}
			m.Done(op.ID, res, words, nil)
		}
		m.Advance()
	}
}

func (n *memNet) take() []Outcome {
	o := n.outs
	n.outs = n.outs[:0]
	return o
}

func TestGetPromoteFillHitWrite(t *testing.T) {
	n := newMemNet(3, 4, Config{})
	c, w := n.ms[1], n.ms[2]
	c.Get(1, 0, 2) // first miss: uncached
	n.drive(1)
	if o := n.take(); len(o) != 1 || o[0].Kind != Served || o[0].FromCache {
		t.Fatalf("first miss: %+v", o)
	}
	c.Get(2, 0, 2) // second miss: fill
	n.drive(1)
	if o := n.take(); len(o) != 1 || !o[0].FromCache || !o[0].Installed {
		t.Fatalf("fill: %+v", o)
	}
	f := n.flag[1][0*4+2]
	if !Usable(f) || n.slot[0][2*3+1] == 0 {
		t.Fatalf("after fill: flag %#x slot %d", f, n.slot[0][2*3+1])
	}
	w.Wrote(3, 0, 1, 3)
	n.drive(2)
	if o := n.take(); len(o) != 1 || o[0].Kind != Completed || o[0].Req != 3 {
		t.Fatalf("write: %+v", o)
	}
	if Usable(n.flag[1][2]) || n.slot[0][2*3+1] != 0 || n.ver[0][2] != 1 {
		t.Fatalf("after write: flag %#x slot %d ver %d", n.flag[1][2], n.slot[0][2*3+1], n.ver[0][2])
	}
}

func TestRevalidateAfterSpuriousInvalidation(t *testing.T) {
	n := newMemNet(2, 1, Config{Promote: 1})
	m := n.ms[1]
	m.Get(1, 0, 0)
	n.drive(1)
	n.take()
	// A writer whose version bump preceded the fill's version read invalidates it
	// spuriously: the flag is cleared, the slot and the version are unchanged.
	n.flag[1][0] = 0
	n.ops = n.ops[:0]
	m.Get(2, 0, 0)
	n.drive(1)
	var remote []OpKind
	for _, op := range n.ops {
		if op.Target == 0 {
			remote = append(remote, op.Kind)
		}
	}
	if len(remote) != 2 || remote[0] != CAS || remote[1] != ReadVersion {
		t.Errorf("revalidation ops to the home: %v, want [CAS ReadVersion]", remote)
	}
	if o := n.take(); len(o) != 1 || !o[0].FromCache || !o[0].Installed || !Usable(n.flag[1][0]) {
		t.Errorf("revalidation: %+v flag %#x", o, n.flag[1][0])
	}
}

func TestCrashFailsGetsAndWrites(t *testing.T) {
	n := newMemNet(3, 2, Config{Promote: 1})
	m := n.ms[1]
	m.Get(1, 0, 0)
	m.Wrote(2, 0, 0, 2)
	rd := m.Ready()
	local := rd.Ops[0] // the Get's Filling store; the write's ops all go to rank 0
	if local.Target != 1 {
		t.Fatalf("first op %v", local)
	}
	m.Advance()
	m.Crashed(0)
	m.Done(local.ID, 0, nil, nil)
	var got []Outcome
	for m.HasReady() {
		rd := m.Ready()
		got = append(got, rd.Outcomes...)
		for _, op := range rd.Ops {
			if op.Target == 0 {
				t.Fatalf("op %v to a dead rank", op)
			}
			m.Done(op.ID, 0, nil, nil)
		}
		m.Advance()
	}
	failed := 0
	for _, o := range got {
		if o.Kind == Failed && errors.Is(o.Err, ErrCrashed) {
			failed++
		}
	}
	if failed != 2 {
		t.Fatalf("outcomes after crash: %+v", got)
	}
	m.Get(3, 0, 1)
	if rd := m.Ready(); len(rd.Outcomes) != 1 || rd.Outcomes[0].Kind != Failed {
		t.Fatalf("Get from a dead home: %+v", rd)
	}
}

func TestDoneUnknownOpPanics(t *testing.T) {
	m := New(Config{Self: 0, Ranks: 2})
	defer func() {
		if recover() == nil {
			t.Fatal("Done of a never-emitted op did not panic")
		}
	}()
	m.Done(OpID(1<<32|7), 0, nil, nil)
}

// TestSteadyStateAllocs pins that fills, invalidations and owner syncs allocate nothing
// once the pages have been seen.
func TestSteadyStateAllocs(t *testing.T) {
	n := newMemNet(3, 4, Config{Promote: 1})
	cycle := func() {
		n.ops = n.ops[:0]
		n.ms[1].Get(1, 0, 1)
		n.drive(1)
		n.ms[2].Wrote(2, 0, 0, 4)
		n.drive(2)
		n.ms[0].OwnerSync(3)
		n.drive(0)
		n.outs = n.outs[:0]
	}
	cycle()
	if a := testing.AllocsPerRun(200, cycle); a != 0 {
		t.Errorf("steady state allocates %v per cycle", a)
	}
}

func BenchmarkFillInvalidate(b *testing.B) {
	n := newMemNet(3, 4, Config{Promote: 1})
	b.ReportAllocs()
	for b.Loop() {
		n.ms[1].Get(1, 0, 1)
		n.drive(1)
		n.ms[2].Wrote(2, 0, 1, 1)
		n.drive(2)
		n.outs = n.outs[:0]
		n.ops = n.ops[:0]
	}
}

func Example() {
	// Rank 1 of 2 caches page 0 of rank 0. The driver executes every op at once here.
	m := New(Config{Self: 1, Ranks: 2, Promote: 1})
	m.Get(1, 0, 0)
	for m.HasReady() {
		rd := m.Ready()
		for _, o := range rd.Outcomes {
			fmt.Println(o.Kind, "req", o.Req, "from cache:", o.FromCache, "installed:", o.Installed)
		}
		for _, op := range rd.Ops {
			fmt.Println(op.Kind, op.Word.Kind, "at rank", op.Target)
			var res uint64
			if op.Kind == CAS {
				res = op.Expect // the flag still holds Filling(t): the CAS succeeds
			}
			m.Done(op.ID, res, nil, nil)
		}
		m.Advance()
	}
	// Output:
	// Write flag at rank 1
	// Write slot at rank 0
	// ReadVersion ver at rank 0
	// ReadData word(?) at rank 0
	// CAS flag at rank 1
	// Served req 1 from cache: true installed: true
}
