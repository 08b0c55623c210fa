package collectives

import "github.com/gorma-hpc/gorma/runtime"

// bcastScatterAllgather is van de Geijn's long-message broadcast (MPICH's
// bcast_intra_scatter_ring_allgather): buf is cut into p blocks of ceil(n/p) elements
// (relative rank v owns block v). A binomial scatter hands each subtree its run of blocks,
// then a ring allgather over relative ranks completes every rank's copy. It moves about 2n
// elements per rank instead of n log2(p).
func bcastScatterAllgather[T runtime.Elem](c *call, buf []T, root int) error {
	p, r, n := c.s.size, c.s.rank, len(buf)
	vr := (r - root + p) % p
	chunk := (n + p - 1) / p
	span := func(from, to int) (int, int) { // elements of relative ranks [from, to)
		return min(from*chunk, n), min(to*chunk, n)
	}
	mask := 1
	for ; mask < p; mask <<= 1 {
		if vr&mask != 0 {
			lo, hi := span(vr, vr+mask)
			if err := recv(c, buf[lo:hi], (r-mask+p)%p); err != nil {
				return err
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if vr+mask < p {
			lo, hi := span(vr+mask, vr+2*mask)
			if err := send(c, buf[lo:hi], (r+mask)%p); err != nil {
				return err
			}
		}
	}
	right, left := (r+1)%p, (r-1+p)%p
	for s := 0; s < p-1; s++ {
		slo, shi := span((vr-s+p)%p, (vr-s+p)%p+1)
		rb := (vr - s - 1 + 2*p) % p
		rlo, rhi := span(rb, rb+1)
		if err := exchange(c, buf[slo:shi], right, buf[rlo:rhi], left); err != nil {
			return err
		}
	}
	return nil
}
