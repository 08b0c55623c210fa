package collectives

import "github.com/gorma-hpc/gorma/runtime"

// allgatherRing is the ring allgather (MPICH's allgather_intra_ring): in step s each rank
// passes block r-s to its right neighbour and receives block r-s-1 from its left one.
// p-1 steps of n elements. The first step sends mine, this rank's block, which goes into
// buf at the end.
func allgatherRing[T runtime.Elem](c *call, buf, mine []T, n int) error {
	p, r := c.s.size, c.s.rank
	right, left := (r+1)%p, (r-1+p)%p
	for s := 0; s < p-1; s++ {
		sb, rb := (r-s+p)%p, (r-s-1+2*p)%p
		out := buf[sb*n : (sb+1)*n]
		if s == 0 {
			out = mine
		}
		if err := exchange(c, out, right, buf[rb*n:(rb+1)*n], left); err != nil {
			return err
		}
	}
	copy(buf[r*n:(r+1)*n], mine)
	return nil
}
