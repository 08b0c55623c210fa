package collectives

import "github.com/gorma-hpc/gorma/runtime"

// allgatherRecdbl is recursive doubling for a power-of-two rank count (MPICH's
// allgather_intra_recursive_doubling): in round k each rank exchanges the 2^k blocks its
// group holds with the partner whose rank differs in bit k. log2(p) rounds. The first
// round sends mine, this rank's block, which goes into buf once that round's partner
// answered: the later rounds send it from there.
func allgatherRecdbl[T runtime.Elem](c *call, buf, mine []T, n int) error {
	r := c.s.rank
	for mask := 1; mask < c.s.size; mask <<= 1 {
		partner := r ^ mask
		lo := r &^ (mask - 1)
		theirs := lo ^ mask
		out := buf[lo*n : (lo+mask)*n]
		if mask == 1 {
			out = mine
		}
		if err := exchange(c, out, partner, buf[theirs*n:(theirs+mask)*n], partner); err != nil {
			return err
		}
		if mask == 1 {
			copy(buf[r*n:(r+1)*n], mine)
		}
	}
	return nil
}
