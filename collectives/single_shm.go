package collectives

import (
	"fmt"

	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Single copy. A long one-host Bcast, Allgather or Alltoall can move each block once:
// the member that holds it registers its own buffer (substrate.RegisterRegion) and
// publishes the region's description, and every member that needs the block reads it
// straight from there (an RDMA read: on shm, cross-memory attach, one copy by the
// reader, nothing by the owner). Through scratch a block costs two copies: into the
// owner's big buffer and out of it.
//
// The move takes two steps of the group:
//
//  1. Each owner registers its buffer and publishes the description in its small slot,
//     its length in flag-line word sExpose (0: the owner could not register, say where
//     the kernel forbids cross-memory attach). The step carries the call's meta word, so
//     mismatched counts fail there as in every first step.
//  2. Each reader attaches the owners it needs, reads, and publishes sDone: 1 when every
//     read succeeded. After the step the owners deregister.
//
// Every member reads every member's sExpose and sDone words, so all decide alike. When
// an owner did not expose its buffer, no one reads and the call goes through scratch
// instead (singleMove returns false). When a read failed, the call goes through scratch
// after the second step: the owners' buffers hold the data still, and a block read
// already is written again with the same bytes.
//
// singleMin (GORMA_SHM_TUNE single=BYTES or off) is the block size from which a Bcast
// or an Allgather goes so; an Alltoall does beyond alltoallSHMMost bytes per rank.
// `scripts/device16-select.sh` (class single) measures the crossing.

// Flag-line words of the single-copy steps.
const (
	sExpose = shmFlagData // step 1: bytes of the owner's region description in its small slot
	sDone   = shmFlagData // step 2: 1 when every read of the member succeeded
)

// shmSingleMin is the default of singleMin: the block size in bytes from which Bcast and
// Allgather read the owners' buffers directly.
const shmSingleMin = 1 << 20

// singleMin returns the block size from which Bcast and Allgather move by single copy, or
// 0 when the tuning turns it off.
func singleMin() int { return shmTune().single }

// singleMove runs the two steps for call c on group g. owner(j) says which members
// expose a buffer (alike at every member); own is this member's, when it is one. reads
// lists what this member reads: add(from, off, dst) for each block. bytes is the call's
// meta byte count. It returns false, nil when the owners' buffers could not be read (no
// data moved, or some did): the caller then moves it all through scratch.
func singleMove(c *call, g *shmGroup, own []byte, owner func(j int) bool, bytes int, reads func(add func(from, off int, dst []byte))) (bool, error) {
	v := g.seq + 1
	var reg *substrate.Region
	*vWord(g, g.me, v, sExpose) = 0
	if owner(g.me) {
		r, err := substrate.RegisterRegion(c.s.comm, own)
		if err == nil {
			desc := r.AppendDesc(vSlot[byte](g, g.me, v, 0, shmSmallMax)[:0])
			if len(desc) <= shmSmallMax {
				reg = r
				*vWord(g, g.me, v, sExpose) = uint64(len(desc))
			} else {
				r.Free()
			}
		}
	}
	defer func() {
		if reg != nil {
			reg.Free()
		}
	}()
	g.setMeta(c, v, bytes)
	if err := g.step(c, v, bytes); err != nil {
		return false, err
	}
	for j := range g.ranks {
		if owner(j) && *vWord(g, j, v, sExpose) == 0 {
			return false, nil // every member sees the same words
		}
	}
	v2 := v + 1
	err := g.singleReads(c, v, reads)
	*vWord(g, g.me, v2, sDone) = b2u(err == nil)
	if err := g.step(c, v2, -1); err != nil {
		return false, err
	}
	for j := range g.ranks {
		if *vWord(g, j, v2, sDone) == 0 {
			return false, nil
		}
	}
	return true, nil
}

// singleReads attaches the owners and makes this member's reads (step v's descriptions).
// A failure is this member's alone: singleMove tells the others in its second step.
func (g *shmGroup) singleReads(c *call, v uint64, reads func(add func(from, off int, dst []byte))) error {
	ctr := substrate.NewCounter(c.s.comm)
	defer ctr.Close()
	var rems [shmSingleAttachMax]*substrate.Remote // attached owners, by member index
	var more map[int]*substrate.Remote             // beyond shmSingleAttachMax members
	defer func() {
		for _, rm := range rems {
			if rm != nil {
				rm.Close()
			}
		}
		for _, rm := range more {
			rm.Close()
		}
	}()
	var err error
	reads(func(from, off int, dst []byte) {
		if err != nil || len(dst) == 0 {
			return
		}
		var rm *substrate.Remote
		if from < len(rems) {
			rm = rems[from]
		} else {
			rm = more[from]
		}
		if rm == nil {
			n := int(*vWord(g, from, v, sExpose))
			rm, err = substrate.Attach(c.s.comm, g.ranks[from], vSlot[byte](g, from, v, 0, n))
			if err != nil {
				err = fmt.Errorf("rank %d attaching rank %d's buffer: %w", g.ranks[g.me], g.ranks[from], err)
				return
			}
			if from < len(rems) {
				rems[from] = rm
			} else {
				if more == nil {
					more = make(map[int]*substrate.Remote)
				}
				more[from] = rm
			}
		}
		if e := rm.Read(ctr, uint64(off), dst); e != nil {
			err = fmt.Errorf("rank %d reading rank %d's buffer: %w", g.ranks[g.me], g.ranks[from], e)
			return
		}
		g.moved.loaded += len(dst)
	})
	if werr := ctr.Wait(c.ctx); err == nil && werr != nil {
		err = fmt.Errorf("rank %d reading the owners' buffers: %w", g.ranks[g.me], werr)
	}
	return err
}

// shmSingleAttachMax is the most members whose Remotes singleReads keeps in an array.
const shmSingleAttachMax = 32
