package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/gorma-hpc/gorma/collectives"
	gorma "github.com/gorma-hpc/gorma/runtime"
)

// algWorld is a Dup of the World whose collectives use one Allreduce algorithm.
type algWorld struct {
	name string
	w    *gorma.World
}

// setupAlgs makes one World per Allreduce algorithm; those the job's layout does not
// allow (their first Allreduce fails with ErrConfig at every rank) are left out.
func (e *env) setupAlgs() error {
	for _, alg := range []string{"auto", "shm", "hier", "recdbl", "rabenseifner", "ring", "direct", "lanes"} {
		os.Setenv(collectives.EnvAllreduce, alg)
		d, err := e.w.Dup()
		if err != nil {
			return fmt.Errorf("dup: %w", err)
		}
		x := []int64{int64(e.rank)}
		err = collectives.Allreduce(e.ctx, d, nil, x, collectives.Sum[int64]())
		switch {
		case errors.Is(err, gorma.ErrConfig):
			fmt.Printf("rank %d: allreduce %s not available: %v\n", e.rank, alg, err)
			continue
		case err != nil:
			return fmt.Errorf("first allreduce %s: %w", alg, err)
		case x[0] != int64(e.size*(e.size-1)/2):
			return e.errorf("first allreduce %s: %d", alg, x[0])
		}
		e.algs = append(e.algs, algWorld{alg, d})
	}
	os.Unsetenv(collectives.EnvAllreduce)
	return nil
}

// allreduce runs one Allreduce on a drawn algorithm's World with a drawn operator and
// length, in place or not, and checks the result.
func (e *env) allreduce() error {
	a := e.algs[e.rng.IntN(len(e.algs))]
	n := e.allreduceLen()
	inPlace := e.rng.IntN(3) == 0
	opKind := e.rng.IntN(4)
	if opKind == 3 {
		return e.affineAllreduce(a, n/2+1, inPlace)
	}
	ops := []collectives.Op[int64]{collectives.Sum[int64](), collectives.Max[int64](), collectives.Bxor[int64]()}
	send := make([]int64, n)
	for i := range send {
		send[i] = e.val(e.rank, opKind, 0, i)
	}
	want := make([]int64, n)
	for r := range e.size {
		for i := range want {
			v := e.val(r, opKind, 0, i)
			switch {
			case r == 0:
				want[i] = v
			case opKind == 0:
				want[i] += v
			case opKind == 1:
				want[i] = max(want[i], v)
			default:
				want[i] ^= v
			}
		}
	}
	recv := make([]int64, n)
	var err error
	if inPlace {
		copy(recv, send)
		err = collectives.Allreduce(e.ctx, a.w, nil, recv, ops[opKind])
	} else {
		err = collectives.Allreduce(e.ctx, a.w, send, recv, ops[opKind])
	}
	if err != nil {
		return fmt.Errorf("allreduce %s op %d len %d: %w", a.name, opKind, n, err)
	}
	return check(e, fmt.Sprintf("allreduce %s op %d len %d", a.name, opKind, n), recv, want)
}

// allreduceLen draws a vector length: tiny, short, medium or long.
func (e *env) allreduceLen() int {
	switch c := e.rng.IntN(10); {
	case c < 3:
		return 1 + e.rng.IntN(6)
	case c < 6:
		return 7 + e.rng.IntN(1024)
	case c < 9:
		return 1024 + e.rng.IntN(64<<10)
	default:
		return 64<<10 + e.rng.IntN(128<<10)
	}
}

// affine is the composition of affine maps x -> re*x + im, packed in a complex128:
// associative, not commutative, exact on small integers.
var affine = collectives.NewOp("affine", func(inout, in []complex128) {
	for i, a := range inout {
		b := in[i]
		inout[i] = complex(real(a)*real(b), real(b)*imag(a)+imag(b))
	}
}, false)

func (e *env) affineElem(r, i int) complex128 {
	v := uint64(e.val(r, 3, 0, i))
	return complex(float64(1+v%2), float64((v>>8)%16))
}

func (e *env) affineAllreduce(a algWorld, n int, inPlace bool) error {
	send := make([]complex128, n)
	for i := range send {
		send[i] = e.affineElem(e.rank, i)
	}
	want := make([]complex128, n)
	for i := range want {
		want[i] = e.affineElem(0, i)
		for r := 1; r < e.size; r++ {
			b := e.affineElem(r, i)
			want[i] = complex(real(want[i])*real(b), real(b)*imag(want[i])+imag(b))
		}
	}
	recv := make([]complex128, n)
	var err error
	if inPlace {
		copy(recv, send)
		err = collectives.Allreduce(e.ctx, a.w, nil, recv, affine)
	} else {
		err = collectives.Allreduce(e.ctx, a.w, send, recv, affine)
	}
	if err != nil {
		return fmt.Errorf("allreduce %s affine len %d: %w", a.name, n, err)
	}
	return check(e, fmt.Sprintf("allreduce %s affine len %d", a.name, n), recv, want)
}

// collective runs one of Bcast, Allgather, Alltoall, Reduce, ReduceScatter and the two
// Barriers on a drawn World.
func (e *env) collective() error {
	a := e.algs[e.rng.IntN(len(e.algs))]
	w := a.w
	switch k := e.rng.IntN(6); k {
	case 0:
		n, root := e.allreduceLen(), e.rng.IntN(e.size)
		buf := make([]int64, n)
		want := make([]int64, n)
		for i := range want {
			want[i] = e.val(root, 0, 9, i)
		}
		if e.rank == root {
			copy(buf, want)
		}
		if err := collectives.Bcast(e.ctx, w, buf, root); err != nil {
			return fmt.Errorf("bcast len %d root %d: %w", n, root, err)
		}
		return check(e, fmt.Sprintf("bcast len %d root %d", n, root), buf, want)
	case 1:
		n := 1 + e.allreduceLen()/e.size
		send := make([]int64, n)
		want := make([]int64, n*e.size)
		for r := range e.size {
			for i := range n {
				want[r*n+i] = e.val(r, 1, 9, i)
			}
		}
		copy(send, want[e.rank*n:])
		recv := make([]int64, n*e.size)
		if err := collectives.Allgather(e.ctx, w, send, recv); err != nil {
			return fmt.Errorf("allgather len %d: %w", n, err)
		}
		return check(e, fmt.Sprintf("allgather len %d", n), recv, want)
	case 2:
		n := 1 + e.allreduceLen()/(e.size*e.size)
		send := make([]int64, n*e.size)
		want := make([]int64, n*e.size)
		for d := range e.size {
			for i := range n {
				send[d*n+i] = e.val(e.rank, d, 2, i)
				want[d*n+i] = e.val(d, e.rank, 2, i)
			}
		}
		recv := make([]int64, n*e.size)
		if err := collectives.Alltoall(e.ctx, w, send, recv); err != nil {
			return fmt.Errorf("alltoall len %d: %w", n, err)
		}
		return check(e, fmt.Sprintf("alltoall block %d", n), recv, want)
	case 3:
		n, root := e.allreduceLen(), e.rng.IntN(e.size)
		send := make([]int64, n)
		want := make([]int64, n)
		for r := range e.size {
			for i := range n {
				v := e.val(r, 3, 9, i)
				want[i] += v
				if r == e.rank {
					send[i] = v
				}
			}
		}
		recv := make([]int64, n)
		if err := collectives.Reduce(e.ctx, w, send, recv, collectives.Sum[int64](), root); err != nil {
			return fmt.Errorf("reduce len %d root %d: %w", n, root, err)
		}
		if e.rank != root {
			return nil
		}
		return check(e, fmt.Sprintf("reduce len %d root %d", n, root), recv, want)
	case 4:
		n := 1 + e.allreduceLen()/e.size
		send := make([]int64, n*e.size)
		want := make([]int64, n)
		for r := range e.size {
			for i := range n * e.size {
				v := e.val(r, 4, 9, i)
				if r == e.rank {
					send[i] = v
				}
				if i/n == e.rank {
					want[i%n] += v
				}
			}
		}
		recv := make([]int64, n)
		if err := collectives.ReduceScatter(e.ctx, w, send, recv, collectives.Sum[int64]()); err != nil {
			return fmt.Errorf("reducescatter block %d: %w", n, err)
		}
		return check(e, fmt.Sprintf("reducescatter block %d", n), recv, want)
	default:
		if err := collectives.Barrier(e.ctx, w); err != nil {
			return fmt.Errorf("collectives barrier: %w", err)
		}
		if err := gorma.Barrier(e.ctx, w); err != nil {
			return fmt.Errorf("runtime barrier: %w", err)
		}
		return nil
	}
}
