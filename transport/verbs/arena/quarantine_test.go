package arena

import (
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// TestQuarantineOrder fills a small arena with window-like regions, frees them in order,
// and checks that freed blocks come back only when no other space is left, the oldest
// first, and that a block reused from the quarantine is not Zero.
func TestQuarantineOrder(t *testing.T) {
	const blk = 64 << 10
	a := newArena(t, Config{Name: "q", Size: 8 * blk, Quarantine: 8 * blk})
	var rs []Region
	for range 4 {
		r, err := a.Alloc(blk, verbs.AccessAll)
		if err != nil {
			t.Fatal(err)
		}
		r.Bytes[0] = 1
		rs = append(rs, r)
	}
	for _, r := range rs { // freed oldest first: rs[0] … rs[3]
		if err := a.Free(r); err != nil {
			t.Fatal(err)
		}
	}
	if n, b := a.Quarantined(); n != 4 || b != 4*blk {
		t.Fatalf("quarantine holds %d blocks, %d bytes; want 4, %d", n, b, 4*blk)
	}
	freed := map[int64]int{}
	for i, r := range rs {
		freed[r.Off] = i
	}
	// Four fresh blocks remain: they are served first.
	for i := range 4 {
		r, err := a.Alloc(blk, verbs.AccessAll)
		if err != nil {
			t.Fatal(err)
		}
		if j, ok := freed[r.Off]; ok {
			t.Fatalf("allocation %d got the block freed %dth while fresh space remained", i, j)
		}
		if !r.Zero {
			t.Fatalf("allocation %d of untouched memory is not Zero", i)
		}
	}
	// Now only quarantined blocks are left: the oldest comes back first.
	for want := range 4 {
		r, err := a.Alloc(blk, verbs.RemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := freed[r.Off]; !ok || got != want {
			t.Fatalf("reuse %d: got the block at %d (freed %dth, known %v), want the one freed %dth",
				want, r.Off, got, ok, want)
		}
		if r.Zero {
			t.Fatalf("reuse %d: a block reused from the quarantine claims Zero", want)
		}
	}
	if _, err := a.Alloc(blk, verbs.AccessAll); err == nil {
		t.Fatal("allocation past the arena succeeded")
	}
}

// TestQuarantineBound checks the cap: past it the oldest block is released, a block
// larger than the cap is held alone, and regions without remote write rights are never held.
func TestQuarantineBound(t *testing.T) {
	const blk = 64 << 10
	a := newArena(t, Config{Name: "qb", Size: 1 << 20, Quarantine: 2 * blk})
	alloc := func(n int, acc verbs.Access) Region {
		t.Helper()
		r, err := a.Alloc(n, acc)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r0, r1, r2 := alloc(blk, verbs.AccessAll), alloc(blk, verbs.AccessAll), alloc(blk, verbs.AccessAll)
	a.Free(r0)
	a.Free(r1)
	a.Free(r2) // past the cap: r0, the oldest, is released
	if n, b := a.Quarantined(); n != 2 || b != 2*blk {
		t.Fatalf("quarantine holds %d blocks, %d bytes; want 2, %d", n, b, 2*blk)
	}
	if st := a.Stats(); st.ResidentFree != blk || st.InUse != 0 {
		t.Fatalf("stats %+v: want the released block resident free, nothing in use", st)
	}
	if r := alloc(blk, verbs.AccessAll); r.Off != r0.Off {
		t.Fatalf("got the block at %d, want the one released past the cap (%d)", r.Off, r0.Off)
	}
	big := alloc(4*blk, verbs.AccessAll)
	a.Free(big)
	if n, b := a.Quarantined(); n != 1 || b != 4*blk {
		t.Fatalf("after freeing a block larger than the cap the quarantine holds %d blocks, %d bytes; want it alone", n, b)
	}
	send := alloc(blk, verbs.RemoteRead)
	a.Free(send)
	if r := alloc(blk, verbs.RemoteRead); r.Off != send.Off {
		t.Fatalf("a send region was held back: got %d, want %d", r.Off, send.Off)
	}
	if n, _ := a.Quarantined(); n != 1 {
		t.Fatalf("quarantine holds %d blocks after send regions came and went, want 1", n)
	}
}

// TestQuarantineGuard runs checked mode: a quarantined block faults on write until it is
// reused, and then it is writable again.
func TestQuarantineGuard(t *testing.T) {
	defer func(f func() bool) { checking = f }(checking)
	checking = func() bool { return true }
	a := newArena(t, Config{Name: "qg", Size: 2 * pageSize, Quarantine: 4 * pageSize})
	r, err := a.Alloc(pageSize, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	small, err := a.Alloc(64, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	stale := r.Bytes
	a.Free(r)
	a.Free(small) // sub-page: shares its page, so it is quarantined but not guarded
	if !Guarded(stale) || Guarded(small.Bytes) {
		t.Fatalf("Guarded: freed page %v, freed sub-page block %v; want true, false", Guarded(stale), Guarded(small.Bytes))
	}
	if addr, ok := writeFaults(stale); !ok || addr != uintptr(unsafe.Pointer(&stale[0])) {
		t.Fatalf("a write to a guarded block: faulted %v at %#x, want a fault at %p", ok, addr, &stale[0])
	}
	// The arena has no other page: the guarded one comes back, writable.
	r2, err := a.Alloc(pageSize, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Off != r.Off || Guarded(r2.Bytes) {
		t.Fatalf("reuse got offset %d (want %d), guarded %v", r2.Off, r.Off, Guarded(r2.Bytes))
	}
	if _, faulted := writeFaults(r2.Bytes); faulted {
		t.Fatal("a reused block still faults")
	}
}

// writeFaults writes b[0] and reports the fault address if the write faulted.
func writeFaults(b []byte) (addr uintptr, faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if e, ok := recover().(interface{ Addr() uintptr }); ok {
			addr, faulted = e.Addr(), true
		}
	}()
	b[0] = 42
	return 0, false
}
