package collectives

import (
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// allreduceLanes is a hierarchical Allreduce in which every rank takes part in the
// inter-host step (a "multi-leader" Allreduce), for jobs whose hosts run k > 1 ranks
// each. The ranks of a host reduce-scatter the vector among themselves in one round
// (reduceScatterDirect: the i-th of a host ends with block i of k, combined over the
// host). The i-th ranks of every host (a lane) then Allreduce their block i across the
// hosts with the point-to-point algorithm selectAllreduce picks for one rank per host
// (direct, for a few hosts). A round of allgatherDirect on each host puts the blocks
// together. Every host's link carries 2(H-1)/H·n each way, as the bound asks, split over
// its k ranks, with 2 inter-host message latencies on the critical path for direct
// (Rabenseifner over the same ranks has 2·log2(H)). The on-host rounds are point-to-point
// messages over the runtime's shm transport. The input is read from src (buf itself for
// in place) and the result left in buf, with no copy of src into buf: at 16 MiB and up
// that copy is what separates Rabenseifner from lanes (scripts/netns-allreduce.sh with
// PPH=2 and ALGO=rabenseifner or ALGO=lanes measures both). The contributions are
// combined out of rank order: commutative operators only (selectAllreduce). Scratch: that
// of the host's and the lane's sub-groups, reused or fresh as tempOf says.
func allreduceLanes[T runtime.Elem](c *call, src, buf []T, op Op[T]) error {
	l := localOf(c.s)
	if l.hostS == nil || !op.commutative {
		return fmt.Errorf("%w: %s=lanes needs a commutative operator and the same number (more than one) of ranks on every host",
			runtime.ErrConfig, EnvAllreduce)
	}
	hc := c.sub(l.hostS)
	if err := reduceScatterDirect(hc, src, buf, op); err != nil {
		return fmt.Errorf("on-host reduce-scatter: %w", err)
	}
	lo, hi := block(len(buf), l.hostS.size, l.hostS.rank)
	if hi > lo {
		lc := c.sub(l.laneS)
		a := selectAllreduce(algoAuto, (hi-lo)*elemSize[T](), hi-lo, l.laneS.size, op.commutative,
			locality{hosts: l.laneS.size})
		if err := allreduceP2P(lc, a, buf[lo:hi], op); err != nil {
			return fmt.Errorf("across hosts: %w", err)
		}
	}
	if err := allgatherDirect(hc, buf); err != nil {
		return fmt.Errorf("on-host allgather: %w", err)
	}
	return nil
}
