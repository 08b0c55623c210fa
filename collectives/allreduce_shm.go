package collectives

import (
	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// allreduceSHM is the shared-memory Allreduce for ranks that map each other's arena
// scratch (every rank on one host): flags in shared memory instead of messages, and no
// copy through the kernel or the transport. The group's scratch is set up at the first
// call (hostgroup.Group.Prepare) and reused.
//
//   - Short vectors (under hostgroup.MediumFor(p) bytes), one step: every rank copies its
//     vector into its small slot and publishes; then every rank combines all the slots,
//     x0 ∘ x1 ∘ ... in rank order, into its recv. At p=2 and 8 bytes this is one cache-line
//     exchange each way.
//   - Medium vectors (up to hostgroup.SmallMax bytes) go by blocks as a chunk does, below,
//     through the small slots with plain copies (shmReduceBlocks): each rank reduces 1/p
//     of the vector instead of all of it.
//   - Longer vectors go in chunks of up to the big buffer's size (so that the working set
//     stays in cache, and the scratch stays small whatever the vector), two steps per
//     chunk. Every rank copies into its big buffer the blocks of its chunk that the others
//     reduce, and publishes. Rank r reduces block r, loading its own from src and the
//     others' from their buffers, combining in rank order, into its recv (or its buffer,
//     see shmReduceBlocks), copies the result into block r of its buffer and publishes.
//     Then every rank copies block j of the chunk from rank j's buffer into its recv.
//     Every rank reads (p-1)/p of the chunk from peers twice and stores only into its own
//     scratch. Consecutive chunks alternate between the two big buffers,
//     so a buffer is written again only after every rank has finished reading it.
//
// src is the input (recv itself when in place); recv receives the result. With root >= 0
// (a member index) only that member gets the result (the on-host reduce of the
// hierarchical algorithm). Rank order holds for non-commutative operators.
func allreduceSHM[T runtime.Elem](c *call, g *hostgroup.Group, src, recv []T, op Op[T], root int) error {
	n, es := len(recv), elemSize[T]()
	bytes := n * es
	if bytes <= hostgroup.SmallMax {
		if bytes < hostgroup.MediumFor(len(g.Ranks)) {
			return shmReduceSmall(c, g, src, recv, op, root, false)
		}
		return shmReduceBlocks(c, g, src, recv, op, root, bytes, true)
	}
	per := g.Chunk() / es
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		first := -1
		if lo == 0 {
			first = bytes
		}
		if err := shmReduceBlocks(c, g, src[lo:hi], recv[lo:hi], op, root, first, false); err != nil {
			return err
		}
	}
	return nil
}

// shmReduceSmall is the one-step reduction of a short vector. With last (the call's
// last step on g, root >= 0), only root waits for the others, whose slots it reduces;
// the others go on at once (stepLast).
func shmReduceSmall[T runtime.Elem](c *call, g *hostgroup.Group, src, recv []T, op Op[T], root int, last bool) error {
	n := len(recv)
	v := g.Next()
	hostgroup.ScratchIn(g, hostgroup.SmallSlot[T](g, g.Me, v, n), src)
	g.SetMeta(v, n*elemSize[T]())
	only := hostgroup.WaitAll
	if last && root >= 0 && root != g.Me {
		only = hostgroup.WaitNone
	}
	if err := g.StepLast(c, v, n*elemSize[T](), only); err != nil {
		return err
	}
	if root >= 0 && root != g.Me {
		return nil
	}
	reduceInto(recv, op, len(g.Ranks), loadedFrom(g, -1, func(i int) []T { return hostgroup.SmallSlot[T](g, i, v, n) }))
	return nil
}

// shmReduceBlocks reduces one chunk by blocks (two steps): through a big buffer, or with
// small (a medium vector, one chunk) through the small slots of both steps' parities,
// with plain copies. A big buffer holds a step's staged blocks and then the reduced block
// r, which no one staged. The small slot of step v+1 holds the reduced block, so that
// each slot is read before its readers publish their next step, as the type
// hostgroup.Group requires. bytes >= 0 on a call's first chunk: the call's byte count,
// checked against the other ranks'.
//
// Only the blocks the other members reduce are copied in, and member r's reduction goes
// into its recv and from there into block r of its own buffer. No member ever stores to
// another's scratch. When the reduction may not go
// to recv (in place, where block r of recv is still rank r's operand and rank 0's comes
// first; or a member that is not root), it goes to the buffer directly.
func shmReduceBlocks[T runtime.Elem](c *call, g *hostgroup.Group, src, recv []T, op Op[T], root, bytes int, small bool) error {
	n, p := len(recv), len(g.Ranks)
	v := g.Next()
	var stage, result func(i int) []T // member i's staged blocks, its reduced block's place
	stageIn := func(g *hostgroup.Group, dst, src []T) { hostgroup.ScratchInBig(g, dst, src, false) }
	if small {
		stage = func(i int) []T { return hostgroup.VSlot[T](g, i, v, 0, n) }
		result = func(i int) []T { return hostgroup.VSlot[T](g, i, v+1, 0, n) }
		stageIn = hostgroup.ScratchIn[T]
	} else {
		b, err := g.TakeBig(c, v, v+2)
		if err != nil {
			return err
		}
		stage = func(i int) []T { return hostgroup.Big[T](g, i, b, n) }
		result = stage
	}
	mine, res := stage(g.Me), result(g.Me)
	for j := range p {
		if j != g.Me {
			lo, hi := block(n, p, j)
			stageIn(g, mine[lo:hi], src[lo:hi])
		}
	}
	if bytes >= 0 {
		g.SetMeta(v, bytes)
	}
	if err := g.Step(c, v, bytes); err != nil {
		return err
	}
	gets := root < 0 || root == g.Me
	if lo, hi := block(n, p, g.Me); hi > lo {
		in := func(i int) []T {
			if i == g.Me {
				return src[lo:hi]
			}
			return stage(i)[lo:hi]
		}
		inPlace := &src[0] == &recv[0]
		acc := res[lo:hi]
		if gets && (!inPlace || g.Me == 0) {
			acc = recv[lo:hi]
		}
		reduceInto(acc, op, p, loadedFrom(g, g.Me, in))
		if &acc[0] == &recv[lo] {
			stageIn(g, res[lo:hi], acc)
		} else {
			g.Moved.Stored += (hi - lo) * elemSize[T]() // the reduction wrote it there
			if gets {
				copy(recv[lo:hi], acc)
			}
		}
	}
	if err := g.Step(c, v+1, -1); err != nil {
		return err
	}
	if gets {
		for j := range p {
			if j != g.Me {
				lo, hi := block(n, p, j)
				hostgroup.ScratchOut(g, recv[lo:hi], result(j)[lo:hi])
			}
		}
	}
	return nil
}

// loadedFrom returns in, counting the bytes of each operand it returns as loaded from
// scratch (the byte model), but own's (a member's own vector; -1: none). reduceInto asks
// for each operand once, so the count is what the reduction reads.
func loadedFrom[T runtime.Elem](g *hostgroup.Group, own int, in func(int) []T) func(int) []T {
	return func(i int) []T {
		x := in(i)
		if i != own {
			g.Moved.Loaded += len(x) * elemSize[T]()
		}
		return x
	}
}

// reduceInto sets acc to in(0) ∘ in(1) ∘ ... ∘ in(p-1), in rank order; acc may be in(0)
// itself, not another operand. It calls in once for each operand.
func reduceInto[T runtime.Elem](acc []T, op Op[T], p int, in func(int) []T) {
	if p == 1 {
		if x := in(0); len(acc) > 0 && &acc[0] != &x[0] {
			copy(acc, x)
		}
		return
	}
	op.combine(acc, in(0), in(1))
	for i := 2; i < p; i++ {
		op.fn(acc, in(i))
	}
}

// shmBcast copies member root's buf into every member's buf through the scratch: one
// step per chunk (the flag line or the small slot for short vectors, the big buffers
// otherwise).
func shmBcast[T runtime.Elem](c *call, g *hostgroup.Group, buf []T, root int) error {
	return shmBcastChecked(c, g, buf, root, -1, false)
}

// shmBcastChecked is shmBcast; bytes >= 0 on a call's first step checks that the
// members' call numbers and byte counts match (the call's byte count). With last (the
// call's last step on g), root publishes a short vector's step and goes on (stepLast);
// the others wait for every member, so that each sees any member at another call.
func shmBcastChecked[T runtime.Elem](c *call, g *hostgroup.Group, buf []T, root, bytes int, last bool) error {
	n, es := len(buf), elemSize[T]()
	if n*es <= hostgroup.SmallMax {
		v := g.Next()
		if g.Me == root {
			hostgroup.ScratchIn(g, hostgroup.SmallSlot[T](g, g.Me, v, n), buf)
		}
		if bytes >= 0 {
			g.SetMeta(v, bytes)
		}
		only := hostgroup.WaitAll
		if last && g.Me == root {
			only = hostgroup.WaitNone
		}
		if err := g.StepLast(c, v, bytes, only); err != nil {
			return err
		}
		if g.Me != root {
			hostgroup.ScratchOut(g, buf, hostgroup.SmallSlot[T](g, root, v, n))
		}
		return nil
	}
	return g.Chunks(c, n, es, 1, bytes, func(lo, hi, b int) {
		if g.Me == root {
			hostgroup.ScratchInBig(g, hostgroup.Big[T](g, g.Me, b, hi-lo), buf[lo:hi], false)
		}
	}, func(lo, hi, b int) {
		if g.Me != root {
			hostgroup.ScratchOut(g, buf[lo:hi], hostgroup.Big[T](g, root, b, hi-lo))
		}
	})
}
