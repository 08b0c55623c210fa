package runtime

import "testing"

func TestCtxAllocDup(t *testing.T) {
	a := newCtxAlloc()
	for want := uint16(ctxPerWorld); want < 3*ctxPerWorld; want += ctxPerWorld {
		if c, ok := a.takeDup(); !ok || c != want {
			t.Fatalf("takeDup = %d, %v; want %d", c, ok, want)
		}
	}
	// Dups run into the lowest Split block.
	a.top = a.next + ctxPerWorld
	if _, ok := a.takeDup(); !ok {
		t.Fatal("takeDup failed with room for one World")
	}
	if c, ok := a.takeDup(); ok {
		t.Fatalf("takeDup = %d past top", c)
	}
}

func TestCtxAllocFreeAndReuse(t *testing.T) {
	a := newCtxAlloc()
	c1, _ := a.takeDup()
	c2, _ := a.takeDup()
	for _, c := range []uint16{c2, c1} {
		a.giveBack(c, nil)
		a.markFreed(c)
		a.release(c, false)
	}
	for c := c1; c < c2+ctxPerWorld; c++ {
		if !a.isFreed(c) {
			t.Fatalf("context %d not freed", c)
		}
	}
	if a.isFreed(c2 + ctxPerWorld) {
		t.Fatal("a context past the freed Worlds is freed")
	}
	if c, ok := a.freedDup(); !ok || c != c1 {
		t.Fatalf("freedDup = %d, %v; want the lowest, %d", c, ok, c1)
	}
	a.await(c1, 3)
	a.await(c1, 5)
	if !a.awaiting(c1, 5) || a.awaiting(c1, 4) {
		t.Fatal("awaiting disagrees with await")
	}
	if a.markArrived(4, c1) || !a.markArrived(3, c1) || a.markArrived(3, c1) {
		t.Fatal("markArrived: only an awaited mark ends a wait, once")
	}
	if jr, ok := a.firstAwaited(c1); !ok || jr != 5 {
		t.Fatalf("firstAwaited = %d, %v; want 5", jr, ok)
	}
	a.markArrived(5, c1)
	if _, ok := a.firstAwaited(c1); ok || len(a.awaits) != 0 {
		t.Fatal("marks still awaited after all arrived")
	}
	if c := a.reuseDup(c1); c != c1 || a.isFreed(c1) || !a.isFreed(c2) {
		t.Fatalf("reuseDup = %d; freed %v %v", c, a.isFreed(c1), a.isFreed(c2))
	}
}

func TestCtxAllocBlocks(t *testing.T) {
	for k := range splitBlocks {
		b := blockBase(k)
		if blockIndex(b) != k || blockOf(b) != b || blockOf(b+splitBlock-1) != b {
			t.Fatalf("block %d at %d: index %d, blockOf %d, %d", k, b, blockIndex(b), blockOf(b), blockOf(b+splitBlock-1))
		}
	}
	if int(blockBase(0))+splitBlock > ctlCtx {
		t.Fatal("the first Split block reaches the control context")
	}
}

// TestAgreeBlock: ranks agree on the lowest block free at all of them, above every
// rank's Dups.
func TestAgreeBlock(t *testing.T) {
	busyAt := func(ks ...int) []byte {
		b := make([]byte, busyBytes)
		for _, k := range ks {
			b[k/8] |= 1 << (k % 8)
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		nexts []uint16
		busy  [][]byte
		want  int // block index, -1: none
	}{
		{"fresh", []uint16{4, 4}, [][]byte{busyAt(), busyAt()}, 0},
		{"busy at one rank", []uint16{4, 4, 4}, [][]byte{busyAt(), busyAt(0, 1), busyAt()}, 2},
		{"busy at different ranks", []uint16{4, 4}, [][]byte{busyAt(0, 2), busyAt(1)}, 3},
		{"Dups reach the blocks", []uint16{4, blockBase(0) + 1}, [][]byte{busyAt(), busyAt()}, -1},
		{"Dups below a free block", []uint16{blockBase(2), 4}, [][]byte{busyAt(0), busyAt(1)}, 2},
		{"Dups reach a free block", []uint16{blockBase(2) + 1, 4}, [][]byte{busyAt(0), busyAt(1)}, -1},
	} {
		base, ok := agreeBlock(len(tc.nexts), func(r int) uint16 { return tc.nexts[r] }, func(r int) []byte { return tc.busy[r] })
		switch {
		case tc.want < 0 && ok:
			t.Errorf("%s: agreed on %d, want none", tc.name, base)
		case tc.want >= 0 && (!ok || base != blockBase(tc.want)):
			t.Errorf("%s: agreed on %d, %v; want block %d (%d)", tc.name, base, ok, tc.want, blockBase(tc.want))
		}
	}
}

func TestCtxAllocSplit(t *testing.T) {
	a := newCtxAlloc()
	busy := make([]byte, busyBytes)
	base := blockBase(0)
	if f := a.takeSplit(base, false); f != nil || a.top != base {
		t.Fatalf("takeSplit as no member: family %v, top %d", f, a.top)
	}
	if a.busyBlocks(busy); blockBusy(busy, 0) {
		t.Fatal("a block without this rank's Worlds is busy")
	}
	f := a.takeSplit(base, true)
	var dups []uint16
	for {
		c, reused, ok := a.takeFamily(f)
		if !ok {
			break
		}
		if reused {
			t.Fatalf("takeFamily reused %d with nothing freed", c)
		}
		dups = append(dups, c)
	}
	if len(dups) != splitBlock/ctxPerWorld-1 || dups[0] != base+ctxPerWorld {
		t.Fatalf("family handed out %v", dups)
	}
	if a.busyBlocks(busy); !blockBusy(busy, 0) || blockBusy(busy, 1) {
		t.Fatal("busy blocks wrong with live Worlds in block 0")
	}
	// Freeing every World of the block frees the block once no mark is awaited.
	a.await(dups[0], 1)
	for _, c := range append(dups, base) {
		a.markFreed(c)
		a.release(c, true)
	}
	if a.busyBlocks(busy); !blockBusy(busy, 0) {
		t.Fatal("block not busy while a mark is awaited")
	}
	a.markArrived(1, dups[0])
	if a.busyBlocks(busy); blockBusy(busy, 0) {
		t.Fatal("block busy after every World was freed and every mark came")
	}
	a.takeSplit(base, true)
	if a.isFreed(base) || a.isFreed(dups[len(dups)-1]) {
		t.Fatal("takeSplit left contexts of its block freed")
	}
}

// TestCtxAllocFamilyReuse: a Dup of a split World takes the lowest context that a freed
// World of its family gave back, before the block's untaken ones, and a full block has
// room again once one of its Worlds is freed.
func TestCtxAllocFamilyReuse(t *testing.T) {
	a := newCtxAlloc()
	base := blockBase(0)
	f := a.takeSplit(base, true)
	var dups []uint16
	for {
		c, _, ok := a.takeFamily(f)
		if !ok {
			break
		}
		dups = append(dups, c)
	}
	for _, c := range []uint16{dups[3], dups[1]} {
		a.giveBack(c, f)
		a.markFreed(c)
		a.release(c, true)
	}
	for _, want := range []uint16{dups[1], dups[3]} {
		c, reused, ok := a.takeFamily(f)
		if !ok || !reused || c != want {
			t.Fatalf("takeFamily = %d, reused %v, ok %v; want %d reused", c, reused, ok, want)
		}
		a.unfree(c, ctxPerWorld)
	}
	if c, _, ok := a.takeFamily(f); ok {
		t.Fatalf("takeFamily = %d from a full block", c)
	}
	if a.blockLive[base] != splitBlock/ctxPerWorld {
		t.Fatalf("block holds %d live Worlds, want %d", a.blockLive[base], splitBlock/ctxPerWorld)
	}
}
