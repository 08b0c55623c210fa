package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-alltoallv0", "coll/alltoallv0.c", 10, collAlltoallv0)
	register("coll-red4", "coll/red4.c", 10, collRed4)
	register("coll-allred_derived", "coll/allred_derived.c", 4, collAllredDerived)
	register("coll-p_alltoallw", "coll/p_alltoallw.c", 10, collPAlltoallw)
}

// collAlltoallv0: over each communicator of 3 ranks or more, every rank sends length ints
// to its left and right neighbours only (counts 0 to the others, a halo exchange), length
// 1, 3, 7, ... up to 65535. Each received block holds its sender's values. gorma's
// Alltoallv places blocks at the prefix sums of the counts, so the block from the lower
// of the two neighbours comes first. Each exchange is run a second time in place (send
// and sendCounts nil): the blocks to send sit where the blocks received land.
func collAlltoallv0(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 3, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		left, right := (rank-1+size)%size, (rank+1)%size
		lo, hi := min(left, right), max(left, right)
		counts := make([]int, size)
		for length := 1; length < 66000; length = length*2 + 1 {
			counts[left], counts[right] = length, length
			mine := seq(2*length, func(i int) int32 { return int32(i%length + 100000*rank) })
			want := seq(2*length, func(i int) int32 {
				if i < length {
					return int32(i + 100000*lo)
				}
				return int32(i - length + 100000*hi)
			})
			recv := seq(2*length, func(i int) int32 { return int32(-i) })
			if err := collectives.Alltoallv(ctx, c, mine, counts, recv, counts); err != nil {
				return fmt.Errorf("%s, length %d: %w", name, length, err)
			}
			if err := same(fmt.Sprintf("%s, length %d", name, length), recv, want); err != nil {
				return err
			}
			if err := collectives.Alltoallv(ctx, c, nil, nil, mine, counts); err != nil {
				return fmt.Errorf("%s, length %d, in place: %w", name, length, err)
			}
			if err := same(fmt.Sprintf("%s, length %d, in place", name, length), mine, want); err != nil {
				return err
			}
		}
		return nil
	})
}

// collRed4: over each communicator, to each root in turn, a Reduce of one size x size int
// matrix per rank (a contiguous datatype of size*size int32s) with a non-commutative user
// operator, the matrix product, then the same in place at root. Rank r's matrix swaps
// rows r and r+1 of the identity (a permutation P_r). The product P_0 P_1 ... P_{size-1}
// has rows 1, size, 2, 3, ..., size-1 of the identity, whichever the root, which tells
// rank order from an order starting at root. MPI's operator computes inoutvec = invec *
// inoutvec (invec from lower ranks); gorma's TypeOp sets inout = inout ∘ in (inout from
// lower ranks), so the port multiplies inout by in.
func collRed4(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		mattype, err := datatype.Contiguous[int32](size * size)
		if err != nil {
			return err
		}
		op := collectives.NewTypeOp("matmul", func(inout, in []int32, count int) {
			col := make([]int32, size)
			for m := range count {
				a, b := inout[m*size*size:(m+1)*size*size], in[m*size*size:(m+1)*size*size]
				prod := make([]int32, size*size)
				for i := range size {
					clear(col)
					for k := range size {
						for j := range size {
							col[j] += a[i*size+k] * b[k*size+j]
						}
					}
					copy(prod[i*size:], col)
				}
				copy(a, prod)
			}
		}, false)
		initMat := func() []int32 {
			mat := make([]int32, size*size)
			for i := range size {
				switch {
				case i == rank:
					mat[(i+1)%size+i*size] = 1
				case i == (rank+1)%size:
					mat[(i+size-1)%size+i*size] = 1
				default:
					mat[i+i*size] = 1
				}
			}
			return mat
		}
		// Rows 1, size, 2, 3, ..., size-1 of the identity (1-based): row 0 has its 1 in
		// column 0, row 1 in column size-1, row i >= 2 in column i-1.
		want := make([]int32, size*size)
		want[0] = 1
		want[size+size-1] = 1
		for i := 2; i < size; i++ {
			want[i*size+i-1] = 1
		}
		for root := 0; root < size; root++ {
			out := make([]int32, size*size)
			if err := collectives.ReduceType(ctx, c, initMat(), out, 1, mattype, op, root); err != nil {
				return fmt.Errorf("%s, root %d: %w", name, root, err)
			}
			if rank == root {
				if err := same(fmt.Sprintf("%s, root %d", name, root), out, want); err != nil {
					return err
				}
			}
			send, recv := initMat(), []int32(nil)
			if rank == root {
				send, recv = nil, initMat()
			}
			if err := collectives.ReduceType(ctx, c, send, recv, 1, mattype, op, root); err != nil {
				return fmt.Errorf("%s, root %d, in place: %w", name, root, err)
			}
			if rank == root {
				if err := same(fmt.Sprintf("%s, root %d, in place", name, root), recv, want); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// collAllredDerived: over each communicator, an Allreduce of 10 copies of a vector of n
// int32s (stride 1, n = 1, 2, 4, ... 8192) with a commutative user operator that adds the
// vector's elements, then the same in place. Every element is the sum over the ranks of
// rank + i + j (copy i, element j).
func collAllredDerived(ctx context.Context, w *runtime.World) error {
	const count, stride = 10, 1
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		for n := 1; n < 10000; n *= 2 {
			vec, err := datatype.Vector[int32](n, 1, stride)
			if err != nil {
				return err
			}
			op := collectives.NewTypeOp("vecsum", func(inout, in []int32, cnt int) {
				k := 0
				for range cnt {
					for range n {
						inout[k] += in[k]
						k += stride
					}
				}
			}, true)
			initBuf := func() []int32 {
				buf := make([]int32, n*stride*count)
				k := 0
				for i := range count {
					for j := range n {
						buf[k] = int32(rank + i + j)
						k += stride
					}
				}
				return buf
			}
			want := make([]int32, n*stride*count)
			k := 0
			for i := range count {
				for j := range n {
					want[k] = int32(size*(size-1)/2 + (i+j)*size)
					k += stride
				}
			}
			out := make([]int32, n*stride*count)
			if err := collectives.AllreduceType(ctx, c, initBuf(), out, count, vec, op); err != nil {
				return fmt.Errorf("%s, n %d: %w", name, n, err)
			}
			if err := same(fmt.Sprintf("%s, n %d", name, n), out, want); err != nil {
				return err
			}
			out = initBuf()
			if err := collectives.AllreduceType(ctx, c, nil, out, count, vec, op); err != nil {
				return fmt.Errorf("%s, n %d, in place: %w", name, n, err)
			}
			if err := same(fmt.Sprintf("%s, n %d, in place", name, n), out, want); err != nil {
				return err
			}
		}
		return nil
	})
}

// collPAlltoallw: the transpose of a 20 x 30 float32 matrix distributed by blocks of
// rows (the last rank takes the remainder) into the same distribution of its 30 x 20
// transpose, through a persistent Alltoallw (AlltoallwInit) started and waited for 10
// times. MPICH describes each block with a derived datatype (a transposed submatrix to
// send, a submatrix to receive). gorma's Alltoallw moves contiguous blocks, so each
// rank packs its send blocks with the transposing datatype before the first Start and
// unpacks its received blocks with the submatrix datatype after the last Wait.
func collPAlltoallw(ctx context.Context, w *runtime.World) error {
	const gM, gN = 20, 30
	rank, size := w.Rank(), w.Size()
	lm, ln := gM/size, gN/size
	m := [2]int{lm, gM - (size-1)*lm} // rows of A per rank: [0] all but the last, [1] the last
	n := [2]int{ln, gN - (size-1)*ln} // rows of B per rank
	last := func(r int) int {
		if r == size-1 {
			return 1
		}
		return 0
	}
	mine := last(rank)
	localA := make([]float32, gN*m[mine])
	for i := range m[mine] {
		for j := range gN {
			localA[i*gN+j] = float32(i*gN + j + rank*gN*lm)
		}
	}
	localB := make([]float32, gM*n[mine])
	// transposeType(N, mm, nn): an mm x nn submatrix of rows of length N, read by columns.
	transposeType := func(mm, nn int) (datatype.Type, error) {
		sub, err := datatype.Vector[float32](mm, 1, gN)
		if err != nil {
			return datatype.Type{}, err
		}
		sub1, err := sub.Resized(0, 4)
		if err != nil {
			return datatype.Type{}, err
		}
		return sub1.Contiguous(nn)
	}
	// submatrixType(M, mm, nn): nn rows of mm floats in rows of length M.
	submatrixType := func(mm, nn int) (datatype.Type, error) { return datatype.Vector[float32](nn, mm, gM) }
	send := make([]byte, 4*len(localA))
	recv := make([]byte, 4*len(localB))
	sb := collectives.ByteBlocks{Counts: make([]int, size), Displs: make([]int, size)}
	rb := collectives.ByteBlocks{Counts: make([]int, size), Displs: make([]int, size)}
	soff, roff := 0, 0
	for j := range size {
		// Block j of send: columns j*ln ... of my rows, transposed (m[mine] x n[last(j)]).
		xt, err := transposeType(m[mine], n[last(j)])
		if err != nil {
			return err
		}
		k, err := datatype.Pack(send[soff:], localA[j*ln:], 1, xt)
		if err != nil {
			return fmt.Errorf("packing block %d: %w", j, err)
		}
		sb.Counts[j], sb.Displs[j] = k, soff
		soff += k
		rb.Counts[j], rb.Displs[j] = 4*m[last(j)]*n[mine], roff
		roff += rb.Counts[j]
	}
	req := collectives.AlltoallwInit(w, send, sb, recv, rb)
	for range 10 {
		if err := req.Start(ctx); err != nil {
			return err
		}
		if err := req.Wait(ctx); err != nil {
			return err
		}
	}
	if err := req.Free(); err != nil {
		return err
	}
	for j := range size {
		st, err := submatrixType(m[last(j)], n[mine])
		if err != nil {
			return err
		}
		if _, err := datatype.Unpack(localB[j*lm:], recv[rb.Displs[j]:rb.Displs[j]+rb.Counts[j]], 1, st); err != nil {
			return fmt.Errorf("unpacking block %d: %w", j, err)
		}
	}
	want := make([]float32, gM*n[mine])
	for i := range n[mine] {
		for j := range gM {
			want[i*gM+j] = float32(i + gN*j + rank*ln)
		}
	}
	return same("transpose", localB, want)
}
