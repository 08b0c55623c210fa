package collectives

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// wBytes is the length in bytes of the block rank s sends rank d: a multiple of 8, some
// 0, large (rendezvous) with scale.
func wBytes(s, d, scale int) int { return 8 * ((s + 2*d) % 3) * scale }

// wBlocks is rank me's layout: as sender (send) the blocks to every rank d, else as
// receiver the blocks from every rank s, with element sizes that differ between the two
// sides (1, 2, 4 or 8 bytes), in reverse rank order with a gap of 3 bytes before each
// (sizes nil: counts are bytes, packed in rank order). It returns the buffer length.
func wBlocks(me, p, scale int, send, sized bool) (ByteBlocks, int) {
	if send {
		return wBlocksOf(me, p, sized, func(d int) int { return wBytes(me, d, scale) }, 0)
	}
	return wBlocksOf(me, p, sized, func(s int) int { return wBytes(s, me, scale) }, 1)
}

// wBlocksOf lays out blocks of bytes(i) bytes for every rank i as wBlocks describes;
// side shifts the element sizes.
func wBlocksOf(me, p int, sized bool, bytes func(i int) int, side int) (ByteBlocks, int) {
	b := ByteBlocks{Counts: make([]int, p), Displs: make([]int, p)}
	if sized {
		b.Sizes = make([]int, p)
	}
	n := 0
	for k := range p {
		i := k
		if sized {
			i = p - 1 - k
			n += 3
		}
		b.Counts[i] = bytes(i)
		if sized {
			b.Sizes[i] = 1 << ((me + i + side) % 4)
			b.Counts[i] = bytes(i) / b.Sizes[i]
		}
		b.Displs[i] = n
		n += bytes(i)
	}
	return b, n
}

// wByte is byte j of the block rank s sends rank d.
func wByte(s, d, j int) byte { return byte(s*37 + d*11 + j*5 + j>>8) }

// checkAlltoallw runs one Alltoallw (or checkAlltoallwInPlace) and checks every received
// block and that the gaps of recv are untouched.
func checkAlltoallw(e rankEnv, scale int, sized, inPlace bool) error {
	if inPlace {
		return checkAlltoallwInPlace(e, scale, sized)
	}
	what := fmt.Sprintf("alltoallw scale=%d sized=%v", scale, sized)
	sb, sn := wBlocks(e.r, e.p, scale, true, sized)
	rb, rn := wBlocks(e.r, e.p, scale, false, sized)
	send, recv := make([]byte, sn), make([]byte, rn)
	for d := range e.p {
		blk := sb.of(send, d)
		for j := range blk {
			blk[j] = wByte(e.r, d, j)
		}
	}
	for j := range recv {
		recv[j] = 0xee
	}
	want := append([]byte(nil), recv...)
	for s := range e.p {
		blk := rb.of(want, s)
		for j := range blk {
			blk[j] = wByte(s, e.r, j)
		}
	}
	if err := Alltoallw(e.ctx, e.w, send, sb, recv, rb); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return compare(what, recv, want)
}

// checkAlltoallwInPlace runs one in-place Alltoallw: the block for rank s sits where the
// block from s lands, so each pair of ranks exchanges blocks of one length both ways
// (wSym), laid out as wBlocks does, with this rank's element sizes.
func checkAlltoallwInPlace(e rankEnv, scale int, sized bool) error {
	what := fmt.Sprintf("alltoallw scale=%d sized=%v in-place", scale, sized)
	rb, rn := wBlocksOf(e.r, e.p, sized, func(s int) int { return wSym(s, e.r, scale) }, 0)
	buf := make([]byte, rn)
	for j := range buf {
		buf[j] = 0xee
	}
	want := append([]byte(nil), buf...)
	for s := range e.p {
		blk, wblk := rb.of(buf, s), rb.of(want, s)
		for j := range blk {
			blk[j] = wByte(e.r, s, j)
			wblk[j] = wByte(s, e.r, j)
		}
	}
	if err := Alltoallw(e.ctx, e.w, nil, ByteBlocks{}, buf, rb); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return compare(what, buf, want)
}

// wSym is the length in bytes of the blocks ranks a and b exchange in place.
func wSym(a, b, scale int) int { return 8 * ((a + b + 1) % 3) * scale }

// TestAlltoallw checks Alltoallw against the blocks each pair of ranks exchanges, with
// byte counts and with element sizes that differ between sender and receiver, empty
// blocks, short and rendezvous blocks, in place and not.
func TestAlltoallw(t *testing.T) {
	for _, j := range vJobs {
		for _, p := range j.p {
			t.Run(fmt.Sprintf("%s/p=%d", j.name, p), func(t *testing.T) {
				runJob(t, p, j.opt, 60*time.Second, func(e rankEnv) error {
					for _, scale := range []int{1, 3, 5000} {
						for _, sized := range []bool{false, true} {
							for _, inPlace := range []bool{false, true} {
								if err := checkAlltoallw(e, scale, sized, inPlace); err != nil {
									return err
								}
							}
						}
					}
					return Barrier(e.ctx, e.w)
				})
			})
		}
	}
}

// TestAlltoallwMisuse: bad layouts fail at once with runtime.ErrInvalid naming the call
// and what is wrong; a rank whose block is longer or shorter than its peer's makes that
// peer fail with ErrTruncated or ErrMismatch; the World works afterwards.
func TestAlltoallwMisuse(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
		ctx, w := e.ctx, e.w
		buf, out := make([]byte, 12), make([]byte, 12)
		ok := ByteBlocks{Counts: []int{4, 4, 4}, Displs: []int{0, 4, 8}}
		cases := []struct {
			err  error
			want string
		}{
			{Alltoallw(ctx, w, buf, ByteBlocks{Counts: []int{4, 4}, Displs: []int{0, 4, 8}}, out, ok), "len(sendBlocks.Counts) 2 != 3 ranks"},
			{Alltoallw(ctx, w, buf, ok, out, ByteBlocks{Counts: []int{4, -4, 4}, Displs: []int{0, 4, 8}}), "recvBlocks.Counts[1] = -4 is negative"},
			{Alltoallw(ctx, w, buf, ok, out, ByteBlocks{Counts: []int{4, 4, 4}, Displs: []int{0, 4}}), "len(recvBlocks.Displs) 2 != 3 ranks"},
			{Alltoallw(ctx, w, buf, ByteBlocks{Counts: []int{4, 4, 4}, Displs: []int{0, 9, 8}}, out, ok), "block 1, [9, 13) at displs[1], is outside len(send) 12"},
			{Alltoallw(ctx, w, buf, ok, out, ByteBlocks{Counts: []int{4, 4, 4}, Displs: []int{0, 2, 8}}), "blocks 0 [0, 4) and 1 [2, 6) overlap"},
			{Alltoallw(ctx, w, buf, ok, out, ByteBlocks{Counts: []int{2, 2, 2}, Displs: []int{0, 4, 8}, Sizes: []int{2, 0, 2}}), "recvBlocks.Sizes[1] = 0 is not positive"},
			{Alltoallw(ctx, w, buf, ok, out, ByteBlocks{Counts: []int{2, 2, 2}, Displs: []int{0, 4, 8}, Sizes: []int{2}}), "len(recvBlocks.Sizes) 1 != 3 ranks"},
			{Alltoallw(ctx, w, buf, ok, out, ByteBlocks{Counts: []int{2, 5, 2}, Displs: []int{0, 4, 8}, Sizes: []int{2, 2, 2}}), "block 1, [4, 14) at displs[1], is outside len(recv) 12"},
			{Alltoallw(ctx, w, buf, ok, out, ByteBlocks{Counts: []int{2, 7, 2}, Displs: []int{0, 4, 8}, Sizes: []int{2, 2, 2}}), "block 1 of recv: 7 elements of 2 bytes exceed len(recv) 12"},
			{Alltoallw(ctx, w, buf, ok, out, ByteBlocks{Counts: []int{2, 2, 2}, Displs: []int{0, 4, 8}, Sizes: []int{1, 1, 1}}), "block " + fmt.Sprint(e.r) + " is 4 bytes in send and 2 in recv"},
			{Alltoallw(ctx, w, buf, ok, buf, ok), "overlap"},
			{Alltoallw(ctx, nil, buf, ok, out, ok), "nil world"},
		}
		for i, c := range cases {
			if !errors.Is(c.err, runtime.ErrInvalid) || !strings.HasPrefix(c.err.Error(), "collectives: alltoallw: ") ||
				!strings.Contains(strings.ToLower(c.err.Error()), strings.ToLower(c.want)) {
				return fmt.Errorf("case %d: got %v, want an ErrInvalid error naming %q", i, c.err, c.want)
			}
		}
		seen := 0
		for k, by := range []int{1, -2} {
			out, err := runMismatched(e, 400*time.Millisecond, "alltoallw", func(e rankEnv) (func() error, error) {
				sb := ByteBlocks{Counts: []int{4, 4, 4}, Displs: []int{0, 4, 8}}
				if e.r == 1 {
					sb.Counts = []int{4, 4, 4 + by}
				}
				err := Alltoallw(e.ctx, e.w, make([]byte, 14), sb, make([]byte, 12), ok)
				return func() error {
					if e.r == 2 {
						return errors.New("rank 2 succeeded with a block of another length")
					}
					return nil
				}, err
			})
			if err != nil {
				return fmt.Errorf("mismatch %d: %w", k, err)
			}
			if out == mismatchSeen {
				seen++
			}
			if err := checkAlltoallw(e, 2, k == 0, k == 1); err != nil {
				return fmt.Errorf("after mismatch %d: %w", k, err)
			}
		}
		if e.r == 2 && seen != 2 {
			return fmt.Errorf("rank 2 saw %d of 2 mismatches", seen)
		}
		return nil
	})
}
