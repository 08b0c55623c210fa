package collectives

import "github.com/gorma-hpc/gorma/runtime"

// allgatherRecdbl is recursive doubling for a power-of-two rank count (MPICH's
// allgather_intra_recursive_doubling): in round k each rank exchanges the 2^k blocks its
// group holds with the partner whose rank differs in bit k. log2(p) rounds.
func allgatherRecdbl[T runtime.Elem](c *call, buf []T, n int) error {
	r := c.s.rank
	for mask := 1; mask < c.s.size; mask <<= 1 {
		partner := r ^ mask
		mine := r &^ (mask - 1)
		theirs := mine ^ mask
		if err := exchange(c, buf[mine*n:(mine+mask)*n], partner, buf[theirs*n:(theirs+mask)*n], partner); err != nil {
			return err
		}
	}
	return nil
}
