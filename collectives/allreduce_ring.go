package collectives

import "github.com/gorma-hpc/gorma/runtime"

// allreduceRing is the ring algorithm (MPICH's allreduce_intra_ring): the vector is cut
// into p nearly equal blocks. A ring reduce-scatter (p-1 steps: send a block to the right
// neighbour, receive another from the left and combine it) leaves rank r with the result
// of block r+1. A ring allgather (p-1 more steps) passes the finished blocks around.
// Cost: 2(p-1) steps moving 2n(p-1)/p elements, for any p. Blocks are combined in ring
// order, so it serves commutative operators only (selectAllreduce sees to that). The
// scratch (one block) is reused, or acquired per call under ScratchFresh (tempOf).
func allreduceRing[T runtime.Elem](c *call, buf []T, op Op[T]) (err error) {
	p, r, n := c.s.size, c.s.rank, len(buf)
	right, left := (r+1)%p, (r-1+p)%p
	tmp, fresh, err := tempOf[T](c, 0, (n+p-1)/p)
	if err != nil {
		return err
	}
	defer func() { fresh.release(err == nil) }()
	for s := 0; s < p-1; s++ {
		slo, shi := block(n, p, (r-s+p)%p)
		rlo, rhi := block(n, p, (r-s-1+2*p)%p)
		in := tmp[:rhi-rlo]
		if err := exchange(c, buf[slo:shi], right, in, left); err != nil {
			return err
		}
		op.fn(buf[rlo:rhi], in)
	}
	for s := 0; s < p-1; s++ {
		slo, shi := block(n, p, (r+1-s+p)%p)
		rlo, rhi := block(n, p, (r-s+p)%p)
		if err := exchange(c, buf[slo:shi], right, buf[rlo:rhi], left); err != nil {
			return err
		}
	}
	return nil
}
