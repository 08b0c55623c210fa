package collectives

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// moveCounts cross the boundaries of the one-host Bcast, Allgather and Alltoall: the flag
// line (hostgroup.InlineMax), the small slot (hostgroup.SmallMax), one chunk and several,
// and the bounds of moveBySHM, for a block of n int32 (Allgather, Bcast) or p blocks of n
// (Alltoall). Above 4 ranks the longest block is smaller: the host's chunks are too
// (hostgroup.ChunkFor).
func moveCounts(p int) []int {
	long := 2*hostgroup.ChunkMax/4 + 5
	if p > 4 {
		long = 40000
	}
	return []int{1, hostgroup.InlineMax/4 + 1, hostgroup.SmallMax / 4, hostgroup.SmallMax/4 + 1, hostgroup.SmallMax/(4*p) + 1,
		hostgroup.AlltoallMost/(4*p) - 1, 2*hostgroup.ChunkMax/(4*p) + 3, long}
}

// TestSHMMoves checks the one-host Bcast, Reduce, Allgather, Alltoall and ReduceScatter
// (every rank maps the others' scratch) against the sequential reference at p from 2 to
// 16 (and TestFullNode at every p in between), in the arena's scratch and in fresh
// scratch, in place and not, across the flag line, the small slot and the chunks. Here
// the ranks share the test's processors.
func TestSHMMoves(t *testing.T) {
	for _, p := range []int{2, 3, 7, 16} {
		for _, fresh := range []bool{false, true} {
			if fresh && p != 2 && p != 7 {
				continue
			}
			t.Run(fmt.Sprintf("p=%d/fresh=%v", p, fresh), func(t *testing.T) {
				if fresh {
					SetScratch(ScratchFresh)
					t.Cleanup(func() { SetScratch(ScratchArena) })
				}
				runJob(t, p, runtimetest.Options{Transport: "shm"}, 120*time.Second, func(e rankEnv) error {
					ints := intCases[int32]()
					for i, n := range moveCounts(p) {
						inPlace := i%2 == 1
						if err := checkAllgather(e, ints[0].gen, n, inPlace); err != nil {
							return err
						}
						if err := checkAlltoall(e, ints[1].gen, n, !inPlace); err != nil {
							return err
						}
						root := i % p
						if err := checkBcast(e, ints[2].gen, n, root); err != nil {
							return err
						}
						if err := checkReduce(e, affineCase[uint64](), n, root, inPlace); err != nil {
							return err
						}
						if err := checkReduceScatter(e, affineCase[uint64](), n, inPlace); err != nil {
							return err
						}
						if fresh {
							if err := checkReleased(e); err != nil {
								return err
							}
						}
					}
					return Barrier(e.ctx, e.w)
				})
			})
		}
	}
}

// TestSHMMovesMismatch: a rank that passes another count (or root) than the others to
// the one-host Allgather, Alltoall, Bcast, Reduce or ReduceScatter gets ErrMismatch, or
// the ranks that read from it do, not a result mixed from two calls or read from a root
// that wrote nothing. Where every member waits for every other (Allgather, Alltoall,
// ReduceScatter), every rank fails. In a short Bcast or Reduce the ranks that only write
// do not wait (stepLast): there some ranks succeed, each with the result its own
// arguments ask for, and the calls after work at every rank, with no deadline spent.
func TestSHMMovesMismatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(e rankEnv, n int) error
		some bool // some ranks may succeed
	}{
		{"allgather", func(e rankEnv, n int) error { return Allgather(e.ctx, e.w, make([]int32, n), make([]int32, e.p*n)) }, false},
		{"alltoall", func(e rankEnv, n int) error { return Alltoall(e.ctx, e.w, make([]int32, e.p*n), make([]int32, e.p*n)) }, false},
		{"bcast", func(e rankEnv, n int) error { return Bcast(e.ctx, e.w, make([]int32, n), 0) }, true},
		{"bcast roots", func(e rankEnv, n int) error { return Bcast(e.ctx, e.w, make([]int32, 4), n-4) }, true},
		{"reduce_scatter", func(e rankEnv, n int) error {
			return ReduceScatter(e.ctx, e.w, make([]int32, e.p*n), make([]int32, n), Sum[int32]())
		}, false},
		{"reduce roots", func(e rankEnv, n int) error {
			return Reduce(e.ctx, e.w, make([]int32, 4), make([]int32, 4), Sum[int32](), n-4)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var failed atomic.Int32
			runJob(t, 3, runtimetest.Options{Transport: "shm"}, 60*time.Second, func(e rankEnv) error {
				n := 4
				if e.r == 2 {
					n = 5
				}
				// The scratch is set up before: a first call sets it up over messages,
				// and ranks that name different roots never take each other's (rootTag).
				if err := Barrier(e.ctx, e.w); err != nil {
					return err
				}
				err := tc.call(e, n)
				switch {
				case errors.Is(err, ErrMismatch):
					failed.Add(1)
				case err != nil || !tc.some:
					return fmt.Errorf("rank %d: %s with counts 4, 4, 5: %v, want ErrMismatch", e.r, tc.name, err)
				}
				if err := runtime.Barrier(e.ctx, e.w); err != nil {
					return err
				}
				if failed.Load() == 0 {
					return fmt.Errorf("rank %d: %s with counts 4, 4, 5: every rank succeeded", e.r, tc.name)
				}
				if err := Barrier(e.ctx, e.w); err != nil {
					return fmt.Errorf("rank %d: the Barrier after: %w", e.r, err)
				}
				return checkAllgather(e, intCases[int32]()[0].gen, 5, false)
			})
		})
	}
}

func TestMoveBySHM(t *testing.T) {
	for _, tt := range []struct {
		p, bytes, most int
		want           bool
	}{
		{2, 8, 0, true},
		{2, hostgroup.SmallMax, 0, true},
		{2, hostgroup.SmallMax + 1, 0, false},
		{4, 16 << 20, 0, true},
		{4, hostgroup.AlltoallMost, hostgroup.AlltoallMost, true},
		{4, hostgroup.AlltoallMost + 1, hostgroup.AlltoallMost, false},
		{16, 64 << 10, hostgroup.AlltoallMost, true},
	} {
		if got := moveBySHM(tt.p, tt.bytes, tt.most); got != tt.want {
			t.Errorf("moveBySHM(p %d, %d bytes, most %d) = %v, want %v", tt.p, tt.bytes, tt.most, got, tt.want)
		}
	}
}
