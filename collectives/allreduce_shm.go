package collectives

import "github.com/gorma-hpc/gorma/runtime"

// allreduceSHM is the shared-memory Allreduce for ranks that map each other's arena
// scratch (every rank on one host): flags in shared memory instead of messages, and no
// copy through the kernel or the transport. The group's scratch is set up at the first
// call (shmPrepare) and reused.
//
//   - Up to shmSmallMax bytes, one step: every rank copies its vector into its small
//     slot and publishes; then every rank combines all the slots, x0 ∘ x1 ∘ ... in rank
//     order, into its recv. At p=2 and 8 bytes this is one cache-line exchange each way.
//   - Longer vectors go in chunks of up to the big buffer's size (so that the working set
//     stays in cache, and the scratch stays small whatever the vector), two steps per
//     chunk: every rank copies its chunk into a big buffer and publishes; rank r reduces
//     block r of the chunk by loading that block from every rank's buffer, combining in
//     rank order into rank 0's buffer (block r of rank 0's buffer is read by rank r only),
//     and publishes; then every rank copies the reduced chunk from rank 0's buffer into
//     its recv. Consecutive chunks alternate between the two big buffers, so a buffer is
//     written again only after every rank has finished reading it.
//
// src is the input (recv itself when in place); recv receives the result. With root >= 0
// (a member index) only that member gets the result (the on-host reduce of the
// hierarchical algorithm). Rank order holds for non-commutative operators.
func allreduceSHM[T runtime.Elem](c call, g *shmGroup, src, recv []T, op Op[T], root int) error {
	n, es := len(recv), elemSize[T]()
	bytes := n * es
	if bytes <= shmSmallMax {
		return shmReduceSmall(c, g, src, recv, op, root)
	}
	per := g.chunk / es
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		first := -1
		if lo == 0 {
			first = bytes
		}
		if err := shmReduceChunk(c, g, src[lo:hi], recv[lo:hi], op, root, first); err != nil {
			return err
		}
	}
	return nil
}

// shmReduceSmall is the one-step reduction of a short vector.
func shmReduceSmall[T runtime.Elem](c call, g *shmGroup, src, recv []T, op Op[T], root int) error {
	n := len(recv)
	v := g.seq + 1
	copy(smallSlot[T](g, g.me, v, n), src)
	g.setMeta(v, n*elemSize[T]())
	if err := g.step(c, v, n*elemSize[T]()); err != nil {
		return err
	}
	if root >= 0 && root != g.me {
		return nil
	}
	copy(recv, smallSlot[T](g, 0, v, n))
	for i := 1; i < len(g.ranks); i++ {
		op.fn(recv, smallSlot[T](g, i, v, n))
	}
	return nil
}

// shmReduceChunk reduces one chunk through a big buffer (two steps). bytes >= 0 on a
// call's first chunk: the call's byte count, checked against the other ranks'.
func shmReduceChunk[T runtime.Elem](c call, g *shmGroup, src, recv []T, op Op[T], root, bytes int) error {
	n, p := len(recv), len(g.ranks)
	v := g.seq + 1
	b, err := g.takeBig(c, v, v+2)
	if err != nil {
		return err
	}
	copy(big[T](g, g.me, b, n), src)
	if bytes >= 0 {
		g.setMeta(v, bytes)
	}
	if err := g.step(c, v, bytes); err != nil {
		return err
	}
	lo, hi := block(n, p, g.me)
	if hi > lo {
		acc := big[T](g, 0, b, n)[lo:hi]
		for i := 1; i < p; i++ {
			op.fn(acc, big[T](g, i, b, n)[lo:hi])
		}
	}
	if err := g.step(c, v+1, -1); err != nil {
		return err
	}
	if root < 0 || root == g.me {
		copy(recv, big[T](g, 0, b, n))
	}
	return nil
}

// shmBcast copies member root's buf into every member's buf through the scratch: one
// step per chunk (the small slot for short vectors, the big buffers otherwise).
func shmBcast[T runtime.Elem](c call, g *shmGroup, buf []T, root int) error {
	n, es := len(buf), elemSize[T]()
	if n*es <= shmSmallMax {
		v := g.seq + 1
		if g.me == root {
			copy(smallSlot[T](g, g.me, v, n), buf)
		}
		if err := g.step(c, v, -1); err != nil {
			return err
		}
		if g.me != root {
			copy(buf, smallSlot[T](g, root, v, n))
		}
		return nil
	}
	per := g.chunk / es
	for lo := 0; lo < n; lo += per {
		part := buf[lo:min(n, lo+per)]
		v := g.seq + 1
		b, err := g.takeBig(c, v, v+1)
		if err != nil {
			return err
		}
		if g.me == root {
			copy(big[T](g, g.me, b, len(part)), part)
		}
		if err := g.step(c, v, -1); err != nil {
			return err
		}
		if g.me != root {
			copy(part, big[T](g, root, b, len(part)))
		}
	}
	return nil
}
