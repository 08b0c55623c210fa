package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-coll2", "coll/coll2.c", 5, collColl2)
	register("coll-coll4", "coll/coll4.c", 4, collColl4)
	register("coll-coll8", "coll/coll8.c", 4, collColl8)
	register("coll-coll9", "coll/coll9.c", 4, collColl9)
	register("coll-coll10", "coll/coll10.c", 4, collColl10)
	register("coll-coll13", "coll/coll13.c", 4, collColl13)
	register("coll-allredmany", "coll/allredmany.c", 4, collAllredmany)
	register("coll-allred2", "coll/allred2.c", 4, collAllred2)
	register("coll-allgather2", "coll/allgather2.c", 10, collAllgather2)
	register("coll-allgatherv2", "coll/allgatherv2.c", 10, collAllgatherv2)
	register("coll-alltoall1", "coll/alltoall1.c", 8, collAlltoall1)
	register("coll-bcasttest", "coll/bcasttest.c", 4, collBcasttest)
	register("coll-scantst", "coll/scantst.c", 4, collScantst)
	register("coll-exscan", "coll/exscan.c", 10, collExscan)
	register("coll-exscan2", "coll/exscan2.c", 5, collExscan2)
	register("coll-gather", "coll/gather.c", 4, collGather)
	register("coll-red_scat_block", "coll/red_scat_block.c", 4, collRedScatBlock)
	register("coll-red_scat_block2", "coll/red_scat_block2.c", 4, collRedScatBlock2)
}

// eachComm runs f on the communicators MPICH's MTestGetIntracommGeneral walks that
// gorma can make: the World, a Dup of it, the World with its ranks reversed, and its two
// halves; a communicator with fewer than minsize ranks is skipped. Every rank walks the
// same list.
func eachComm(ctx context.Context, w *runtime.World, minsize int, f func(c *runtime.World, name string) error) error {
	n, r := w.Size(), w.Rank()
	if err := f(w, "world"); err != nil {
		return err
	}
	d, err := w.Dup()
	if err != nil {
		return err
	}
	if err := first(f(d, "dup"), d.Free()); err != nil {
		return err
	}
	rev, err := w.Split(ctx, 0, n-r)
	if err != nil {
		return err
	}
	if err := first(f(rev, "reversed"), rev.Free()); err != nil {
		return err
	}
	half, err := w.Split(ctx, r*2/n, r)
	if err != nil {
		return err
	}
	if half.Size() >= minsize {
		err = f(half, fmt.Sprintf("half %d", r*2/n))
	}
	return first(err, half.Free())
}

// collColl2: every rank paints its block of rows of a 10x10 table; a Gather (in place at
// the root) to each rank in turn leaves every row of one colour everywhere.
func collColl2(ctx context.Context, w *runtime.World) error {
	const maxp = 10
	rank, size := w.Rank(), w.Size()
	if maxp%size != 0 {
		return fmt.Errorf("coll2 needs a rank count dividing %d, not %d", maxp, size)
	}
	block := maxp / size
	table := make([]int32, maxp*maxp)
	mine := table[rank*block*maxp : (rank+1)*block*maxp]
	for i := range mine {
		mine[i] = int32(rank + 10)
	}
	for root := 0; root < size; root++ {
		var err error
		if root == rank {
			err = collectives.Gather(ctx, w, nil, table, root)
		} else {
			err = collectives.Gather(ctx, w, mine, table, root)
		}
		if err != nil {
			return err
		}
	}
	for i := 0; i < maxp; i++ {
		row := table[i*maxp : (i+1)*maxp]
		if err := same(fmt.Sprintf("row %d", i), row, fill(maxp, row[0])); err != nil {
			return err
		}
	}
	return nil
}

// collColl4: rank 0 Scatters a table whose row i holds i+j; each rank gets its row.
func collColl4(ctx context.Context, w *runtime.World) error {
	const maxp = 10
	c, err := w.Dup()
	if err != nil {
		return err
	}
	var table []int32
	if c.Rank() == 0 {
		table = seq(c.Size()*maxp, func(k int) int32 { return int32(k/maxp + k%maxp) })
	}
	row := make([]int32, maxp)
	if err := collectives.Scatter(ctx, c, table, row, 0); err != nil {
		return err
	}
	return first(same("row", row, seq(maxp, func(i int) int32 { return int32(i + c.Rank()) })), c.Free())
}

// reduceBcast reduces one element of every rank with op to root and broadcasts the
// result from root.
func reduceBcast(ctx context.Context, w *runtime.World, v int32, op collectives.Op[int32], root int) (int32, error) {
	res := []int32{-100}
	err := first(collectives.Reduce(ctx, w, []int32{v}, res, op, root), collectives.Bcast(ctx, w, res, root))
	return res[0], err
}

// collColl8: Reduce of the ranks (sum, min, max) to 0, each broadcast back and checked.
func collColl8(ctx context.Context, w *runtime.World) error {
	n := int32(w.Size())
	for _, c := range []struct {
		op   collectives.Op[int32]
		want int32
	}{{collectives.Sum[int32](), n * (n - 1) / 2}, {collectives.Min[int32](), 0}, {collectives.Max[int32](), n - 1}} {
		got, err := reduceBcast(ctx, w, int32(w.Rank()), c.op, 0)
		if err != nil {
			return err
		}
		if got != c.want {
			return fmt.Errorf("reduce (%v): %d, want %d", c.op, got, c.want)
		}
	}
	return nil
}

// addem is coll9's and scantst's commutative user sum.
var addem = collectives.NewOp("addem", func(inout, in []int32) {
	for i := range inout {
		inout[i] += in[i]
	}
}, true)

// badAnswer marks a non-commutative operator applied out of rank order.
const badAnswer = 100000

// assoc is the non-commutative operator of coll10 and scantst: it keeps the lower
// rank's value and marks a pair that does not come in rank order (left below right).
var assoc = collectives.NewOp("assoc", func(inout, in []int32) {
	for i := range inout {
		if in[i] <= inout[i] {
			inout[i] = badAnswer
		}
	}
}, false)

// collColl9: Reduce with a commutative user-defined sum, to 0, broadcast back.
func collColl9(ctx context.Context, w *runtime.World) error {
	n := int32(w.Size())
	got, err := reduceBcast(ctx, w, int32(w.Rank()), addem, 0)
	if err == nil && got != n*(n-1)/2 {
		err = fmt.Errorf("reduce (user sum): %d, want %d", got, n*(n-1)/2)
	}
	return err
}

// collColl10: Reduce with a non-commutative user operator to the last rank: the
// operands must come in rank order.
func collColl10(ctx context.Context, w *runtime.World) error {
	got, err := reduceBcast(ctx, w, int32(w.Rank()), assoc, w.Size()-1)
	if err == nil && got == badAnswer {
		err = fmt.Errorf("reduce (non-commutative): operands combined out of rank order")
	}
	return err
}

// collColl13: Alltoall of 128 ints per pair, every element the sender's rank + 1.
func collColl13(ctx context.Context, w *runtime.World) error {
	const chunk = 128
	n := w.Size()
	rb := make([]int32, n*chunk)
	if err := collectives.Alltoall(ctx, w, fill(n*chunk, int32(w.Rank()+1)), rb); err != nil {
		return err
	}
	return same("received", rb, seq(n*chunk, func(i int) int32 { return int32(i/chunk + 1) }))
}

// collAllredmany: 10000 Allreduces of one double in a row.
func collAllredmany(ctx context.Context, w *runtime.World) error {
	out := make([]float64, 1)
	for i := 0; i < 10000; i++ {
		if err := collectives.Allreduce(ctx, w, []float64{10}, out, collectives.Sum[float64]()); err != nil {
			return err
		}
	}
	if want := 10 * float64(w.Size()); out[0] != want {
		return fmt.Errorf("allreduce: %v, want %v", out[0], want)
	}
	return nil
}

// collAllred2: Allreduce in place (sum) of 1, 8, 512, 4096 and 32768 ints over each
// communicator.
func collAllred2(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		for count := 1; count < 65000; count *= 8 {
			buf := seq(count, func(i int) int32 { return int32(rank + i) })
			if err := collectives.Allreduce(ctx, c, nil, buf, collectives.Sum[int32]()); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("%s count %d", name, count), buf, seq(count, func(i int) int32 { return int32(i*size + size*(size-1)/2) })); err != nil {
				return err
			}
		}
		return nil
	})
}

// collAllgather2: Allgather in place of 1 to 8192 doubles per rank over each
// communicator; element i of the result is i.
func collAllgather2(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		for count := 1; count < 9000; count *= 2 {
			out := make([]float64, size*count)
			for i := 0; i < count; i++ {
				out[rank*count+i] = float64(rank*count + i)
			}
			if err := collectives.Allgather(ctx, c, nil, out); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("%s count %d", name, count), out, seq(size*count, func(i int) float64 { return float64(i) })); err != nil {
				return err
			}
		}
		return nil
	})
}

// collAllgatherv2: allgather2 through Allgatherv with equal counts, in place.
func collAllgatherv2(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		for count := 1; count < 9000; count *= 2 {
			out := make([]float64, size*count)
			for i := 0; i < count; i++ {
				out[rank*count+i] = float64(rank*count + i)
			}
			if err := collectives.Allgatherv(ctx, c, nil, out, fill(size, count)); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("%s count %d", name, count), out, seq(size*count, func(i int) float64 { return float64(i) })); err != nil {
				return err
			}
		}
		return nil
	})
}

// collAlltoall1: Alltoall of 1 to 32768 ints per pair over each communicator, then the
// same in place.
func collAlltoall1(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		for count := 1; count < 65000; count *= 2 {
			send := seq(size*count, func(k int) int32 { return int32((k/count)*size + rank + k%count) })
			want := seq(size*count, func(k int) int32 { return int32(rank*size + k/count + k%count) })
			recv := fill(size*count, int32(-1))
			if err := collectives.Alltoall(ctx, c, send, recv); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("%s count %d", name, count), recv, want); err != nil {
				return err
			}
			if err := collectives.Alltoall(ctx, c, nil, send); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("%s count %d (in place)", name, count), send, want); err != nil {
				return err
			}
		}
		return nil
	})
}

// collBcasttest: Bcast from rank 0 of 100, 64 Ki, 128 Ki and 1 Mi ints, 5 times each,
// every element distinct per size and repetition.
func collBcasttest(ctx context.Context, w *runtime.World) error {
	const reps = 5
	buf := make([]int32, 1<<20)
	for n, size := range []int{100, 64 << 10, 128 << 10, 1 << 20} {
		for rep := 0; rep < reps; rep++ {
			k := n*reps + rep
			b := buf[:size]
			for i := range b {
				if w.Rank() == 0 {
					b[i] = int32(1000000*k + i)
				} else {
					b[i] = int32(-1 - k)
				}
			}
			if err := collectives.Bcast(ctx, w, b, 0); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("size %d rep %d", size, rep), b, seq(size, func(i int) int32 { return int32(1000000*k + i) })); err != nil {
				return err
			}
		}
	}
	return nil
}

// collScantst: Scan of the ranks with Sum twice, with a commutative user sum twice, and
// with a non-commutative user operator that must see its operands in rank order.
func collScantst(ctx context.Context, w *runtime.World) error {
	r := int32(w.Rank())
	want := r * (r + 1) / 2
	res := []int32{-100}
	for i, op := range []collectives.Op[int32]{collectives.Sum[int32](), collectives.Sum[int32](), addem, addem} {
		res[0] = -100
		if err := collectives.Scan(ctx, w, []int32{r}, res, op); err != nil {
			return err
		}
		if res[0] != want {
			return fmt.Errorf("scan %d: %d, want %d", i, res[0], want)
		}
	}
	res[0] = -100
	if err := collectives.Scan(ctx, w, []int32{r}, res, assoc); err != nil {
		return err
	}
	if res[0] == badAnswer {
		return fmt.Errorf("scan (non-commutative): operands combined out of rank order")
	}
	return nil
}

// collExscan: Exscan (sum) of 1 to 32768 ints over each communicator, then in place
// (rank 0's buffer unchanged).
func collExscan(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		for count := 1; count < 65000; count *= 2 {
			send := seq(count, func(i int) int32 { return int32(rank + i*size) })
			recv := fill(count, int32(-1))
			want := seq(count, func(i int) int32 { return int32(rank*i*size + rank*(rank-1)/2) })
			if err := collectives.Exscan(ctx, c, send, recv, collectives.Sum[int32]()); err != nil {
				return err
			}
			if rank > 0 {
				if err := same(fmt.Sprintf("%s count %d", name, count), recv, want); err != nil {
					return err
				}
			}
			if err := collectives.Exscan(ctx, c, nil, send, collectives.Sum[int32]()); err != nil {
				return err
			}
			if rank == 0 {
				want = seq(count, func(i int) int32 { return int32(i * size) })
			}
			if err := same(fmt.Sprintf("%s count %d (in place)", name, count), send, want); err != nil {
				return err
			}
		}
		return nil
	})
}

// collExscan2: Exscan (sum) of the ranks: rank r > 0 gets r(r-1)/2, rank 0's buffer is
// left alone.
func collExscan2(ctx context.Context, w *runtime.World) error {
	r := int32(w.Rank())
	recv := []int32{-2}
	if err := collectives.Exscan(ctx, w, []int32{r}, recv, collectives.Sum[int32]()); err != nil {
		return err
	}
	want := r * (r - 1) / 2
	if r == 0 {
		want = -2
	}
	if recv[0] != want {
		return fmt.Errorf("exscan: %d, want %d", recv[0], want)
	}
	return nil
}

// collGather: Gather of 1 to 32768 doubles to each root over each communicator (the
// contiguous half of gather.c; its vector-type half needs derived datatypes), then a
// zero-length Gather.
func collGather(ctx context.Context, w *runtime.World) error {
	err := eachComm(ctx, w, 2, func(c *runtime.World, name string) error {
		rank, size := c.Rank(), c.Size()
		for root := 0; root < size; root++ {
			for count := 1; count < 65000; count *= 2 {
				in := seq(count, func(i int) float64 { return float64(i) })
				var out []float64
				if rank == root {
					out = make([]float64, size*count)
				}
				if err := collectives.Gather(ctx, c, in, out, root); err != nil {
					return err
				}
				if rank == root {
					if err := same(fmt.Sprintf("%s root %d count %d", name, root, count), out, seq(size*count, func(i int) float64 { return float64(i % count) })); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var none []int8
	if w.Rank() == 0 {
		none = []int8{}
	}
	return collectives.Gather(ctx, w, []int8{}, none, 0)
}

// collRedScatBlock: ReduceScatter (block form, sum) of one int per rank, then in place.
func collRedScatBlock(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	want := int32(size*rank + (size-1)*size/2)
	send := seq(size, func(i int) int32 { return int32(rank + i) })
	recv := make([]int32, 1)
	if err := collectives.ReduceScatter(ctx, w, send, recv, collectives.Sum[int32]()); err != nil {
		return err
	}
	if recv[0] != want {
		return fmt.Errorf("reduce-scatter: %d, want %d", recv[0], want)
	}
	if err := collectives.ReduceScatter(ctx, w, nil, send, collectives.Sum[int32]()); err != nil {
		return err
	}
	if send[0] != want {
		return fmt.Errorf("reduce-scatter in place: %d, want %d", send[0], want)
	}
	return nil
}

// collRedScatBlock2: ReduceScatter (block form) of blocks of 1 to 128 ints with three
// non-commutative user operators: keep the left operand, keep the right one (each
// checking that left <= right, i.e. rank order), and a sum.
func collRedScatBlock2(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	var outOfOrder int
	left := collectives.NewOp("left", func(inout, in []int32) {
		for i := range inout {
			if inout[i] > in[i] {
				outOfOrder++
			}
		}
	}, false)
	right := collectives.NewOp("right", func(inout, in []int32) {
		for i := range inout {
			if inout[i] > in[i] {
				outOfOrder++
			}
			inout[i] = in[i]
		}
	}, false)
	ncSum := collectives.NewOp("nc_sum", func(inout, in []int32) {
		for i := range inout {
			inout[i] += in[i]
		}
	}, false)
	for bs := 1; bs < 256; bs *= 2 {
		send := seq(bs*size, func(i int) int32 { return int32(rank + i) })
		recv := make([]int32, bs)
		for _, c := range []struct {
			name string
			op   collectives.Op[int32]
			want func(x int) int32
		}{
			{"left", left, func(x int) int32 { return int32(x) }},
			{"right", right, func(x int) int32 { return int32(size - 1 + x) }},
			{"nc_sum", ncSum, func(x int) int32 { return int32(size*x + (size-1)*size/2) }},
		} {
			if err := collectives.ReduceScatter(ctx, w, send, recv, c.op); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("block %d, %s", bs, c.name), recv, seq(bs, func(i int) int32 { return c.want(rank*bs + i) })); err != nil {
				return err
			}
		}
	}
	if outOfOrder > 0 {
		return fmt.Errorf("non-commutative operators saw %d operand pairs out of rank order", outOfOrder)
	}
	return nil
}
