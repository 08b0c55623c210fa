package datatype

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// ref is the reference model of a type: its typemap expanded to one byte offset per byte
// of data, in packing order, with its bounds.
type ref struct {
	offs   []int
	lb, ub int
}

func refPrim(n int) ref {
	r := ref{ub: n}
	for i := range n {
		r.offs = append(r.offs, i)
	}
	return r
}

// refAdd places n copies of old at disp into r, as MPI's typemap rules say: each copy
// contributes its entries and its bounds.
type refBuilder struct {
	r      ref
	bounds bool
}

func (b *refBuilder) add(disp, n int, old ref) {
	ext := old.ub - old.lb
	for k := range n {
		base := disp + k*ext
		for _, o := range old.offs {
			b.r.offs = append(b.r.offs, base+o)
		}
		if !b.bounds || base+old.lb < b.r.lb {
			b.r.lb = base + old.lb
		}
		if !b.bounds || base+old.ub > b.r.ub {
			b.r.ub = base + old.ub
		}
		b.bounds = true
	}
}

// fuzzReader hands out small numbers from the fuzzer's bytes.
type fuzzReader struct{ b []byte }

func (f *fuzzReader) n(lo, hi int) int {
	if len(f.b) == 0 {
		return lo
	}
	v := int(f.b[0])
	f.b = f.b[1:]
	return lo + v%(hi-lo+1)
}

func (f *fuzzReader) ints(k, lo, hi int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = f.n(lo, hi)
	}
	return s
}

type pair struct {
	t Type
	r ref
}

// step applies one constructor chosen by f to the stack and returns the new pair, or
// ok false when the step built nothing.
func step(f *fuzzReader, stack []pair) (pair, string, bool) {
	top := stack[len(stack)-1]
	t, r := top.t, top.r
	ext := r.ub - r.lb
	var out Type
	var err error
	var b refBuilder
	var desc string
	switch op := f.n(0, 10); op {
	case 0:
		n := []int{1, 2, 4, 8}[f.n(0, 3)]
		switch n {
		case 1:
			out = Of[uint8]()
		case 2:
			out = Of[int16]()
		case 4:
			out = Of[float32]()
		case 8:
			out = Of[complex64]()
		}
		b.r, b.bounds = refPrim(n), true
		desc = fmt.Sprintf("prim(%d)", n)
	case 1:
		c := f.n(0, 4)
		out, err = t.Contiguous(c)
		b.add(0, c, r)
		desc = fmt.Sprintf("contiguous(%d)", c)
	case 2, 3:
		c, bl, s := f.n(0, 4), f.n(0, 3), f.n(-4, 4)
		if op == 2 {
			out, err = t.Vector(c, bl, s)
			s *= ext
		} else {
			s = f.n(-16, 16)
			out, err = t.Hvector(c, bl, s)
		}
		for i := range c {
			b.add(i*s, bl, r)
		}
		desc = fmt.Sprintf("vector/h(%d,%d,%d bytes)", c, bl, s)
	case 4, 5:
		k := f.n(0, 3)
		bls, ds := f.ints(k, 0, 3), f.ints(k, -3, 5)
		if op == 4 {
			out, err = t.Indexed(bls, ds)
		} else {
			out, err = t.Hindexed(bls, ds)
		}
		for i := range k {
			d := ds[i]
			if op == 4 {
				d *= ext
			}
			b.add(d, bls[i], r)
		}
		desc = fmt.Sprintf("indexed/h(%v,%v)", bls, ds)
	case 6, 7:
		k, bl := f.n(0, 3), f.n(0, 3)
		ds := f.ints(k, -3, 5)
		if op == 6 {
			out, err = t.IndexedBlock(bl, ds)
		} else {
			out, err = t.HindexedBlock(bl, ds)
		}
		for _, d := range ds {
			if op == 6 {
				d *= ext
			}
			b.add(d, bl, r)
		}
		desc = fmt.Sprintf("indexedblock/h(%d,%v)", bl, ds)
	case 8:
		nd := f.n(1, 3)
		sizes := f.ints(nd, 1, 4)
		sub, st := make([]int, nd), make([]int, nd)
		for i := range nd {
			sub[i] = f.n(0, sizes[i])
			st[i] = f.n(0, sizes[i]-sub[i])
		}
		order := Order(f.n(0, 1))
		out, err = t.Subarray(sizes, sub, st, order)
		// The reference walks every element of the array in storage order and keeps
		// those inside the sub-block.
		total := 1
		for _, s := range sizes {
			total *= s
		}
		idx := make([]int, nd)
		for e := range total {
			rem := e
			for k := range nd {
				d := nd - 1 - k // C order: the last dimension fastest
				if order == OrderFortran {
					d = k
				}
				idx[d] = rem % sizes[d]
				rem /= sizes[d]
			}
			in := true
			for d := range nd {
				in = in && idx[d] >= st[d] && idx[d] < st[d]+sub[d]
			}
			if in {
				b.add(e*ext, 1, r)
			}
		}
		b.r.lb, b.r.ub, b.bounds = 0, total*ext, true
		desc = fmt.Sprintf("subarray(%v,%v,%v,%d)", sizes, sub, st, order)
	case 9:
		other := stack[f.n(0, len(stack)-1)]
		fs := []Field{{f.n(-8, 24), f.n(0, 2), t}, {f.n(-8, 24), f.n(0, 2), other.t}}
		out, err = Struct(fs)
		b.add(fs[0].Off, fs[0].Count, r)
		b.add(fs[1].Off, fs[1].Count, other.r)
		desc = fmt.Sprintf("struct(%d×@%d, %d×@%d)", fs[0].Count, fs[0].Off, fs[1].Count, fs[1].Off)
	case 10:
		lb, e := f.n(-8, 8), f.n(-16, 32)
		out, err = t.Resized(lb, e)
		b.r = ref{offs: r.offs, lb: lb, ub: lb + e}
		b.bounds = true
		desc = fmt.Sprintf("resized(%d,%d)", lb, e)
	}
	if err != nil {
		panic(fmt.Sprintf("%s: %v", desc, err))
	}
	if !b.bounds {
		b.r.lb, b.r.ub = 0, 0
	}
	return pair{out, b.r}, desc, true
}

// checkPair compares t with its reference: size, bounds, normalized blocks, and Pack and
// Unpack of a few counts over random bytes.
func checkPair(t *testing.T, rng *rand.Rand, p pair, desc string) {
	t.Helper()
	ty, r := p.t, p.r
	if ty.Size() != len(r.offs) || ty.LB() != r.lb || ty.UB() != r.ub {
		t.Fatalf("%s: size %d lb %d ub %d, want %d %d %d", desc, ty.Size(), ty.LB(), ty.UB(), len(r.offs), r.lb, r.ub)
	}
	var exp []int
	for i, b := range ty.blocks {
		if b.Len <= 0 {
			t.Fatalf("%s: block %d is empty: %v", desc, i, ty.blocks)
		}
		if i > 0 && ty.blocks[i-1].Off+ty.blocks[i-1].Len == b.Off {
			t.Fatalf("%s: blocks %d and %d are adjacent, not merged: %v", desc, i-1, i, ty.blocks)
		}
		for j := range b.Len {
			exp = append(exp, b.Off+j)
		}
	}
	if fmt.Sprint(exp) != fmt.Sprint(r.offs) {
		t.Fatalf("%s: blocks %v expand to %v, reference typemap %v", desc, ty.blocks, exp, r.offs)
	}
	if len(r.offs) > 0 {
		lo, hi := r.offs[0], r.offs[0]+1
		for _, o := range r.offs {
			lo, hi = min(lo, o), max(hi, o+1)
		}
		if ty.TrueLB() != lo || ty.TrueExtent() != hi-lo {
			t.Fatalf("%s: true lb %d extent %d, want %d %d", desc, ty.TrueLB(), ty.TrueExtent(), lo, hi-lo)
		}
	}
	if ty.TrueLB() < 0 {
		// A buffer starts at offset 0: the layout must be shifted to be packed.
		if _, err := Pack(make([]byte, ty.Size()), make([]byte, 1<<12), 1, ty); !errors.Is(err, ErrRange) {
			t.Fatalf("%s: pack of a layout before the buffer's start: %v, want ErrRange", desc, err)
		}
		sh := -ty.TrueLB()
		var err error
		if ty, err = Struct([]Field{{sh, 1, ty}}); err != nil {
			t.Fatal(err)
		}
		offs := make([]int, len(r.offs))
		for i, o := range r.offs {
			offs[i] = o + sh
		}
		r.offs = offs
		r.lb, r.ub = r.lb+sh, r.ub+sh
	}
	ext := r.ub - r.lb
	base := ty
	for count := range 4 {
		ty, sh := base, 0
		if ext < 0 && count > 1 {
			// The later copies lie below the first: shift them all into the buffer.
			sh = -(count - 1) * ext
			var err error
			if ty, err = Struct([]Field{{sh, 1, base}}); err != nil {
				t.Fatal(err)
			}
		}
		_, hi, err := ty.Span(count)
		if err != nil {
			t.Fatal(err)
		}
		src := make([]byte, hi)
		for i := range src {
			src[i] = byte(rng.UintN(256))
		}
		want := make([]byte, 0, count*len(r.offs))
		for k := range count {
			for _, o := range r.offs {
				want = append(want, src[sh+k*ext+o])
			}
		}
		got := make([]byte, len(want)+1)
		n, err := Pack(got, src, count, ty)
		if err != nil || n != len(want) || !bytes.Equal(got[:n], want) {
			t.Fatalf("%s: pack %d copies: %d bytes %v, err %v; reference %v", desc, count, n, got[:n], err, want)
		}
		dst := make([]byte, hi)
		wantDst := make([]byte, hi)
		for i, k := 0, 0; k < count; k++ {
			for _, o := range r.offs {
				wantDst[sh+k*ext+o] = want[i]
				i++
			}
		}
		if n, err := Unpack(dst, want, count, ty); err != nil || n != len(want) || !bytes.Equal(dst, wantDst) {
			t.Fatalf("%s: unpack %d copies: %d bytes %v, err %v; reference %v", desc, count, n, dst, err, wantDst)
		}
		half := len(want) / 2
		clear(dst)
		clear(wantDst)
		for i, k := 0, 0; k < count; k++ {
			for _, o := range r.offs {
				if i < half {
					wantDst[sh+k*ext+o] = want[i]
				}
				i++
			}
		}
		if n, err := UnpackPrefix(dst, want[:half], count, ty); err != nil || n != half || !bytes.Equal(dst, wantDst) {
			t.Fatalf("%s: unpack the first %d bytes of %d copies: %d bytes %v, err %v; reference %v", desc, half, count, n, dst, err, wantDst)
		}
		// The same through a Laid over each buffer.
		clear(got)
		if l, err := ty.Over("fuzz", src, count); err != nil || l.Size() != len(want) {
			t.Fatalf("%s: over %d copies: %v, size %d, want %d", desc, count, err, l.Size(), len(want))
		} else if n, err := l.Pack(got); err != nil || n != len(want) || !bytes.Equal(got[:n], want) {
			t.Fatalf("%s: laid pack %d copies: %d bytes %v, err %v; reference %v", desc, count, n, got[:n], err, want)
		} else {
			// Its runs expand to the reference typemap of the copies, in order.
			runs, ok := l.Runs(nil, 1<<20)
			var offs, wantOffs []int
			for _, r := range runs {
				if r.Len <= 0 || r.Count <= 0 || r.Count == 1 && r.Stride != 0 {
					t.Fatalf("%s: run %+v of %d copies", desc, r, count)
				}
				for i := range r.Count {
					for j := range r.Len {
						offs = append(offs, r.Off+i*r.Stride+j)
					}
				}
			}
			for k := range count {
				for _, o := range r.offs {
					wantOffs = append(wantOffs, sh+k*ext+o)
				}
			}
			if !ok || fmt.Sprint(offs) != fmt.Sprint(wantOffs) {
				t.Fatalf("%s: runs of %d copies %v (%v) expand to %v, reference %v", desc, count, runs, ok, offs, wantOffs)
			}
			if len(runs) > 1 {
				if short, ok := l.Runs(nil, len(runs)-1); ok || len(short) != len(runs)-1 {
					t.Fatalf("%s: %d runs of %d copies, at most %d: %d runs, ok %v", desc, len(runs), count, len(runs)-1, len(short), ok)
				}
			}
		}
		clear(dst)
		if l, err := ty.Over("fuzz", dst, count); err != nil {
			t.Fatalf("%s: over %d copies: %v", desc, count, err)
		} else if n, err := l.UnpackPrefix(want[:half]); err != nil || n != half || !bytes.Equal(dst, wantDst) {
			t.Fatalf("%s: laid unpack of the first %d bytes of %d copies: %d bytes %v, err %v; reference %v", desc, half, count, n, dst, err, wantDst)
		}
		if hi > 0 {
			if _, err := Pack(got, src[:hi-1], count, ty); !errors.Is(err, ErrRange) {
				t.Fatalf("%s: pack from a buffer one byte short: %v, want ErrRange", desc, err)
			}
			if _, err := Unpack(dst, want[:len(want)-1], count, ty); !errors.Is(err, ErrRange) {
				t.Fatalf("%s: unpack from packed data one byte short: %v, want ErrRange", desc, err)
			}
		}
	}
}

// FuzzConstructors builds types by random sequences of constructors, nesting them, and
// checks each against the byte-by-byte reference typemap: size, bounds, normalized
// blocks, and Pack/Unpack round trips.
func FuzzConstructors(f *testing.F) {
	f.Add([]byte{0, 3, 2, 4, 1, 5})
	f.Add([]byte{0, 1, 8, 2, 3, 2, 1, 0, 10, 3, 7})
	f.Add([]byte{0, 2, 9, 0, 3, 8, 2, 4, 3, 1, 2, 1, 0})
	f.Add([]byte{0, 0, 4, 3, 1, 2, 3, 0, 5, 7, 1, 10, 12, 4})
	f.Add([]byte{0, 3, 8, 3, 3, 4, 2, 1, 2, 0, 1, 1, 2, 1, 3, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := &fuzzReader{b: data}
		rng := rand.New(rand.NewPCG(uint64(len(data)), 7))
		stack := []pair{{Of[uint8](), refPrim(1)}}
		for steps := 0; len(fr.b) > 0 && steps < 8; steps++ {
			p, desc, _ := step(fr, stack)
			if lo, hi, _ := p.t.Span(4); len(p.r.offs) > 1<<12 || hi-lo > 1<<20 {
				return // checkPair's buffers span the layout: keep them small
			}
			checkPair(t, rng, p, desc)
			stack = append(stack, p)
		}
	})
}
