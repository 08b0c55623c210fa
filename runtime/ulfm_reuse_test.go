package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
)

// The tests of ULFM on reused contexts: a World made on the contexts of a freed World
// (a Dup that reuses them, a Shrink or Split on the same block). Its agreements' messages
// must reach the new World at every rank, even one that has not made it yet and still
// holds the freed World's state.

// TestAgreeReusedContext: a Dup reuses the contexts of a freed Dup that ran an Agree.
// Ranks 1 and up agree on the new World at once; rank 0, its coordinator, makes it a
// little later, so that their messages reach rank 0 before its Dup. Every rank must get
// the new World's value: the freed World's decided agreement must not answer them.
func TestAgreeReusedContext(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const n = 4
			j := startFT(t, tr, n)
			ctx := ftCtx(t, 20*time.Second)
			err := eachLive(without(n), func(r int) error {
				w := j.Worlds[r]
				d, err := w.Dup()
				if err != nil {
					return err
				}
				if v, err := d.Agree(ctx, 1); v != 1 || err != nil {
					return fmt.Errorf("Agree on the first Dup: %d %v; want 1, nil", v, err)
				}
				if err := d.Free(); err != nil {
					return err
				}
				if err := runtime.Barrier(ctx, w); err != nil { // every free mark has arrived
					return err
				}
				if r == 0 {
					time.Sleep(100 * time.Millisecond) // the others' messages come first
				}
				d, err = w.Dup()
				if err != nil {
					return err
				}
				if v, err := d.Agree(ctx, 2); v != 2 || err != nil {
					return fmt.Errorf("Agree on the Dup on the freed contexts: %d %v; want 2, nil", v, err)
				}
				return d.Free()
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestShrinkAgreeReusedBlock: the ranks split by parity and free the halves, so that
// Shrink's World lies in the same Split block. After a death (rank 0, or rank 1) every
// survivor shrinks, agrees on the shrunk World and runs an Allreduce-like ring on it. The
// first agreement of the shrunk World must complete: a faster survivor's messages may
// reach a slower one while it still holds its freed half's state, of other members.
func TestShrinkAgreeReusedBlock(t *testing.T) {
	for _, tr := range transports {
		for _, dead := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s/kill%d", tr, dead), func(t *testing.T) {
				const n = 4
				j := startFT(t, tr, n)
				ctx := ftCtx(t, 30*time.Second)
				err := eachLive(without(n), func(r int) error {
					w := j.Worlds[r]
					half, err := w.Split(ctx, r%2, r)
					if err != nil {
						return err
					}
					if err := runtime.Barrier(ctx, half); err != nil {
						return err
					}
					if err := half.Free(); err != nil {
						return err
					}
					return runtime.Barrier(ctx, w)
				})
				if err != nil {
					t.Fatal(err)
				}
				runtime.KillTransport(j.Worlds[dead])
				j.Worlds[dead] = nil // a dead process does not finalize: its devices are closed
				err = eachLive(without(n, dead), func(r int) error {
					s, err := j.Worlds[r].Shrink(ctx)
					if err != nil {
						return err
					}
					if v, err := s.Agree(ctx, 3); v != 3 || err != nil {
						return fmt.Errorf("Agree on the shrunk World: %d %v; want 3, nil", v, err)
					}
					return ringSum(ctx, s)
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// ringSum passes each rank's rank around w's ring, adds up what passes by, and checks
// the sum: an Allreduce over the World's point-to-point messages.
func ringSum(ctx context.Context, w *runtime.World) error {
	me, k := w.Rank(), w.Size()
	next, prev := (me+1)%k, (me+k-1)%k
	cur, sum := int64(me), int64(me)
	in := make([]int64, 1)
	for range k - 1 {
		if _, err := runtime.Sendrecv(ctx, w, []int64{cur}, next, 7, in, prev, 7); err != nil {
			return err
		}
		cur = in[0]
		sum += cur
	}
	if want := int64(k * (k - 1) / 2); sum != want {
		return fmt.Errorf("ring sum on the shrunk World: %d, want %d", sum, want)
	}
	return nil
}
