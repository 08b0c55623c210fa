package collectives

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestBcastHier runs Bcast on pretend hosts, from every root, short and long (several
// chunks on a host; scatter and allgather among three or more leaders), against the
// reference. A job whose hosts hold several ranks goes through each host's shared-memory
// group; a job of one rank a host goes point to point.
func TestBcastHier(t *testing.T) {
	layouts := [][]string{
		{"a", "a", "b", "b"},
		{"a", "a", "a", "b", "c", "c"},
		{"a", "b", "a", "b", "b"},
		{"a", "b", "c"},
	}
	for _, hosts := range layouts {
		t.Run(strings.Join(hosts, ""), func(t *testing.T) {
			runJob(t, len(hosts), runtimetest.Options{Hosts: hosts}, 60*time.Second, func(e rankEnv) error {
				ints := intCases[int32]()
				for root := range e.p {
					for _, n := range []int{1, 7, shmSmallMax/4 + 1, 300001} {
						if err := checkBcast(e, ints[0].gen, n, root); err != nil {
							return err
						}
					}
				}
				s, _ := stateOf(e.w)
				l := s.local
				if hier := l.loc.shared; hier != bcastHierOK(l) {
					return fmt.Errorf("rank %d: hosts %v: hierarchical Bcast %v, want %v", e.r, hosts, bcastHierOK(l), hier)
				}
				if len(l.host) > 1 && (l.onHost == nil || l.onHost.broken) {
					return fmt.Errorf("rank %d: Bcast did not go through host %v's shared memory", e.r, l.host)
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// TestReduceHier runs Reduce on pretend hosts, to every root, in place and not, short
// and long, against the reference: commutative operators go through each host's shared
// memory and the hosts' leaders; a non-commutative one goes point to point, in rank order.
func TestReduceHier(t *testing.T) {
	layouts := [][]string{
		{"a", "a", "b", "b"},
		{"a", "a", "a", "b", "c", "c"},
		{"a", "b", "a", "b", "b"},
		{"a", "b", "c"},
	}
	for _, hosts := range layouts {
		t.Run(strings.Join(hosts, ""), func(t *testing.T) {
			runJob(t, len(hosts), runtimetest.Options{Hosts: hosts}, 60*time.Second, func(e rankEnv) error {
				ints, floats := intCases[int32](), floatCases[float64]()
				for root := range e.p {
					for _, n := range []int{1, 7, shmSmallMax/4 + 1, 70001} {
						inPlace := (root+n)%2 == 0
						for _, err := range []error{
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
				s, _ := stateOf(e.w)
				if l := s.local; len(l.host) > 1 && (l.onHost == nil || l.onHost.broken) {
					return fmt.Errorf("rank %d: Reduce did not go through host %v's shared memory", e.r, l.host)
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}
