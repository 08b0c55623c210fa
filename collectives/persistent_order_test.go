package collectives

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestPersistentInitOrder makes five persistent Requests in one order at every rank and
// starts them in a different order at each rank (rotated by the rank, reversed at odd
// ranks), with a blocking Allreduce on the World made before the Starts at rank 0 and
// after them elsewhere, three rounds: calls match by the order their Requests were made,
// and every result is right.
func TestPersistentInitOrder(t *testing.T) {
	for _, l := range nbLayouts {
		t.Run(l.name, func(t *testing.T) {
			runJob(t, l.n, l.opt, 30*time.Second, func(e rankEnv) error {
				const n = 700 // past the small-vector algorithms
				bc := make([]int64, 3)
				sendA, recvA := make([]float64, n), make([]float64, n)
				sendB, recvB := make([]int32, 4), make([]int32, 4)
				gather := make([]int64, e.p)
				reqs := []*Request{
					BcastInit(e.w, bc, 0),
					BarrierInit(e.w),
					AllreduceInit(e.w, sendA, recvA, Sum[float64]()),
					AllreduceInit(e.w, sendB, recvB, Max[int32]()),
					GatherInit(e.w, []int64{int64(e.r)}, gather, e.p-1),
				}
				order := make([]int, len(reqs))
				for i := range order {
					order[i] = (i + e.r) % len(reqs)
				}
				if e.r%2 == 1 {
					slices.Reverse(order)
				}
				for round := range 3 {
					if e.r == 0 {
						bc[0], bc[1], bc[2] = int64(round), 7, -1
					}
					for i := range sendA {
						sendA[i] = float64(e.r + i + round)
					}
					for i := range sendB {
						sendB[i] = int32(e.r*10 + i + round)
					}
					blocking := func() error {
						got := []int64{int64(e.r)}
						if err := Allreduce(e.ctx, e.w, nil, got, Sum[int64]()); err != nil {
							return err
						}
						if want := int64(e.p * (e.p - 1) / 2); got[0] != want {
							return fmt.Errorf("blocking Allreduce gave %d, want %d", got[0], want)
						}
						return nil
					}
					if e.r == 0 {
						if err := blocking(); err != nil {
							return err
						}
					}
					for _, i := range order {
						if err := reqs[i].Start(e.ctx); err != nil {
							return fmt.Errorf("round %d: start %d: %w", round, i, err)
						}
					}
					if e.r != 0 {
						if err := blocking(); err != nil {
							return err
						}
					}
					if err := WaitAll(e.ctx, reqs); err != nil {
						return fmt.Errorf("round %d: %w", round, err)
					}
					if !slices.Equal(bc, []int64{int64(round), 7, -1}) {
						return fmt.Errorf("round %d: Bcast gave %v", round, bc)
					}
					for i, v := range recvA {
						if want := float64(e.p*(i+round) + e.p*(e.p-1)/2); v != want {
							return fmt.Errorf("round %d: Allreduce sum [%d] = %v, want %v", round, i, v, want)
						}
					}
					for i, v := range recvB {
						if want := int32((e.p-1)*10 + i + round); v != want {
							return fmt.Errorf("round %d: Allreduce max [%d] = %v, want %v", round, i, v, want)
						}
					}
					if e.r == e.p-1 {
						for i, v := range gather {
							if v != int64(i) {
								return fmt.Errorf("round %d: Gather gave %v", round, gather)
							}
						}
					}
				}
				for _, r := range reqs {
					if err := r.Free(); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}
