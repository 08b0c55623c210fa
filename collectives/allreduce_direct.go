package collectives

import (
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// allreduceDirect is a reduce-scatter and an allgather in one round each, every rank talking to
// every other at once (the direct, or "all-to-all", variant of the reduce-scatter/allgather
// Allreduce): the vector is cut into p nearly equal blocks. Rank r sends block d to every rank
// d and receives block r from every rank, then combines them all, a cache-sized chunk at a
// time. Then it sends its finished block r to every rank and receives every other finished
// block in place. Cost: 2 rounds moving 2n(p-1)/p elements each way, as ring and Rabenseifner,
// but with 2 message latencies on the critical path instead of 2(p-1) or 2 log2(p). Over tcp
// each large message is a rendezvous: an offer, then a read request, each a wake-up of a
// process the scheduler may have set aside. There, those latencies are what a long Allreduce of
// a few hosts loses. Each rank has p-1 messages in flight each way, so it serves small p only
// (selectAllreduce). A rank combines the contributions to its block in the order of their
// distance from it, not in rank order: commutative operators only. It reads the input from src
// (buf itself for in place) and leaves the result in buf, with no copy of src into buf
// (reduceScatterDirect). The scratch (p-1 blocks, one per contribution) is reused, or acquired
// per call under ScratchFresh (tempOf). A block of 2 directSegMin bytes or more goes through
// the pipelined form instead (allreduceDirectPipelined).
func allreduceDirect[T runtime.Elem](c *call, src, buf []T, op Op[T]) error {
	segs := directSegments(len(buf) / c.s.size * elemSize[T]())
	if pushable(c, (len(buf)+c.s.size-1)/c.s.size*elemSize[T](), max(segs, 1)) {
		return allreduceDirectPush(c, src, buf, op, max(segs, 1)) // one segment at least
	}
	if segs > 1 {
		return allreduceDirectPipelined(c, src, buf, op, segs)
	}
	if err := reduceScatterDirect(c, src, buf, op); err != nil {
		return err
	}
	return allgatherDirect(c, buf)
}

// directChunkBytes is the chunk of reduceScatterDirect's combination: with up to
// allreduceDirectMaxRanks inputs and the block, its chunks stay in a core's L2 cache.
const directChunkBytes = 32 << 10

// reduceScatterDirect is the first round of allreduceDirect: rank r sends block d of src
// to every rank d and sets block r of buf (of p nearly equal blocks, block) to block r of
// src combined with every other rank's block r. The other blocks of buf are left as they
// were. src is buf (in place) or a vector of the same length that does not overlap it:
// the first contribution is combined with src's block into buf's in one pass
// (Op.combine), which saves copying src into buf first.
func reduceScatterDirect[T runtime.Elem](c *call, src, buf []T, op Op[T]) (err error) {
	p, r, n := c.s.size, c.s.rank, len(buf)
	bmax := (n + p - 1) / p
	tmp, fresh, err := tempOf[T](c, 0, (p-1)*bmax)
	if err != nil {
		return err
	}
	defer func() { fresh.release(err == nil) }()
	lo, hi := block(n, p, r)
	own := buf[lo:hi]
	for k := 1; k < p; k++ {
		from := (r - k + p) % p
		if err := postRecv(c, c.Req(k-1), tmp[(k-1)*bmax:(k-1)*bmax+hi-lo], from); err != nil {
			return err
		}
	}
	for k := 1; k < p; k++ {
		d := (r + k) % p
		dlo, dhi := block(n, p, d)
		if err := postSend(c, c.Req(p-1+k-1), src[dlo:dhi], d); err != nil {
			return err
		}
	}
	for k := 1; k < p; k++ {
		from := (r - k + p) % p
		st, err := c.Req(k - 1).Wait(c.ctx)
		if err := c.checkStatus(st, err, from, hi-lo); err != nil {
			return err
		}
	}
	combineDirect(op, own, src[lo:hi], tmp, bmax, p, 0, hi-lo)
	// The allgather reuses the Requests and, in place, receives into the blocks these
	// sends read.
	return waitSends(c, p-1, p, r)
}

// allgatherDirect is the second round of allreduceDirect: rank r sends its block r of
// buf to every rank and receives every other block in place.
func allgatherDirect[T runtime.Elem](c *call, buf []T) error {
	p, r, n := c.s.size, c.s.rank, len(buf)
	lo, hi := block(n, p, r)
	for k := 1; k < p; k++ {
		src := (r - k + p) % p
		slo, shi := block(n, p, src)
		if err := postRecv(c, c.Req(k-1), buf[slo:shi], src); err != nil {
			return err
		}
	}
	for k := 1; k < p; k++ {
		if err := postSend(c, c.Req(p-1+k-1), buf[lo:hi], (r+k)%p); err != nil {
			return err
		}
	}
	for k := 1; k < p; k++ {
		src := (r - k + p) % p
		slo, shi := block(n, p, src)
		st, err := c.Req(k - 1).Wait(c.ctx)
		if err := c.checkStatus(st, err, src, shi-slo); err != nil {
			return err
		}
	}
	return waitSends(c, p-1, p, r)
}

// The pipelined form of allreduceDirect cuts each block into segments, up to
// directMaxSegments of at least directSegMin bytes, each a message of its own. A rank
// posts every receive of both rounds and every first-round send at the start. It combines
// segment s as soon as every contribution to it is in, and sends the finished segment on
// at once, while the later segments of the first round are still on the links. Without it
// a host's link idles at the end of each round: the round ends only when the slowest of
// the host's incoming flows does, and the next round starts a rendezvous round trip
// later. scripts/netns-allreduce.sh (4 network-namespace hosts, ALGO=direct; RATE=1gbit
// shapes the links) measures it against the bandwidth bound; on unshaped links, where the
// cores and not the links are the bottleneck, run-to-run noise hides it. Two segments are
// as fast as four on shaped links, with half the messages. Posting the second round's
// receives early without segments is slower on shaped links: the finished blocks of the
// ranks ahead then compete with the laggard's last contributions on its link.
const (
	directSegMin      = 1 << 20
	directMaxSegments = 2
)

// directSegMinBytes is directSegMin; tests lower it to pipeline small vectors.
var directSegMinBytes = directSegMin

// directSegments is the number of segments of a block of blockBytes bytes.
func directSegments(blockBytes int) int {
	return min(directMaxSegments, blockBytes/directSegMinBytes)
}

// allreduceDirectPipelined is allreduceDirect with each block cut into segs segments,
// each a message of its own. Requests: for the peer k ranks away and segment s, index
// (k-1)·segs + s in four ranges of (p-1)·segs: first-round receives, first-round sends,
// second-round receives, second-round sends. Each source's first-round receives are
// posted before its second-round ones, so message order matches them. In place, a
// second-round segment lands in memory that a first-round send read; it arrives only
// after its sender received (read) that first-round segment in full, so no byte is
// overwritten before it was sent.
func allreduceDirectPipelined[T runtime.Elem](c *call, src, buf []T, op Op[T], segs int) (err error) {
	p, r, n := c.s.size, c.s.rank, len(buf)
	bmax := (n + p - 1) / p
	tmp, fresh, err := tempOf[T](c, 0, (p-1)*bmax)
	if err != nil {
		return err
	}
	defer func() { fresh.release(err == nil) }()
	lo, hi := block(n, p, r)
	own := buf[lo:hi]
	span := (p - 1) * segs
	rsRecv, rsSend, agRecv, agSend := 0, span, 2*span, 3*span
	idx := func(k, s int) int { return (k-1)*segs + s }
	for k := 1; k < p; k++ {
		from := (r - k + p) % p
		for s := range segs {
			a, b := block(hi-lo, segs, s)
			if err := postRecv(c, c.Req(rsRecv+idx(k, s)), tmp[(k-1)*bmax+a:(k-1)*bmax+b], from); err != nil {
				return err
			}
		}
	}
	for k := 1; k < p; k++ {
		from := (r - k + p) % p
		flo, fhi := block(n, p, from)
		for s := range segs {
			a, b := block(fhi-flo, segs, s)
			if err := postRecv(c, c.Req(agRecv+idx(k, s)), buf[flo+a:flo+b], from); err != nil {
				return err
			}
		}
	}
	for k := 1; k < p; k++ {
		d := (r + k) % p
		dlo, dhi := block(n, p, d)
		for s := range segs {
			a, b := block(dhi-dlo, segs, s)
			if err := postSend(c, c.Req(rsSend+idx(k, s)), src[dlo+a:dlo+b], d); err != nil {
				return err
			}
		}
	}
	for s := range segs {
		a, b := block(hi-lo, segs, s)
		for k := 1; k < p; k++ {
			st, err := c.Req(rsRecv + idx(k, s)).Wait(c.ctx)
			if err := c.checkStatus(st, err, (r-k+p)%p, b-a); err != nil {
				return err
			}
		}
		combineDirect(op, own, src[lo:hi], tmp, bmax, p, a, b)
		for k := 1; k < p; k++ {
			if err := postSend(c, c.Req(agSend+idx(k, s)), own[a:b], (r+k)%p); err != nil {
				return err
			}
		}
	}
	for k := 1; k < p; k++ {
		from := (r - k + p) % p
		flo, fhi := block(n, p, from)
		for s := range segs {
			a, b := block(fhi-flo, segs, s)
			st, err := c.Req(agRecv + idx(k, s)).Wait(c.ctx)
			if err := c.checkStatus(st, err, from, b-a); err != nil {
				return err
			}
		}
	}
	for _, first := range []int{rsSend, agSend} {
		for k := 1; k < p; k++ {
			for s := range segs {
				if _, err := c.Req(first + idx(k, s)).Wait(c.ctx); err != nil {
					return fmt.Errorf("rank %d sending to rank %d: %w", c.s.rank, (r+k)%p, err)
				}
			}
		}
	}
	return nil
}

// combineDirect sets own[a:b] to srcBlock[a:b] combined with the p-1 contributions in
// tmp (the k-th at tmp[(k-1)·bmax:], in its elements a to b), a cache-sized chunk at a
// time. Each chunk of the block and of the contributions is combined while it is in
// cache. So the vector is read once per input and written once, where a pass per
// contribution as it arrived wrote the block p-1 times and read it p-2 times more (on
// cores the links keep busy, that traffic is time). The first contribution is combined
// with srcBlock into own in one pass (Op.combine); srcBlock may be own (in place).
func combineDirect[T runtime.Elem](op Op[T], own, srcBlock, tmp []T, bmax, p, a, b int) {
	step := max(directChunkBytes/elemSize[T](), 1)
	for off := a; off < b; off += step {
		end := min(off+step, b)
		for k := 1; k < p; k++ {
			in := tmp[(k-1)*bmax+off : (k-1)*bmax+end]
			if k == 1 {
				op.combine(own[off:end], srcBlock[off:end], in)
			} else {
				op.fn(own[off:end], in)
			}
		}
	}
}

// waitSends waits for the sends on requests first .. first+p-2, to ranks r+1 .. r+p-1.
func waitSends(c *call, first, p, r int) error {
	for k := 1; k < p; k++ {
		if _, err := c.Req(first + k - 1).Wait(c.ctx); err != nil {
			return fmt.Errorf("rank %d sending to rank %d: %w", c.s.rank, (r+k)%p, err)
		}
	}
	return nil
}
