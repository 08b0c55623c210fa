package collectives

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestHierMoves runs Bcast, Reduce and Allgather on pretend hosts, in the arena's scratch
// and in fresh scratch, against the reference: from and to every root, in place and not,
// short and long (several chunks on a host; scatter and allgather among three or more
// leaders). A job whose hosts hold several ranks goes through each host's shared-memory
// group and the hosts' leaders (bcastHier, reduceHier for commutative operators,
// allgatherHier); a non-commutative Reduce and a job of one rank a host go point to point.
func TestHierMoves(t *testing.T) {
	layouts := [][]string{
		{"a", "a", "b", "b"},
		{"a", "a", "a", "b", "c", "c"},
		{"a", "b", "a", "b", "b"},
		{"a", "b", "c"},
	}
	for _, hosts := range layouts {
		for _, fresh := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fresh=%v", strings.Join(hosts, ""), fresh), func(t *testing.T) {
				if fresh {
					SetScratch(ScratchFresh)
					t.Cleanup(func() { SetScratch(ScratchArena) })
				}
				runJob(t, len(hosts), runtimetest.Options{Hosts: hosts}, 90*time.Second, func(e rankEnv) error {
					return hierMoves(e, hosts)
				})
			})
		}
	}
}

func hierMoves(e rankEnv, hosts []string) error {
	ints, floats := intCases[int32](), floatCases[float64]()
	for root := range e.p {
		for _, n := range []int{1, 7, hostgroup.SmallMax/4 + 1, 70001} {
			inPlace := (root+n)%2 == 0
			for _, err := range []error{
				checkBcast(e, ints[0].gen, n, root),
				checkReduce(e, ints[0], n, root, inPlace),
				checkReduce(e, ints[len(ints)-1], n, root, !inPlace),
				checkReduce(e, floats[0], n, root, inPlace),
				checkReduce(e, affineCase[uint64](), n, root, inPlace),
			} {
				if err != nil {
					return err
				}
			}
		}
	}
	for _, n := range []int{1, 7, hostgroup.SmallMax/8 + 1, 70001} {
		for _, inPlace := range []bool{false, true} {
			if err := checkAllgather(e, floats[0].gen, n, inPlace); err != nil {
				return err
			}
		}
	}
	s, _ := stateOf(e.w)
	l := s.local
	if hier := l.loc.shared; hier != bcastHierOK(l) {
		return fmt.Errorf("rank %d: hosts %v: hierarchical moves %v, want %v", e.r, hosts, bcastHierOK(l), hier)
	}
	if len(l.host) > 1 && (l.onHost == nil || !l.onHost.Status().Ready) {
		return fmt.Errorf("rank %d: the moves did not go through host %v's shared memory", e.r, l.host)
	}
	return Barrier(e.ctx, e.w)
}
