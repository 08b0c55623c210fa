package collectives

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Single copy. A long one-host Bcast, Allgather or Alltoall can move each block once:
// the member that holds it registers its own buffer (substrate.RegisterRegion) and
// publishes the region's description, and every member that needs the block reads it
// straight from there (an RDMA read: on shm, cross-memory attach, one copy by the
// reader, nothing by the owner). Through scratch a block costs two copies: into the
// owner's big buffer and out of it.
//
// A member reads the others' buffers only where the kernel lets it attach their
// memory (substrate.ReadsUser: Yama's ptrace_scope or a seccomp filter may refuse it,
// and a refused read fails the connection). At the group's setup each member marks in
// its region whether it reads every other member (markReads, word shmOffReads), before
// its description goes out. So every member knows every mark before any call on the
// group. A call moves by single copy only when every member's mark is set (readsAll):
// otherwise it goes through scratch (Alltoall: pairwise) at once, with no step of its
// own and no read. Owners thus expose their buffers only to readers that can attach.
//
// The move takes two steps of the group:
//
//  1. Each owner registers its buffer and publishes the description in its small slot,
//     its length in flag-line word sExpose (0: the owner could not register). The step
//     carries the call's meta word, so mismatched counts fail there as in every first
//     step.
//  2. Each reader attaches the owners it needs, reads, and publishes sDone: 1 when every
//     read succeeded. After the step the owners deregister.
//
// Every member reads every member's sExpose and sDone words, so all decide alike. When
// an owner did not expose its buffer, no one reads and the call goes through scratch
// instead (singleMove returns false). When a read failed, the call goes through scratch
// after the second step: the owners' buffers hold the data still, and a block read
// already is written again with the same bytes. Such a failure is one that Attach or
// Read returns before the read is posted; GORMA_TEST_REFUSE_READ makes one for tests.
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
	if !readsAll(g) {
		return false, nil
	}
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
		if refused() {
			err = fmt.Errorf("rank %d reading rank %d's buffer: %w", g.ranks[g.me], g.ranks[from], errRefusedRead)
			return
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

// markReads sets word shmOffReads of region, member me's of the group of World ranks
// ranks on w, when this rank reads every other member's user memory
// (substrate.ReadsUser), and clears it otherwise. It connects to the members that this
// rank has not yet contacted, as the attach of their regions would.
func markReads(w *runtime.World, ranks []int, me int, region []byte) error {
	all := true
	for i, r := range ranks {
		if i == me {
			continue
		}
		ok, err := substrate.ReadsUser(w, r)
		if err != nil {
			return fmt.Errorf("rank %d connecting to rank %d: %w", w.Rank(), r, err)
		}
		all = all && ok
	}
	atomic.StoreUint64(word(region, shmOffReads), b2u(all))
	return nil
}

// readsAll reports whether every member of g reads every other member's user memory:
// whether a call may move by single copy. Every member reads the same marks (markReads),
// so all decide alike. One load per member, of a line written at setup only.
func readsAll(g *shmGroup) bool {
	for i := range g.ranks {
		if atomic.LoadUint64(word(g.mem[i], shmOffReads)) == 0 {
			return false
		}
	}
	return true
}

// envRefuseRead names a fault hook for gorma's own tests: GORMA_TEST_REFUSE_READ=N makes
// the Nth single-copy read of this process (counted from 1) fail before it is posted,
// as a refused Attach or Read would.
const envRefuseRead = "GORMA_TEST_REFUSE_READ"

// errRefusedRead is the failure envRefuseRead makes.
var errRefusedRead = errors.New("read refused by " + envRefuseRead)

var (
	refuseAt = sync.OnceValue(func() int64 { // envRefuseRead's N; 0: none
		n, _ := strconv.ParseInt(os.Getenv(envRefuseRead), 10, 64)
		return n
	})
	readsTried atomic.Int64 // single-copy reads of this process so far
)

// refused counts a single-copy read and reports whether envRefuseRead refuses it.
func refused() bool {
	n := refuseAt()
	return n > 0 && readsTried.Add(1) == n
}
