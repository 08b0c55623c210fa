package arena

import (
	"math/rand/v2"
	"testing"
)

func TestBuddyOrderFor(t *testing.T) {
	b := newBuddy(1 << 20)
	for _, tc := range []struct {
		n    int64
		want int
	}{{0, 0}, {1, 0}, {64, 0}, {65, 1}, {128, 1}, {4096, 6}, {4097, 7}, {1 << 20, 14}, {1<<20 + 1, -1}} {
		if got := b.orderFor(tc.n); got != tc.want {
			t.Errorf("orderFor(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// TestBuddyRandom checks against a reference: live blocks never overlap, are aligned to
// their size, and freeing everything coalesces back to one block.
func TestBuddyRandom(t *testing.T) {
	const size = 1 << 16
	rng := rand.New(rand.NewPCG(1, 2))
	b := newBuddy(size)
	owner := make([]int, size/minBlock) // reference: which allocation owns each min block (0 = free)
	type live struct{ off, size int64 }
	var lives []live
	id := 0
	for step := 0; step < 20000; step++ {
		if len(lives) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(lives))
			l := lives[i]
			lives[i] = lives[len(lives)-1]
			lives = lives[:len(lives)-1]
			if b.release(l.off) < 0 {
				t.Fatalf("step %d: release(%d) of a live block failed", step, l.off)
			}
			for k := l.off / minBlock; k < (l.off+l.size)/minBlock; k++ {
				owner[k] = 0
			}
			continue
		}
		n := int64(1 + rng.IntN(4096))
		off, order, ok := b.alloc(n)
		if !ok {
			continue
		}
		bs := blockSize(order)
		if bs < n || off%bs != 0 || off+bs > size {
			t.Fatalf("step %d: alloc(%d) = off %d size %d: wrong size or alignment", step, n, off, bs)
		}
		id++
		for k := off / minBlock; k < (off+bs)/minBlock; k++ {
			if owner[k] != 0 {
				t.Fatalf("step %d: block at %d overlaps live allocation %d", step, off, owner[k])
			}
			owner[k] = id
		}
		lives = append(lives, live{off, bs})
	}
	for _, l := range lives {
		b.release(l.off)
	}
	if len(b.free[b.maxOrder]) != 1 || len(b.where) != 1 || len(b.used) != 0 {
		t.Fatalf("after freeing everything: %d top blocks, %d free blocks, %d used; want 1, 1, 0",
			len(b.free[b.maxOrder]), len(b.where), len(b.used))
	}
	if b.release(0) != -1 {
		t.Fatal("double release succeeded")
	}
}
