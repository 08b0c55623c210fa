package runtime

import (
	"bytes"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"unsafe"

	"github.com/gorma-hpc/gorma/datatype"
)

// FuzzDecodeOffer: a layout offer never makes decodeHeader panic; one it accepts is an
// RTS whose runs hold its length and re-encode to the message.
func FuzzDecodeOffer(f *testing.F) {
	for _, runs := range [][]datatype.Run{
		{{Off: 0, Len: 8, Count: 4096, Stride: 48}},
		{{Off: 16, Len: 3, Count: 1}, {Off: 40, Len: 8, Count: 2, Stride: -8}},
	} {
		b := make([]byte, offerLen+len(runs)*runLen)
		size := 0
		for _, r := range runs {
			size += r.Len * r.Count
		}
		putOffer(b, 3, 9, 77, 0x7f0000001000, size, runs)
		f.Add(b)
	}
	f.Add([]byte{msgRTSL, wireVersion, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, msg []byte) {
		h, err := decodeHeader(msg)
		if err != nil || !h.layout {
			return
		}
		if h.kind != msgRTS || h.off != 0 {
			t.Fatalf("layout offer decoded as kind %d offset %d", h.kind, h.off)
		}
		enc := offerRuns(&h, msg[hdrLen:])
		c := runCursor{enc: enc, n: len(enc) / runLen}
		var runs []datatype.Run
		sum := 0
		for i := range c.n {
			r := c.run(i)
			runs = append(runs, r)
			sum += r.Len * r.Count
		}
		if uint64(sum) != h.length {
			t.Fatalf("runs %v hold %d bytes, the offer %d", runs, sum, h.length)
		}
		again := make([]byte, len(msg))
		putOffer(again, h.ctx, h.tag, h.cookie, h.rkey, int(h.length), runs)
		if !bytes.Equal(again, msg) {
			t.Fatalf("offer %+v %v does not re-encode to the message", h, runs)
		}
	})
}

// TestReadRuns reads layouts of this process's own memory with readRuns (process_vm_readv
// on itself) and compares with Pack and UnpackPrefix: random vectors and irregular
// layouts on both sides, more pieces than one call's iovecs, prefixes.
func TestReadRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	layout := func(n int) datatype.Type {
		var ty datatype.Type
		var err error
		switch rng.IntN(3) {
		case 0:
			ty, err = datatype.Contiguous[uint8](n)
		case 1:
			bl := 1 + rng.IntN(4)
			for n%bl != 0 {
				bl--
			}
			ty, err = datatype.Vector[uint8](n/bl, bl, bl+1+rng.IntN(5))
		default:
			var bls, ds []int
			for at, left := 0, n; left > 0; {
				bl := min(1+rng.IntN(7), left)
				bls, ds = append(bls, bl), append(ds, at)
				at += bl + rng.IntN(4)
				left -= bl
			}
			ty, err = datatype.Indexed[uint8](bls, ds)
		}
		if err != nil {
			t.Fatal(err)
		}
		return ty
	}
	for round := range 40 {
		n := 1 + rng.IntN(6000)
		st, rt := layout(n), layout(n)
		_, shi, _ := st.Span(1)
		_, rhi, _ := rt.Span(1)
		src, dst, want := make([]byte, shi), make([]byte, rhi), make([]byte, rhi)
		for i := range src {
			src[i] = byte(rng.UintN(256))
		}
		sl, err := st.Over("send", src, 1)
		if err != nil {
			t.Fatal(err)
		}
		rl, err := rt.Over("recv", dst, 1)
		if err != nil {
			t.Fatal(err)
		}
		m := n - rng.IntN(n/4+1) // a prefix, as a truncated or short message reads
		packed := make([]byte, n)
		if _, err := sl.Pack(packed); err != nil {
			t.Fatal(err)
		}
		if _, err := datatype.UnpackPrefix(want, packed[:m], 1, rt); err != nil {
			t.Fatal(err)
		}
		sruns, _ := sl.Runs(nil, 1<<20)
		enc := make([]byte, offerLen+len(sruns)*runLen)
		putOffer(enc, 0, 0, 0, 0, n, sruns)
		rruns, _ := rl.Runs(nil, 1<<20)
		remote := runCursor{enc: enc[offerLen:], n: len(sruns)}
		local := runCursor{runs: rruns, n: len(rruns)}
		addr := uint64(uintptr(unsafe.Pointer(&src[0])))
		if err := readRuns(os.Getpid(), addr, &remote, dst, &local, m); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !bytes.Equal(dst, want) {
			t.Fatalf("round %d: %d of %d bytes from %d runs into %d runs differ", round, m, n, len(sruns), len(rruns))
		}
	}
}

// BenchmarkReadRuns reads 1 MiB of this process's memory with readRuns, in blocks of
// 8 B to 32 KiB five block lengths apart on the remote side, the local side, both, or
// neither: the cost per iovec on each side that minOfferBlock and minLocalBlock follow.
func BenchmarkReadRuns(b *testing.B) {
	const total = 1 << 20
	for _, blk := range []int{8, 64, 512, 4096, 32768} {
		for _, side := range []string{"none", "remote", "local", "both"} {
			b.Run(side+"/"+strconv.Itoa(blk), func(b *testing.B) {
				n := total / blk
				src, dst := make([]byte, n*blk*5), make([]byte, n*blk*5)
				strided, whole := datatype.Run{Len: blk, Count: n, Stride: blk * 5}, datatype.Run{Len: total, Count: 1}
				sr, lr := whole, whole
				if side == "remote" || side == "both" {
					sr = strided
				}
				if side == "local" || side == "both" {
					lr = strided
				}
				enc := make([]byte, offerLen+runLen)
				putOffer(enc, 0, 0, 0, 0, total, []datatype.Run{sr})
				addr := uint64(uintptr(unsafe.Pointer(&src[0])))
				b.SetBytes(total)
				for b.Loop() {
					remote, local := runCursor{enc: enc[offerLen:], n: 1}, runCursor{one: lr, n: 1}
					if err := readRuns(os.Getpid(), addr, &remote, dst, &local, total); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
