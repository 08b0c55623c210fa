package collectives

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
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
// hostgroup.SingleMin() (GORMA_SHM_TUNE single=BYTES or off) is the block size from which
// a Bcast or an Allgather goes so; an Alltoall does beyond hostgroup.AlltoallMost bytes
// per rank, and a Scatter from hostgroup.ScatterSingleMin() bytes per block (single=off
// turns it off too). `scripts/device16-select.sh` (class single) measures the crossing.

// Flag-line words of the single-copy steps.
const (
	sExpose = hostgroup.FlagData // step 1: bytes of the owner's region description in its small slot
	sDone   = hostgroup.FlagData // step 2: 1 when every read of the member succeeded
)

// singleMove runs the two steps for call c on group g. owner(j) says which members
// expose a buffer (alike at every member); own is this member's, when it is one. reads
// lists what this member reads: add(from, off, dst) for each block. bytes is the call's
// meta byte count. It returns false, nil when the owners' buffers could not be read (no
// data moved, or some did): the caller then moves it all through scratch.
func singleMove(c *call, g *hostgroup.Group, own []byte, owner func(j int) bool, bytes int, reads func(add func(from, off int, dst []byte))) (bool, error) {
	if !hostgroup.ReadsAll(g) {
		return false, nil
	}
	v := g.Next()
	var reg *substrate.Region
	*hostgroup.VWord(g, g.Me, v, sExpose) = 0
	if owner(g.Me) {
		r, err := substrate.RegisterRegion(c.s.comm, own)
		if err == nil {
			desc := r.AppendDesc(hostgroup.VSlot[byte](g, g.Me, v, 0, hostgroup.SmallMax)[:0])
			if len(desc) <= hostgroup.SmallMax {
				reg = r
				*hostgroup.VWord(g, g.Me, v, sExpose) = uint64(len(desc))
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
	g.SetMeta(v, bytes)
	if err := g.Step(c, v, bytes); err != nil {
		return false, err
	}
	for j := range g.Ranks {
		if owner(j) && *hostgroup.VWord(g, j, v, sExpose) == 0 {
			return false, nil // every member sees the same words
		}
	}
	v2 := v + 1
	err := singleReads(c, g, v, reads)
	*hostgroup.VWord(g, g.Me, v2, sDone) = b2u(err == nil)
	if err := g.Step(c, v2, -1); err != nil {
		return false, err
	}
	for j := range g.Ranks {
		if *hostgroup.VWord(g, j, v2, sDone) == 0 {
			return false, nil
		}
	}
	return true, nil
}

// singleReads attaches the owners and makes this member's reads (step v's descriptions).
// A failure is this member's alone: singleMove tells the others in its second step.
func singleReads(c *call, g *hostgroup.Group, v uint64, reads func(add func(from, off int, dst []byte))) error {
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
			n := int(*hostgroup.VWord(g, from, v, sExpose))
			rm, err = substrate.Attach(c.s.comm, g.Ranks[from], hostgroup.VSlot[byte](g, from, v, 0, n))
			if err != nil {
				err = fmt.Errorf("rank %d attaching rank %d's buffer: %w", g.Ranks[g.Me], g.Ranks[from], err)
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
			err = fmt.Errorf("rank %d reading rank %d's buffer: %w", g.Ranks[g.Me], g.Ranks[from], errRefusedRead)
			return
		}
		if e := rm.Read(ctr, uint64(off), dst); e != nil {
			err = fmt.Errorf("rank %d reading rank %d's buffer: %w", g.Ranks[g.Me], g.Ranks[from], e)
			return
		}
		g.Moved.Loaded += len(dst)
	})
	if werr := ctr.Wait(c.ctx); err == nil && werr != nil {
		err = fmt.Errorf("rank %d reading the owners' buffers: %w", g.Ranks[g.Me], werr)
	}
	return err
}

// shmSingleAttachMax is the most members whose Remotes singleReads keeps in an array.
const shmSingleAttachMax = 32

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
