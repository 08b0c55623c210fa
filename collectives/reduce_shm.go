package collectives

import (
	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// reduceSHM is the Reduce of a one-host World: allreduceSHM with a root, so that the
// members reduce a block each and only root copies the others' blocks out. src is the
// input; dst is root's recv, and at the other members any slice of the input's length
// that allreduceSHM leaves as it is (src itself). Members combine in rank order, so a
// non-commutative operator needs no detour through rank 0. A short vector takes one step,
// in which only root waits for the others (shmReduceSmall with last).
func reduceSHM[T runtime.Elem](c *call, g *hostgroup.Group, src, dst []T, op Op[T], root int) error {
	if bytes := len(dst) * elemSize[T](); bytes <= hostgroup.SmallMax && bytes < hostgroup.MediumFor(len(g.Ranks)) {
		return shmReduceSmall(c, g, src, dst, op, root, true)
	}
	if err := allreduceSHM(c, g, src, dst, op, root); err != nil {
		return err
	}
	return g.ReleaseBig(c)
}
