package verbstest

import (
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// testDevice checks what a freshly opened device reports.
func testDevice(t *testing.T, f Factory) {
	e := newEnv(f)
	a := e.open(t, "A")
	if got := a.dev.Provider(); got != f.Provider {
		t.Errorf("Provider() = %q, want %q", got, f.Provider)
	}
	p, _ := verbs.Lookup(f.Provider)
	if p != nil && !p.Caps().Has(a.dev.Caps()) {
		t.Errorf("device Caps %v exceed provider Caps %v", a.dev.Caps(), p.Caps())
	}
	if s := a.dev.Stats(); s.Reserved <= 0 {
		t.Errorf("Stats().Reserved = %d on an opened device, want the arena's size", s.Reserved)
	}
	t.Logf("%s caps: %v", f.Provider, a.dev.Caps())
}

// testMR checks memory region basics: accessors, zeroed first use, distinct keys, aliasing
// of RegMR memory, and refusal of bad arguments without a panic.
func testMR(t *testing.T, f Factory) {
	e := newEnv(f)
	a := e.open(t, "A")
	keys := map[uint64]string{}
	for _, size := range []int{1, 8, 4093, 4096, 1 << 20} {
		mr := a.alloc(t, arenaMem, size, verbs.AccessAll)
		for i, v := range mr.b {
			if v != 0 {
				t.Errorf("AllocMR(%d) on a fresh device: byte %d is %#x, want zeroed memory", size, i, v)
				break
			}
		}
		fill(mr.b, uint64(size)) // the memory is writable
		for _, k := range []uint64{mr.rkey()} {
			if prev, dup := keys[k]; dup {
				t.Errorf("live MRs share the remote key %#x (%s)", k, prev)
			}
			keys[k] = "arena"
		}
	}
	if caps(a).Has(verbs.CapUserMemRDMA) {
		u := a.alloc(t, userMem, 4096, a.fullAccess(userMem))
		if _, dup := keys[u.rkey()]; dup {
			t.Errorf("RegMR got the remote key %#x of a live MR", u.rkey())
		}
	}
	mr := a.alloc(t, arenaMem, 64, verbs.AccessAll)
	deregOK(t, mr)
	var err error
	if p := catch(func() { err = mr.mr.Dereg() }); p != nil {
		t.Errorf("second Dereg panicked: %v", p)
	} else if err == nil {
		t.Errorf("second Dereg of an MR succeeded, want an error")
	}
	for _, n := range []int{-1, -4096} {
		var mr verbs.MR
		if p := catch(func() { mr, err = a.pd.AllocMR(n, verbs.AccessAll) }); p != nil {
			t.Errorf("AllocMR(%d) panicked: %v", n, p)
		} else if err == nil {
			t.Errorf("AllocMR(%d) succeeded, want an error", n)
			_ = mr.Dereg()
		}
	}
}

// testStats checks the arena counters: allocation, reuse of freed memory of the same size,
// live MRs, and key rejections (those are also checked by every refused remote access).
// The reused regions give peers no write rights: freed memory that peers may write goes
// to the arena's quarantine instead, and is reused only once other space runs out.
func testStats(t *testing.T, f Factory) {
	e := newEnv(f)
	a := e.open(t, "A")
	const size = 64 << 10
	const access = verbs.LocalWrite | verbs.RemoteRead
	s0 := a.dev.Stats()
	first, err := a.pd.AllocMR(size, access)
	if err != nil {
		t.Fatal(err)
	}
	s1 := a.dev.Stats()
	if s1.Allocs != s0.Allocs+1 || s1.LiveMRs != s0.LiveMRs+1 || s1.InUse < s0.InUse+size {
		t.Errorf("after AllocMR(%d): Allocs %d→%d, LiveMRs %d→%d, InUse %d→%d", size,
			s0.Allocs, s1.Allocs, s0.LiveMRs, s1.LiveMRs, s0.InUse, s1.InUse)
	}
	fill(first.Bytes(), 91) // fault the pages in
	if err := first.Dereg(); err != nil {
		t.Fatal(err)
	}
	s2 := a.dev.Stats()
	if s2.LiveMRs != s0.LiveMRs || s2.InUse != s0.InUse {
		t.Errorf("after Dereg: LiveMRs %d (want %d), InUse %d (want %d)", s2.LiveMRs, s0.LiveMRs, s2.InUse, s0.InUse)
	}
	second := a.alloc(t, arenaMem, size, access)
	s3 := a.dev.Stats()
	if s3.Reuses < s2.Reuses+1 {
		t.Errorf("AllocMR/Dereg/AllocMR of %d bytes: Reuses %d→%d, want an increment", size, s2.Reuses, s3.Reuses)
	}
	if s3.Allocs != s0.Allocs+2 {
		t.Errorf("Allocs %d after two AllocMR calls, started at %d", s3.Allocs, s0.Allocs)
	}
	if second.rkey() == first.RKey() {
		t.Errorf("reused memory got the old key %#x", first.RKey())
	}
	u := a.alloc(t, userMem, 4096, verbs.LocalWrite)
	if s := a.dev.Stats(); s.LiveMRs != s3.LiveMRs+1 {
		t.Errorf("RegMR: LiveMRs %d→%d, want an increment (the count covers user memory)", s3.LiveMRs, s.LiveMRs)
	}
	deregOK(t, u)

	b := e.open(t, "B")
	if !caps(a, b).Has(verbs.CapRDMAWrite) {
		return
	}
	x, _ := e.link(t, b, a, qpOpts{})
	rejected := a.dev.Stats().KeyRejections
	src := b.alloc(t, unregMem, 8, 0)
	post(t, x, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b,
		Remote: verbs.RemoteAddr{RKey: first.RKey()}})
	checkWC(t, "write with a stale key", e.waitOne(t, x.cq), verbs.WC{WRID: 1, Status: verbs.RemAccessErr}, fWRID|fStatus)
	if got := a.dev.Stats().KeyRejections; got != rejected+1 {
		t.Errorf("KeyRejections %d→%d after one refused access", rejected, got)
	}
}
