package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// Alltoall sends block d of every rank's send to rank d, which stores it as block s of
// its recv (s the sender): with n = len(send)/Size(), recv[s*n:(s+1)*n] at rank d gets
// send[d*n:(d+1)*n] of rank s. len(send) must equal len(recv) and be a multiple of
// Size(); every rank must pass the same length. With send nil the operation is in place
// (recv holds the input; it is copied to scratch first).
//
// On one host the blocks go through shared memory (alltoallSHM). Otherwise the algorithm
// is the pairwise exchange (MPICH's alltoall_intra_pairwise): in step s rank r sends to
// r+s and receives from r-s. p-1 steps of n elements.
func Alltoall[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T) error {
	if w.IsInter() {
		return interErr("alltoall", w, beginInter(w, "alltoall").end(interAlltoall(ctx, w, send, recv), len(send)*elemSize[T]()))
	}
	c, err := begin(ctx, w, "alltoall", len(recv), typeName[T](), "", -1)
	if err != nil {
		return err
	}
	if c.observed() {
		c.toAll(len(recv)*elemSize[T](), len(recv)/c.s.size*elemSize[T]())
	}
	return c.end(alltoall(c, send, recv))
}

func alltoall[T runtime.Elem](c *call, send, recv []T) error {
	p, r := c.s.size, c.s.rank
	switch {
	case send != nil && len(send) != len(recv):
		return invalid("len(send) %d != len(recv) %d", len(send), len(recv))
	case len(recv)%p != 0:
		return invalid("len(recv) %d is not a multiple of %d ranks", len(recv), p)
	case overlap(send, recv):
		return errOverlap()
	}
	n := len(recv) / p
	if n == 0 {
		return nil
	}
	if g, err := worldGroup(c, len(recv)*elemSize[T](), hostgroup.AlltoallMost); g != nil || err != nil {
		if err != nil {
			return err
		}
		c.chose("shm")
		return alltoallSHM(c, g, send, recv, n)
	}
	if send == nil {
		send = scratchOf[T](c, 0, len(recv))
		copy(send, recv)
	}
	// This rank's own block goes into recv last: a call that does not match writes no recv.
	if done, err := alltoallSingle(c, send, recv, n); done || err != nil {
		if done && err == nil {
			copy(recv[r*n:(r+1)*n], send[r*n:(r+1)*n])
		}
		return err
	}
	c.chose("pairwise")
	for s := 1; s < p; s++ {
		dst, src := (r+s)%p, (r-s+p)%p
		if err := exchange(c, send[dst*n:(dst+1)*n], dst, recv[src*n:(src+1)*n], src); err != nil {
			return err
		}
	}
	copy(recv[r*n:(r+1)*n], send[r*n:(r+1)*n])
	return nil
}

// alltoallSingle is the long Alltoall of a one-host World of more than 2 ranks in one
// group: every member exposes its send buffer and reads its block of every other
// member's (single_shm.go), all at once. Pairwise exchange takes p-1 rounds, each
// waiting for its pair; here no read waits for another. It reports false when the call
// is not one for it, or when the buffers could not be read: then pairwise moves it all.
func alltoallSingle[T runtime.Elem](c *call, send, recv []T, n int) (bool, error) {
	l, es := localOf(c.s), elemSize[T]()
	if hostgroup.SingleMin() == 0 || c.s.size < 3 || !l.loc.oneHost || !l.oneGrp {
		return false, nil
	}
	g, err := worldGroup(c, 0, 0)
	if g == nil || err != nil {
		return false, err
	}
	done, err := singleMove(c, g, bytesOf(send), func(int) bool { return true }, len(recv)*es,
		func(add func(from, off int, dst []byte)) {
			for j := range g.Ranks {
				if j != g.Me {
					add(j, g.Me*n*es, bytesOf(recv[j*n:(j+1)*n]))
				}
			}
		})
	if done {
		c.chose("single")
	}
	return done, err
}
