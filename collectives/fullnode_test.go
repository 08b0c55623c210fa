package collectives

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestFullNode runs the collectives a full 16-core node selects (every rank on one host:
// the shared-memory Allreduce, Bcast, Reduce, Allgather, Alltoall, Gather, Scatter and
// the v-forms) at every p from 2 to 16, against the sequential reference: every integer
// and floating-point operator and a non-commutative one, in place and not, at odd counts
// around p, around the medium class (hostgroup.MediumFor) and the small slot's limit
// (hostgroup.SmallMax), and across the chunks of the big buffers. Here the ranks share
// the test's processors (oversubscribed).
func TestFullNode(t *testing.T) {
	for p := 2; p <= 16; p++ {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 120*time.Second, func(e rankEnv) error {
				small := []int{1, p - 1, p + 1, 2*p + 1}
				oneStep := hostgroup.SmallMax / 4 // int32 elements that fill the small slot
				medium := hostgroup.MediumFor(p) / 4
				long := []int{medium - 1, medium, oneStep - 1, oneStep + 1}
				chunks := 2*hostgroup.ChunkFor(1<<30, p)/8 + 3 // float64 elements over more than two chunks
				ints := intCases[int32]()
				floats := floatCases[float64]()
				for _, inPlace := range []bool{false, true} {
					for _, n := range append(small, long...) {
						for _, oc := range ints {
							if err := checkAllreduce(e, oc, n, inPlace); err != nil {
								return err
							}
						}
						if err := checkAllreduce(e, affineCase[uint64](), n, inPlace); err != nil {
							return err
						}
					}
					for _, n := range append(small, chunks) {
						for _, oc := range floats {
							if err := checkAllreduce(e, oc, n, inPlace); err != nil {
								return err
							}
						}
					}
					if err := checkAllreduce(e, affineCase[uint64](), chunks, inPlace); err != nil {
						return err
					}
				}
				for _, root := range []int{0, p - 1, p / 2} {
					for _, n := range []int{p + 1, chunks} {
						if err := checkBcast(e, ints[0].gen, n, root); err != nil {
							return err
						}
						if err := checkReduce(e, affineCase[uint64](), n, root, root == p/2); err != nil {
							return err
						}
					}
				}
				for _, n := range []int{1, p + 1, 1025} {
					if err := checkAllgather(e, floats[0].gen, n, n == 1); err != nil {
						return err
					}
					if err := checkAlltoall(e, ints[0].gen, n, n == 1); err != nil {
						return err
					}
					root := n % p
					if err := checkGather(e, ints[1].gen, n, root, n == 1); err != nil {
						return err
					}
					if err := checkScatter(e, ints[2].gen, n, (root+1)%p, n != 1); err != nil {
						return err
					}
					l := shapeLayout(p, n, n%2)
					if err := checkGatherv(e, ints[0].gen, l, root, n == 1); err != nil {
						return err
					}
					if err := checkScatterv(e, ints[1].gen, l, (root+1)%p, n != 1); err != nil {
						return err
					}
					if err := checkAllgatherv(e, ints[2].gen, l.counts, n != 1); err != nil {
						return err
					}
					if err := checkAlltoallv(e, ints[0].gen, func(s, d int) int { return (s*n + d) % (n + 2) }); err != nil {
						return err
					}
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}
