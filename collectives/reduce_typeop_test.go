package collectives

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

// affineElem is the struct {float64; int32} element of the user-operator tests: the
// affine map x -> A*x + B, with B's padding left out of the layout. Composing affine maps
// is associative, not commutative.
type affineElem struct {
	A   float64
	B   int32
	Pad int32 // not in the layout: a reduction must leave it as it is
}

// composeAffine sets each copy of inout to inout ∘ in (apply in, then inout): A = a1*a2,
// B = a1*b2 + b1 (small integers, exact in float64).
func composeAffine(inout, in []affineElem, count int) {
	for i := range count {
		inout[i].B = int32(inout[i].A)*in[i].B + inout[i].B
		inout[i].A *= in[i].A
	}
}

// affineInput is rank r's copy i.
func affineInput(r, i int) affineElem {
	return affineElem{A: float64(r%3 + 1 + i%2), B: int32(r - i), Pad: int32(-1000 - r)}
}

// affineWant is the rank-order composition of every rank's copy i.
func affineWant(p, i int) affineElem {
	want := affineInput(0, i)
	for r := 1; r < p; r++ {
		x := []affineElem{want}
		composeAffine(x, []affineElem{affineInput(r, i)}, 1)
		want = x[0]
	}
	return want
}

// TestReduceTypeOp reduces a non-commutative user operator over a struct layout (rank
// order kept, padding untouched) to every root, blocking and in place, then Allreduces
// it, nonblocking and persistent too; and Allreduces a commutative sum over a strided vector layout, in place too.
func TestReduceTypeOp(t *testing.T) {
	forTypeJobs(t, func(e rankEnv) error {
		const count = 5
		st, err := datatype.FromStruct[affineElem]("A", "B")
		if err != nil {
			return err
		}
		op := NewTypeOp("affine", composeAffine, false)
		input := func() []affineElem {
			in := make([]affineElem, count)
			for i := range in {
				in[i] = affineInput(e.r, i)
			}
			return in
		}
		check := func(what string, got []affineElem, pad int32) error {
			for i, g := range got {
				w := affineWant(e.p, i)
				if g.A != w.A || g.B != w.B || g.Pad != pad {
					return fmt.Errorf("%s: copy %d = %+v, want {A:%v B:%v Pad:%v}", what, i, g, w.A, w.B, pad)
				}
			}
			return nil
		}
		for root := range e.p {
			recv := slices.Repeat([]affineElem{{Pad: 7}}, count)
			if err := ReduceType(e.ctx, e.w, input(), recv, count, st, op, root); err != nil {
				return fmt.Errorf("root %d: %w", root, err)
			}
			if e.r == root {
				if err := check(fmt.Sprintf("reduce to %d", root), recv, 7); err != nil {
					return err
				}
			}
			var send []affineElem
			buf := input()
			if e.r != root {
				send, buf = buf, nil
			}
			if err := ReduceType(e.ctx, e.w, send, buf, count, st, op, root); err != nil {
				return fmt.Errorf("root %d in place: %w", root, err)
			}
			if e.r == root {
				if err := check(fmt.Sprintf("reduce to %d in place", root), buf, int32(-1000-e.r)); err != nil {
					return err
				}
			}
		}
		recv := make([]affineElem, count)
		if err := AllreduceType(e.ctx, e.w, input(), recv, count, st, op); err != nil {
			return err
		}
		if err := check("allreduce", recv, 0); err != nil {
			return err
		}
		buf := input()
		if err := AllreduceType(e.ctx, e.w, nil, buf, count, st, op); err != nil {
			return err
		}
		if err := check("allreduce in place", buf, int32(-1000-e.r)); err != nil {
			return err
		}
		// Nonblocking and persistent forms: a reduce to the last rank and an Allreduce in
		// flight together, then persistent ones started twice in opposite orders at odd
		// and even ranks.
		rootOut := make([]affineElem, count)
		nb := []*Request{
			IreduceType(e.ctx, e.w, input(), rootOut, count, st, op, e.p-1),
			IallreduceType(e.ctx, e.w, input(), recv, count, st, op),
		}
		if err := WaitAll(e.ctx, nb); err != nil {
			return err
		}
		if err := check("iallreduce", recv, 0); err != nil {
			return err
		}
		if e.r == e.p-1 {
			if err := check("ireduce", rootOut, 0); err != nil {
				return err
			}
		}
		pbuf, psend := make([]affineElem, count), input()
		ps := []*Request{
			AllreduceTypeInit(e.w, psend, pbuf, count, st, op),
			ReduceTypeInit(e.w, psend, rootOut, count, st, op, 0),
		}
		for round := range 2 {
			order := ps
			if e.r%2 == 1 {
				order = []*Request{ps[1], ps[0]}
			}
			clear(pbuf)
			if err := Startall(e.ctx, order); err != nil {
				return err
			}
			if err := WaitAll(e.ctx, ps); err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			if err := check(fmt.Sprintf("persistent allreduce, round %d", round), pbuf, 0); err != nil {
				return err
			}
			if e.r == 0 {
				if err := check(fmt.Sprintf("persistent reduce, round %d", round), rootOut, 0); err != nil {
					return err
				}
			}
		}
		for _, r := range ps {
			if err := r.Free(); err != nil {
				return err
			}
		}

		// A commutative sum over a vector of 3 int32s with stride 2, 4 copies (extent 5
		// int32s each, consecutive copies 5 apart): the holes keep their values.
		vec, sum, err := vecSum()
		if err != nil {
			return err
		}
		vin := make([]int32, 20)
		for k := range vin {
			vin[k] = int32(e.r*100 + k)
		}
		vout := slices.Repeat([]int32{-1}, 20)
		if err := AllreduceType(e.ctx, e.w, vin, vout, 4, vec, sum); err != nil {
			return err
		}
		for k, v := range vout {
			want := int32(-1)
			if k%5 != 1 && k%5 != 3 {
				want = int32(100*e.p*(e.p-1)/2 + e.p*k)
			}
			if v != want {
				return fmt.Errorf("vector sum [%d] = %d, want %d", k, v, want)
			}
		}
		return nil
	})
}

// TestReduceTypeOpMisuse: a zero TypeOp, a nil send off root, a layout outside its buffer
// and overlapping buffers fail with runtime.ErrInvalid at the rank that passed them.
func TestReduceTypeOpMisuse(t *testing.T) {
	forTypeJobs(t, func(e rankEnv) error {
		i32 := datatype.Of[int32]()
		add := NewTypeOp("add", func(inout, in []int32, n int) {
			for i := range n {
				inout[i] += in[i]
			}
		}, true)
		buf := make([]int32, 4)
		for what, err := range map[string]error{
			"zero op":        AllreduceType(e.ctx, e.w, buf, make([]int32, 4), 4, i32, TypeOp[int32]{}),
			"layout outside": AllreduceType(e.ctx, e.w, buf, make([]int32, 4), 5, i32, add),
			"overlap":        AllreduceType(e.ctx, e.w, buf, buf[1:], 3, i32, add),
		} {
			if !errors.Is(err, runtime.ErrInvalid) {
				return fmt.Errorf("%s: %v, want ErrInvalid", what, err)
			}
		}
		// Each rank names the next as root: every rank is off root, and fails alone.
		if err := ReduceType(e.ctx, e.w, nil, buf, 4, i32, add, (e.r+1)%e.p); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("nil send off root: %v, want ErrInvalid", err)
		}
		// The World works on afterwards.
		if err := AllreduceType(e.ctx, e.w, nil, buf, 4, i32, add); err != nil {
			return err
		}
		return nil
	})
}

// vecSum returns a vector of 3 int32s with stride 2 (extent 5) and the commutative sum
// over its copies.
func vecSum() (datatype.Type, TypeOp[int32], error) {
	vec, err := datatype.Vector[int32](3, 1, 2)
	sum := NewTypeOp("vecsum", func(inout, in []int32, count int) {
		for c := range count {
			for j := range 3 {
				inout[c*5+2*j] += in[c*5+2*j]
			}
		}
	}, true)
	return vec, sum, err
}
