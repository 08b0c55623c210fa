package collectives

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
)

// vSym is the count of the blocks ranks a and b exchange in an in-place Alltoallv: the
// same both ways, as MPI_IN_PLACE requires; 0 for some pairs, rendezvous-sized with
// scale.
func vSym(a, b, scale int) int { return ((a + b) % 3) * scale }

// vElem is element j of the block rank s sends rank d.
func vElem(s, d, j int) int64 { return int64(s*1_000_000 + d*10_000 + j) }

// inPlaceAlltoallv returns rank r's in-place Alltoallv buffer (the blocks to send, in rank
// order), its counts and the buffer it must hold afterwards.
func inPlaceAlltoallv(r, p, scale int) (buf []int64, counts []int, want []int64) {
	counts = make([]int, p)
	for s := range p {
		counts[s] = vSym(r, s, scale)
		for j := range counts[s] {
			buf = append(buf, vElem(r, s, j))
			want = append(want, vElem(s, r, j))
		}
	}
	return buf, counts, want
}

// TestAlltoallvInPlace: with send and sendCounts nil, every rank's blocks in recv are
// replaced by the blocks from the same ranks, blocking, nonblocking and persistent
// (restarted with new input), with empty, short and rendezvous blocks.
func TestAlltoallvInPlace(t *testing.T) {
	for _, j := range vJobs {
		for _, p := range j.p {
			t.Run(fmt.Sprintf("%s/p=%d", j.name, p), func(t *testing.T) {
				runJob(t, p, j.opt, 60*time.Second, func(e rankEnv) error {
					for _, scale := range []int{1, 4, 20000} {
						buf, counts, want := inPlaceAlltoallv(e.r, e.p, scale)
						if err := Alltoallv(e.ctx, e.w, nil, nil, buf, counts); err != nil {
							return fmt.Errorf("scale %d: %w", scale, err)
						}
						if err := compare(fmt.Sprintf("alltoallv in place, scale %d", scale), buf, want); err != nil {
							return err
						}
						buf, _, _ = inPlaceAlltoallv(e.r, e.p, scale)
						if err := Ialltoallv(e.ctx, e.w, nil, nil, buf, counts).Wait(e.ctx); err != nil {
							return fmt.Errorf("scale %d: %w", scale, err)
						}
						if err := compare(fmt.Sprintf("ialltoallv in place, scale %d", scale), buf, want); err != nil {
							return err
						}
						req := AlltoallvInit(e.w, nil, nil, buf, counts)
						for round := range 2 {
							fresh, _, _ := inPlaceAlltoallv(e.r, e.p, scale)
							copy(buf, fresh)
							if err := req.Start(e.ctx); err != nil {
								return err
							}
							if err := req.Wait(e.ctx); err != nil {
								return fmt.Errorf("scale %d, round %d: %w", scale, round, err)
							}
							if err := compare(fmt.Sprintf("persistent alltoallv in place, scale %d round %d", scale, round), buf, want); err != nil {
								return err
							}
						}
						if err := req.Free(); err != nil {
							return err
						}
					}
					// A nil send with counts is no in-place call: ErrInvalid, naming the fix.
					err := Alltoallv(e.ctx, e.w, nil, slices.Repeat([]int{1}, e.p), make([]int64, e.p), slices.Repeat([]int{1}, e.p))
					if !errors.Is(err, runtime.ErrInvalid) {
						return fmt.Errorf("nil send with counts: %v, want ErrInvalid", err)
					}
					return Barrier(e.ctx, e.w)
				})
			})
		}
	}
}

// TestAlltoallwNonblockingPersistent: Ialltoallw and AlltoallwInit give Alltoallw's
// result, with element sizes, rendezvous blocks and in place; the persistent Request is
// restarted with new input.
func TestAlltoallwNonblockingPersistent(t *testing.T) {
	for _, j := range vJobs {
		p := j.p[len(j.p)-1]
		t.Run(fmt.Sprintf("%s/p=%d", j.name, p), func(t *testing.T) {
			runJob(t, p, j.opt, 60*time.Second, func(e rankEnv) error {
				for _, scale := range []int{1, 5000} {
					sb, sn := wBlocks(e.r, e.p, scale, true, true)
					rb, rn := wBlocks(e.r, e.p, scale, false, true)
					send, recv := make([]byte, sn), make([]byte, rn)
					fill := func(seed byte) (want []byte) {
						for d := range e.p {
							blk := sb.of(send, d)
							for j := range blk {
								blk[j] = wByte(e.r, d, j) + seed
							}
						}
						for i := range recv {
							recv[i] = 0xee
						}
						want = slices.Clone(recv)
						for s := range e.p {
							blk := rb.of(want, s)
							for j := range blk {
								blk[j] = wByte(s, e.r, j) + seed
							}
						}
						return want
					}
					want := fill(0)
					if err := Ialltoallw(e.ctx, e.w, send, sb, recv, rb).Wait(e.ctx); err != nil {
						return err
					}
					if err := compare(fmt.Sprintf("ialltoallw scale %d", scale), recv, want); err != nil {
						return err
					}
					req := AlltoallwInit(e.w, send, sb, recv, rb)
					for round := range 3 {
						want := fill(byte(round * 3))
						if err := Startall(e.ctx, []*Request{req}); err != nil {
							return err
						}
						if err := req.Wait(e.ctx); err != nil {
							return err
						}
						if err := compare(fmt.Sprintf("persistent alltoallw scale %d round %d", scale, round), recv, want); err != nil {
							return err
						}
					}
					if err := req.Free(); err != nil {
						return err
					}
					// In place, nonblocking.
					ib, ibn := wBlocksOf(e.r, e.p, true, func(s int) int { return wSym(s, e.r, scale) }, 0)
					buf := make([]byte, ibn)
					iwant := make([]byte, ibn)
					for s := range e.p {
						blk, wblk := ib.of(buf, s), ib.of(iwant, s)
						for j := range blk {
							blk[j], wblk[j] = wByte(e.r, s, j), wByte(s, e.r, j)
						}
					}
					if err := Ialltoallw(e.ctx, e.w, nil, ByteBlocks{}, buf, ib).Wait(e.ctx); err != nil {
						return err
					}
					if err := compare(fmt.Sprintf("ialltoallw in place scale %d", scale), buf, iwant); err != nil {
						return err
					}
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}
