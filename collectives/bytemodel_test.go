package collectives

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestSHMByteModel runs each one-host algorithm once per case, at 2, 3, 4 and 7 members,
// and checks the bytes each member copied through scratch (hostgroup.Group.moved) against the
// byte model of collectives/design.md ("The byte model"), with N the bytes of the vector
// (Allreduce, Reduce, Bcast) or of one block (the others: the v-forms with every count
// alike), p the members. The reductions count their loads as they read each operand
// (loadedFrom).
// The medium cases go by blocks through the small slots where the group's threshold says
// so; the long cases are two whole chunks. A member reduces its own block of each chunk
// (block), which p need not divide: the model of the blocked reductions sums those.
func TestSHMByteModel(t *testing.T) {
	for _, p := range []int{2, 3, 4, 7} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) { testSHMByteModel(t, p) })
	}
}

func testSHMByteModel(t *testing.T, p int) {
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
		const small = 64                 // float64 elements: 512 bytes, one step
		medium := hostgroup.SmallMax / 8 // by blocks through the small slots (hostgroup.MediumFor)
		long := 2 * hostgroup.ChunkMin / 8
		type want struct{ stored, loaded int }
		rooted := func(atRoot, other want) want { // a rooted call's model, at this rank
			if isRoot {
				return atRoot
			}
			return other
		}
		uniform := func(n int) []int { // p counts of n
			c := make([]int, p)
			for i := range c {
				c[i] = n
			}
			return c
		}
		// reduced returns, for a reduction of N bytes by blocks (each chunk of the group's
		// chunk size reduced block by block), the bytes this member's reductions load
		// (p-1 operands of its block of each chunk) and the bytes of the others' blocks.
		// Under the group's medium threshold the vector goes in one step instead: every
		// member loads every slot (p·N), and the others' blocks are none.
		reduced := func(N int) (own, others int) {
			if N < hostgroup.MediumFor(p) {
				return p * N, 0
			}
			per := N
			if N > hostgroup.SmallMax {
				per = g.Chunk()
			}
			for lo := 0; lo < N; lo += per {
				c := min(N, lo+per) - lo
				blo, bhi := block(c/8, p, g.Me)
				b := (bhi - blo) * 8
				own += (p - 1) * b
				others += c - b
			}
			return own, others
		}
		allreduce := func(N int) want {
			own, others := reduced(N)
			return want{N, own + others}
		}
		reduce := func(N int) want {
			own, others := reduced(N)
			switch {
			case isRoot:
				return want{N, own + others}
			case N < hostgroup.MediumFor(p):
				return want{N, 0}
			}
			return want{N, own}
		}
		for _, tc := range []struct {
			name string
			n    int // elements of the vector, or of one block
			run  func(n int) error
			want func(N int) want
		}{
			{"allreduce small", small, func(n int) error {
				return Allreduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64]())
			}, allreduce},
			{"allreduce medium", medium, func(n int) error {
				return Allreduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64]())
			}, allreduce},
			{"allreduce long", long, func(n int) error {
				return Allreduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64]())
			}, allreduce},
			{"reduce small", small, func(n int) error {
				return Reduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64](), root)
			}, reduce},
			{"reduce medium", medium, func(n int) error {
				return Reduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64](), root)
			}, reduce},
			{"reduce long", long, func(n int) error {
				return Reduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64](), root)
			}, reduce},
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
			{"alltoall long", hostgroup.AlltoallMost / (8 * p), func(n int) error {
				return Alltoall(e.ctx, e.w, make([]float64, p*n), make([]float64, p*n))
			}, func(N int) want { return want{(p - 1) * N, (p - 1) * N} }},
			{"reduce_scatter small", small / p, func(n int) error {
				return ReduceScatter(e.ctx, e.w, make([]float64, p*n), make([]float64, n), Sum[float64]())
			}, func(N int) want { return want{(p - 1) * N, (p - 1) * N} }},
			{"reduce_scatter long", long / p, func(n int) error {
				return ReduceScatter(e.ctx, e.w, make([]float64, p*n), make([]float64, n), Sum[float64]())
			}, func(N int) want { return want{(p - 1) * N, (p - 1) * N} }},
			{"bcast single", hostgroup.SingleMin() / 8, func(n int) error { return Bcast(e.ctx, e.w, make([]float64, n), root) },
				func(N int) want { return rooted(want{0, 0}, want{0, N}) }},
			{"allgather single", hostgroup.SingleMin() / 8, func(n int) error {
				return Allgather(e.ctx, e.w, make([]float64, n), make([]float64, p*n))
			}, func(N int) want { return want{0, (p - 1) * N} }},
			{"alltoall single", 2 * hostgroup.AlltoallMost / (8 * p), func(n int) error {
				return Alltoall(e.ctx, e.w, make([]float64, p*n), make([]float64, p*n))
			}, func(N int) want { return want{0, (p - 1) * N} }},
			{"scatter single", hostgroup.ScatterSingleMin() / 8, func(n int) error {
				return Scatter(e.ctx, e.w, make([]float64, p*n), make([]float64, n), root)
			}, func(N int) want { return rooted(want{0, 0}, want{0, N}) }},
			{"gather small", small, func(n int) error {
				return Gather(e.ctx, e.w, make([]float64, n), make([]float64, p*n), root)
			}, func(N int) want { return rooted(want{0, (p - 1) * N}, want{N, 0}) }},
			{"gather long", long, func(n int) error {
				return Gather(e.ctx, e.w, make([]float64, n), make([]float64, p*n), root)
			}, func(N int) want { return rooted(want{0, (p - 1) * N}, want{N, 0}) }},
			{"scatter small", small / p, func(n int) error {
				return Scatter(e.ctx, e.w, make([]float64, p*n), make([]float64, n), root)
			}, func(N int) want { return rooted(want{(p - 1) * N, 0}, want{0, N}) }},
			{"scatter long", long / p, func(n int) error {
				return Scatter(e.ctx, e.w, make([]float64, p*n), make([]float64, n), root)
			}, func(N int) want { return rooted(want{(p - 1) * N, 0}, want{0, N}) }},
			{"gatherv small", small, func(n int) error {
				return Gatherv(e.ctx, e.w, make([]float64, n), make([]float64, p*n), uniform(n), nil, root)
			}, func(N int) want { return rooted(want{0, (p - 1) * N}, want{N, 0}) }},
			{"gatherv long", long, func(n int) error {
				return Gatherv(e.ctx, e.w, make([]float64, n), make([]float64, p*n), uniform(n), nil, root)
			}, func(N int) want { return rooted(want{0, (p - 1) * N}, want{N, 0}) }},
			{"scatterv small", small / p, func(n int) error {
				return Scatterv(e.ctx, e.w, make([]float64, p*n), uniform(n), nil, make([]float64, n), root)
			}, func(N int) want { return rooted(want{(p - 1) * N, 0}, want{0, N}) }},
			{"scatterv long", long / p, func(n int) error {
				return Scatterv(e.ctx, e.w, make([]float64, p*n), uniform(n), nil, make([]float64, n), root)
			}, func(N int) want { return rooted(want{(p - 1) * N, 0}, want{0, N}) }},
			{"allgatherv small", small, func(n int) error {
				return Allgatherv(e.ctx, e.w, make([]float64, n), make([]float64, p*n), uniform(n))
			}, func(N int) want { return want{N, (p - 1) * N} }},
			{"allgatherv long", long, func(n int) error {
				return Allgatherv(e.ctx, e.w, make([]float64, n), make([]float64, p*n), uniform(n))
			}, func(N int) want { return want{N, (p - 1) * N} }},
			{"alltoallv small", small / p, func(n int) error {
				return Alltoallv(e.ctx, e.w, make([]float64, p*n), uniform(n), make([]float64, p*n), uniform(n))
			}, func(N int) want { return want{(p - 1) * N, (p - 1) * N} }},
			{"alltoallv long", hostgroup.AlltoallMost / (8 * p), func(n int) error {
				return Alltoallv(e.ctx, e.w, make([]float64, p*n), uniform(n), make([]float64, p*n), uniform(n))
			}, func(N int) want { return want{(p - 1) * N, (p - 1) * N} }},
		} {
			before := g.Moved
			if err := tc.run(tc.n); err != nil {
				return fmt.Errorf("%s: %w", tc.name, err)
			}
			got := want{g.Moved.Stored - before.Stored, g.Moved.Loaded - before.Loaded}
			w := tc.want(tc.n * 8)
			if p == 2 && !strings.HasPrefix(tc.name, "allreduce") && (strings.HasSuffix(tc.name, " long") || strings.HasSuffix(tc.name, " single")) {
				w = want{} // beyond hostgroup.SmallMax bytes, 2 ranks go point to point (moveBySHM)
			}
			if got != w {
				return fmt.Errorf("rank %d of %d: %s of %d bytes: stored %d and loaded %d bytes of scratch, the model says %d and %d",
					e.r, p, tc.name, tc.n*8, got.stored, got.loaded, w.stored, w.loaded)
			}
		}
		return nil
	})
}
