package collectives

import (
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// reduceScatterPairwise serves any operator, commutative or not: each rank sends block d
// of its input to every rank d at once (non-blocking), then receives block r from ranks
// 0, 1, ..., p-1 in that order and combines them in that order. p-1 messages of n
// elements each way, like the ring, in one round.
func reduceScatterPairwise[T runtime.Elem](c *call, in, out []T, op Op[T]) error {
	p, r, n := c.s.size, c.s.rank, len(out)
	posted := 0
	var err error
	for s := 1; s < p; s++ {
		d := (r + s) % p
		if err = runtime.IsendWith(c.Req(s), c.s.comm, in[d*n:(d+1)*n], d, c.tag); err != nil {
			err = fmt.Errorf("rank %d sending to rank %d: %w", r, d, err)
			break
		}
		posted = s
	}
	var acc []T
	if err == nil {
		acc, err = reduceScatterGather(c, in, n, op)
	}
	for s := 1; s <= posted; s++ {
		if _, werr := c.Req(s).Wait(c.ctx); werr != nil && err == nil {
			err = fmt.Errorf("rank %d sending to rank %d: %w", r, (r+s)%p, werr)
		}
	}
	if err == nil {
		copy(out, acc)
	}
	return err
}

// reduceScatterGather receives block r from every rank and combines the blocks in rank
// order into scratch (out may be block 0 of in, which may still be being sent).
func reduceScatterGather[T runtime.Elem](c *call, in []T, n int, op Op[T]) ([]T, error) {
	p, r := c.s.size, c.s.rank
	own := in[r*n : (r+1)*n]
	acc, tmp := scratchOf[T](c, 1, n), scratchOf[T](c, 0, n)
	if r == 0 {
		copy(acc, own)
	} else if err := recv(c, acc, 0); err != nil {
		return nil, err
	}
	for src := 1; src < p; src++ {
		x := own
		if src != r {
			if err := recv(c, tmp, src); err != nil {
				return nil, err
			}
			x = tmp
		}
		op.fn(acc, x)
	}
	return acc, nil
}
