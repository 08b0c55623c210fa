package collectives

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestSHMByteModel runs each one-host algorithm once per case and checks the bytes each
// member copied through scratch (shmGroup.moved) against the byte model of
// collectives/design.md ("The byte model"), with N the bytes of the vector (Allreduce,
// Reduce, Bcast) or of one block (Allgather, Alltoall, ReduceScatter), p the members.
// The medium cases go by blocks through the small slots; the long cases are two whole
// chunks, which p divides.
func TestSHMByteModel(t *testing.T) {
	const p = 4
	runJob(t, p, runtimetest.Options{Transport: "shm"}, 60*time.Second, func(e rankEnv) error {
		if err := Barrier(e.ctx, e.w); err != nil {
			return err
		}
		s, err := stateOf(e.w)
		if err != nil {
			return err
		}
		g := s.local.world
		root := 1
		isRoot := e.r == root
		const small = 64          // float64 elements: 512 bytes, one step
		medium := shmSmallMax / 8 // by blocks through the small slots (shmMediumFor)
		long := 2 * shmChunkMin / 8
		type want struct{ stored, loaded int }
		for _, tc := range []struct {
			name string
			n    int // elements of the vector, or of one block
			run  func(n int) error
			want func(N int) want
		}{
			{"allreduce small", small, func(n int) error {
				return Allreduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64]())
			}, func(N int) want { return want{N, p * N} }},
			{"allreduce medium", medium, func(n int) error {
				return Allreduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64]())
			}, func(N int) want { return want{N, 2 * N * (p - 1) / p} }},
			{"allreduce long", long, func(n int) error {
				return Allreduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64]())
			}, func(N int) want { return want{N, 2 * N * (p - 1) / p} }},
			{"reduce small", small, func(n int) error {
				return Reduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64](), root)
			}, func(N int) want {
				if isRoot {
					return want{N, p * N}
				}
				return want{N, 0}
			}},
			{"reduce medium", medium, func(n int) error {
				return Reduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64](), root)
			}, func(N int) want {
				if isRoot {
					return want{N, 2 * N * (p - 1) / p}
				}
				return want{N, N * (p - 1) / p}
			}},
			{"reduce long", long, func(n int) error {
				return Reduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64](), root)
			}, func(N int) want {
				if isRoot {
					return want{N, 2 * N * (p - 1) / p}
				}
				return want{N, N * (p - 1) / p}
			}},
			{"bcast small", small, func(n int) error { return Bcast(e.ctx, e.w, make([]float64, n), root) },
				func(N int) want {
					if isRoot {
						return want{N, 0}
					}
					return want{0, N}
				}},
			{"bcast long", long, func(n int) error { return Bcast(e.ctx, e.w, make([]float64, n), root) },
				func(N int) want {
					if isRoot {
						return want{N, 0}
					}
					return want{0, N}
				}},
			{"allgather small", small, func(n int) error {
				return Allgather(e.ctx, e.w, make([]float64, n), make([]float64, p*n))
			}, func(N int) want { return want{N, (p - 1) * N} }},
			{"allgather long", long, func(n int) error {
				return Allgather(e.ctx, e.w, make([]float64, n), make([]float64, p*n))
			}, func(N int) want { return want{N, (p - 1) * N} }},
			{"alltoall small", small / p, func(n int) error {
				return Alltoall(e.ctx, e.w, make([]float64, p*n), make([]float64, p*n))
			}, func(N int) want { return want{p * N, (p - 1) * N} }},
			{"alltoall long", alltoallSHMMost / (8 * p), func(n int) error {
				return Alltoall(e.ctx, e.w, make([]float64, p*n), make([]float64, p*n))
			}, func(N int) want { return want{p * N, (p - 1) * N} }},
			{"reduce_scatter small", small / p, func(n int) error {
				return ReduceScatter(e.ctx, e.w, make([]float64, p*n), make([]float64, n), Sum[float64]())
			}, func(N int) want { return want{(p - 1) * N, (p - 1) * N} }},
			{"reduce_scatter long", long / p, func(n int) error {
				return ReduceScatter(e.ctx, e.w, make([]float64, p*n), make([]float64, n), Sum[float64]())
			}, func(N int) want { return want{(p - 1) * N, (p - 1) * N} }},
		} {
			before := g.moved
			if err := tc.run(tc.n); err != nil {
				return fmt.Errorf("%s: %w", tc.name, err)
			}
			got := want{g.moved.stored - before.stored, g.moved.loaded - before.loaded}
			if w := tc.want(tc.n * 8); got != w {
				return fmt.Errorf("rank %d: %s of %d bytes: stored %d and loaded %d bytes of scratch, the model says %d and %d",
					e.r, tc.name, tc.n*8, got.stored, got.loaded, w.stored, w.loaded)
			}
		}
		return nil
	})
}
