package collectives

import (
	"fmt"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// The one-host v-collectives: Gatherv, Scatterv, Allgatherv and Alltoallv through the
// World's shared-memory group (internal/hostgroup).
//
// Their ranks pass different counts, and each knows only some of them: Gatherv's and
// Scatterv's counts are root's, a rank's own length is its own. Alltoallv's send counts
// are the sender's, its receive counts the receiver's. A call's first step, the
// agreement, therefore publishes what each member knows: its own count in its flag line,
// and root's counts (Gatherv, Scatterv) or the member's send and receive counts
// (Alltoallv) at the start of its small slot; Allgatherv's members publish a hash of
// their counts. After the step every member reads the same words, so every member reaches
// the same verdict: all fail with ErrMismatch, naming the same two ranks, or none does.
// No data moves on counts that do not match, and the group's steps stay in step
// (cleanFail: no new setup follows). A member whose data fits its small slot beside those
// words writes it there in the same step and says so (flag-line word vFits): when every
// member's does, the call takes that one step. Otherwise the data follows in chunks of
// the big buffers, sized for the largest block, on which every member now agrees. Where
// the blocks are long enough that point to point's single copy wins (moveBySHM), the call
// goes on point to point after the agreement, its counts already checked.
//
// Argument errors a rank can see alone (a negative count, a short buffer) are returned
// before the agreement, as the point-to-point forms do: the other members then wait
// until ctx ends, or see another call's number at their next step (ErrMismatch).

// Words of a member's flag line in the agreement step (after the seq and meta words).
const (
	vCount = hostgroup.FlagData      // the member's own count, in elements
	vFits  = hostgroup.FlagData + 8  // 1: the member's data is in its small slot
	vHash  = hostgroup.FlagData + 16 // Allgatherv: the hash of the member's counts
)

// putCounts stores counts into this member's small slot for step v, from word k.
func putCounts(g *hostgroup.Group, v uint64, k int, counts []int) {
	w := hostgroup.VSlot[uint64](g, g.Me, v, 8*k, len(counts))
	for i, n := range counts {
		w[i] = uint64(n)
	}
}

// fitsAll reports whether every member set vFits in step v.
func fitsAll(g *hostgroup.Group, v uint64) bool {
	for j := range g.Ranks {
		if *hostgroup.VWord(g, j, v, vFits) == 0 {
			return false
		}
	}
	return true
}

// agree publishes step v, a v-collective's first: the meta word checks the call numbers
// (and so the roots, rootTag).
func agree(c *call, g *hostgroup.Group, v uint64) error {
	g.SetMeta(v, 0)
	return g.Step(c, v, 0)
}

// rootCounts checks every member's own count against root's counts[j] (Gatherv, Scatterv)
// after the agreement step v, and returns the largest count of a member other than root.
func rootCounts(g *hostgroup.Group, v uint64, root int, what string) (int, error) {
	rc := hostgroup.VSlot[uint64](g, root, v, 0, len(g.Ranks))
	most := 0
	for j := range g.Ranks {
		if j == root {
			continue
		}
		if n := *hostgroup.VWord(g, j, v, vCount); n != rc[j] {
			return 0, fmt.Errorf("%w: rank %d's %s holds %d elements, root %d counts %d for it (counts[%d])",
				ErrMismatch, g.Ranks[j], what, n, g.Ranks[root], rc[j], j)
		}
		most = max(most, int(rc[j]))
	}
	return most, nil
}

// gathervSHM is Gatherv on a one-host World, after root checked its layout. Each member
// but root copies its block into its scratch, root copies them out into recv (see the
// file's comment). Each member but root stores its count; root loads the others' counts.
func gathervSHM[T runtime.Elem](c *call, g *hostgroup.Group, sendBuf, recvBuf []T, counts, displs []int, root int) error {
	p, es := len(g.Ranks), elemSize[T]()
	v := g.Next()
	if g.Me == root {
		putCounts(g, v, 0, counts)
		*hostgroup.VWord(g, g.Me, v, vCount), *hostgroup.VWord(g, g.Me, v, vFits) = uint64(counts[root]), 1
	} else {
		fits := len(sendBuf)*es <= hostgroup.SmallMax
		if fits {
			hostgroup.ScratchIn(g, hostgroup.VSlot[T](g, g.Me, v, 0, len(sendBuf)), sendBuf)
		}
		*hostgroup.VWord(g, g.Me, v, vCount), *hostgroup.VWord(g, g.Me, v, vFits) = uint64(len(sendBuf)), b2u(fits)
	}
	if err := agree(c, g, v); err != nil {
		return err
	}
	most, err := rootCounts(g, v, root, "send")
	if err != nil {
		return g.CleanFail(v, err)
	}
	if fitsAll(g, v) {
		c.chose("shm")
		if g.Me == root {
			for j := range p {
				if j != root {
					d := displ(counts, displs, j)
					hostgroup.ScratchOut(g, recvBuf[d:d+counts[j]], hostgroup.VSlot[T](g, j, v, 0, counts[j]))
				}
			}
		}
		return nil
	}
	if !moveBySHM(p, most*es, hostgroup.RootedMost) {
		c.chose("linear")
		if g.Me != root {
			return send(c, sendBuf, root)
		}
		return gathervLinear(c, recvBuf, counts, displs, root)
	}
	c.chose("shm")
	if err := g.Prepare(c, most*es); err != nil {
		return err
	}
	err = g.Chunks(c, most, es, 1, -1, func(lo, hi, b int) {
		if g.Me != root && lo < len(sendBuf) {
			hi := min(len(sendBuf), hi)
			hostgroup.ScratchInBig(g, hostgroup.Big[T](g, g.Me, b, hi-lo), sendBuf[lo:hi], true)
		}
	}, func(lo, hi, b int) {
		if g.Me != root {
			return
		}
		for j := range p {
			if j != root && lo < counts[j] {
				d, hi := displ(counts, displs, j), min(counts[j], hi)
				hostgroup.ScratchOut(g, recvBuf[d+lo:d+hi], hostgroup.Big[T](g, j, b, hi-lo))
			}
		}
	})
	if err != nil {
		return err
	}
	return g.ReleaseBig(c)
}

// scattervSHM is Scatterv on a one-host World, after root checked its layout: root
// copies the other members' blocks into its scratch (beside its counts when they fit
// there, in rank order), each member copies its own out. Root stores the other members'
// blocks; each other member loads its own.
func scattervSHM[T runtime.Elem](c *call, g *hostgroup.Group, sendBuf []T, counts, displs []int, recvBuf []T, root int) error {
	p, es := len(g.Ranks), elemSize[T]()
	head := 8 * p // root's counts, at the start of its slot
	v := g.Next()
	if g.Me == root {
		putCounts(g, v, 0, counts)
		others := 0
		for j, n := range counts {
			if j != root {
				others += n
			}
		}
		fits := head+others*es <= hostgroup.SmallMax
		if fits {
			off := head
			for j := range p {
				if j != root {
					d := displ(counts, displs, j)
					hostgroup.ScratchIn(g, hostgroup.VSlot[T](g, g.Me, v, off, counts[j]), sendBuf[d:d+counts[j]])
					off += counts[j] * es
				}
			}
		}
		*hostgroup.VWord(g, g.Me, v, vCount), *hostgroup.VWord(g, g.Me, v, vFits) = uint64(counts[root]), b2u(fits)
	} else {
		*hostgroup.VWord(g, g.Me, v, vCount), *hostgroup.VWord(g, g.Me, v, vFits) = uint64(len(recvBuf)), 1
	}
	if err := agree(c, g, v); err != nil {
		return err
	}
	most, err := rootCounts(g, v, root, "recv")
	if err != nil {
		return g.CleanFail(v, err)
	}
	if fitsAll(g, v) {
		c.chose("shm")
		if g.Me != root {
			rc, off := hostgroup.VSlot[uint64](g, root, v, 0, p), head
			for j := range g.Me {
				if j != root {
					off += int(rc[j]) * es
				}
			}
			hostgroup.ScratchOut(g, recvBuf, hostgroup.VSlot[T](g, root, v, off, len(recvBuf)))
		}
		return nil
	}
	if !moveBySHM(p, most*es, hostgroup.RootedMost) {
		c.chose("linear")
		if g.Me != root {
			return recv(c, recvBuf, root)
		}
		return scattervLinear(c, sendBuf, counts, displs, root)
	}
	c.chose("shm")
	if err := g.Prepare(c, max(p*most*es, hostgroup.SmallMax+1)); err != nil { // root's big buffers exist
		return err
	}
	err = g.Chunks(c, most, es, p, -1, func(lo, hi, b int) {
		k := hi - lo
		if g.Me == root {
			for j := range p {
				if j != root && lo < counts[j] {
					d, hi := displ(counts, displs, j), min(counts[j], hi)
					hostgroup.ScratchInBig(g, hostgroup.Big[T](g, g.Me, b, p*k)[j*k:j*k+hi-lo], sendBuf[d+lo:d+hi], true)
				}
			}
		}
	}, func(lo, hi, b int) {
		k := hi - lo
		if g.Me != root && lo < len(recvBuf) {
			hi := min(len(recvBuf), hi)
			hostgroup.ScratchOut(g, recvBuf[lo:hi], hostgroup.Big[T](g, root, b, p*k)[g.Me*k:g.Me*k+hi-lo])
		}
	})
	if err != nil {
		return err
	}
	return g.ReleaseBig(c)
}

// countsHash is FNV-1a over counts: Allgatherv's members compare their counts by it.
func countsHash(counts []int) uint64 {
	h := uint64(14695981039346656037)
	for _, n := range counts {
		for k := 0; k < 64; k += 8 {
			h ^= uint64(n) >> k & 0xff
			h *= 1099511628211
		}
	}
	return h
}

// allgathervSHM is Allgatherv on a one-host World: each member copies its block (recv's,
// at off) into its scratch, every member copies the others' blocks out. Every member
// knows every count, so only their hashes are compared. Each member stores its count and
// loads the others'.
func allgathervSHM[T runtime.Elem](c *call, g *hostgroup.Group, recv []T, counts []int, off int) error {
	p, es := len(g.Ranks), elemSize[T]()
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	mine := recv[off : off+counts[g.Me]]
	v := g.Next()
	fits := most*es <= hostgroup.SmallMax
	if fits {
		hostgroup.ScratchIn(g, hostgroup.VSlot[T](g, g.Me, v, 0, len(mine)), mine)
	}
	*hostgroup.VWord(g, g.Me, v, vHash) = countsHash(counts)
	if err := agree(c, g, v); err != nil {
		return err
	}
	for j := range p {
		if h := *hostgroup.VWord(g, j, v, vHash); h != *hostgroup.VWord(g, 0, v, vHash) {
			return g.CleanFail(v, fmt.Errorf("%w: rank %d passes other counts than rank %d (every rank must pass the same counts)",
				ErrMismatch, g.Ranks[j], g.Ranks[0]))
		}
	}
	if fits {
		c.chose("shm")
		d := 0
		for j := range p {
			if j != g.Me {
				hostgroup.ScratchOut(g, recv[d:d+counts[j]], hostgroup.VSlot[T](g, j, v, 0, counts[j]))
			}
			d += counts[j]
		}
		return nil
	}
	if !moveBySHM(p, most*es, 0) {
		c.chose("ring")
		return allgathervRing(c, recv, counts, off, len(recv))
	}
	c.chose("shm")
	if err := g.Prepare(c, most*es); err != nil {
		return err
	}
	err := g.Chunks(c, most, es, 1, -1, func(lo, hi, b int) {
		if lo < len(mine) {
			hi := min(len(mine), hi)
			hostgroup.ScratchInBig(g, hostgroup.Big[T](g, g.Me, b, hi-lo), mine[lo:hi], false)
		}
	}, func(lo, hi, b int) {
		d := 0
		for j := range p {
			if j != g.Me && lo < counts[j] {
				hi := min(counts[j], hi)
				hostgroup.ScratchOut(g, recv[d+lo:d+hi], hostgroup.Big[T](g, j, b, hi-lo))
			}
			d += counts[j]
		}
	})
	if err != nil {
		return err
	}
	return g.ReleaseBig(c)
}

// alltoallvSHM is Alltoallv on a one-host World, after this rank checked its own counts
// and buffers. Each member publishes its send and receive counts at the start of its
// small slot, so that every member checks every pair: rank s's sendCounts[d] against
// rank d's recvCounts[s]. Its blocks follow in the same step when they fit; otherwise in
// parts, part k of every block in one step, as many elements per block as p of them fit
// in a big buffer. Each member stores its blocks to the others and loads the others'
// blocks to it.
func alltoallvSHM[T runtime.Elem](c *call, g *hostgroup.Group, send []T, sendCounts []int, recv []T, recvCounts []int) error {
	p, es := len(g.Ranks), elemSize[T]()
	head := 16 * p // the send counts, then the receive counts
	v := g.Next()
	putCounts(g, v, 0, sendCounts)
	putCounts(g, v, p, recvCounts)
	fits := head+(len(send)-sendCounts[g.Me])*es <= hostgroup.SmallMax
	if fits {
		off := head
		for d, s := 0, 0; d < p; d++ {
			if d != g.Me {
				hostgroup.ScratchIn(g, hostgroup.VSlot[T](g, g.Me, v, off, sendCounts[d]), send[s:s+sendCounts[d]])
				off += sendCounts[d] * es
			}
			s += sendCounts[d]
		}
	}
	*hostgroup.VWord(g, g.Me, v, vFits) = b2u(fits)
	if err := agree(c, g, v); err != nil {
		return err
	}
	most, total := 0, 0 // the largest block, and the most any member sends
	for s := range p {
		sc, t := hostgroup.VSlot[uint64](g, s, v, 0, p), 0
		for d := range p {
			if rc := hostgroup.VSlot[uint64](g, d, v, 8*p, p)[s]; sc[d] != rc {
				return g.CleanFail(v, fmt.Errorf("%w: rank %d sends %d elements to rank %d (sendCounts[%d]), which expects %d (recvCounts[%d])",
					ErrMismatch, g.Ranks[s], sc[d], g.Ranks[d], d, rc, s))
			}
			most, t = max(most, int(sc[d])), t+int(sc[d])
		}
		total = max(total, t)
	}
	if fitsAll(g, v) {
		c.chose("shm")
		roff := 0
		for s := range p {
			if s != g.Me {
				sc, off := hostgroup.VSlot[uint64](g, s, v, 0, p), head
				for d := range g.Me {
					if d != s {
						off += int(sc[d]) * es
					}
				}
				hostgroup.ScratchOut(g, recv[roff:roff+recvCounts[s]], hostgroup.VSlot[T](g, s, v, off, recvCounts[s]))
			}
			roff += recvCounts[s]
		}
		return nil
	}
	if !moveBySHM(p, total*es, hostgroup.AlltoallvMost) {
		c.chose("scattered")
		return alltoallvP2P(c, send, sendCounts, recv, recvCounts)
	}
	c.chose("shm")
	if err := g.Prepare(c, max(total*es, hostgroup.SmallMax+1)); err != nil { // big buffers exist
		return err
	}
	err := g.Chunks(c, most, es, p, -1, func(lo, hi, b int) {
		k := hi - lo
		mine := hostgroup.Big[T](g, g.Me, b, p*k)
		for d, s := 0, 0; d < p; d++ {
			if d != g.Me && lo < sendCounts[d] {
				hi := min(sendCounts[d], hi)
				hostgroup.ScratchInBig(g, mine[d*k:d*k+hi-lo], send[s+lo:s+hi], true)
			}
			s += sendCounts[d]
		}
	}, func(lo, hi, b int) {
		k := hi - lo
		for s, r := 0, 0; s < p; s++ {
			if s != g.Me && lo < recvCounts[s] {
				hi := min(recvCounts[s], hi)
				hostgroup.ScratchOut(g, recv[r+lo:r+hi], hostgroup.Big[T](g, s, b, p*k)[g.Me*k:g.Me*k+hi-lo])
			}
			r += recvCounts[s]
		}
	})
	if err != nil {
		return err
	}
	return g.ReleaseBig(c)
}

// b2u is 1 for true, 0 for false.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
