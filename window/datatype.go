package window

import (
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/datatype"
)

func (w *dataPath[T]) PutType(origin []T, ocount int, ot datatype.Type, rank, disp, tcount int, tt datatype.Type) error {
	return w.typed("put type", origin, ocount, ot, rank, disp, tcount, tt, func(o []T, d int) error {
		return w.Put(o, rank, d)
	})
}

func (w *dataPath[T]) GetType(result []T, rcount int, rt datatype.Type, rank, disp, tcount int, tt datatype.Type) error {
	return w.typed("get type", result, rcount, rt, rank, disp, tcount, tt, func(r []T, d int) error {
		return w.Get(r, rank, d)
	})
}

func (w *dataPath[T]) AccumulateType(origin []T, ocount int, ot datatype.Type, rank, disp, tcount int, tt datatype.Type, op collectives.Op[T]) error {
	return w.typed("accumulate type", origin, ocount, ot, rank, disp, tcount, tt, func(o []T, d int) error {
		return w.Accumulate(o, rank, d, op)
	})
}

// typed checks a typed call and runs do on each run that is contiguous on both sides:
// the origin's elements and the target displacement.
func (w *dataPath[T]) typed(op string, buf []T, ocount int, ot datatype.Type, rank, disp, tcount int, tt datatype.Type, do func([]T, int) error) error {
	if err := w.usable(op, rank, disp); err != nil {
		return err
	}
	es := elemSize[T]()
	on, err := ot.PackSize(ocount)
	if err != nil {
		return werrf(op, rank, disp, ErrInvalid, "origin: %v", err)
	}
	tn, err := tt.PackSize(tcount)
	if err != nil {
		return werrf(op, rank, disp, ErrInvalid, "target: %v", err)
	}
	if on != tn {
		return werrf(op, rank, disp, ErrInvalid, "the origin's %d copies of %v are %d bytes, the target's %d copies of %v %d", ocount, ot, on, tcount, tt, tn)
	}
	if err := ot.Check("origin layout", ocount, len(buf)*es); err != nil {
		return werrf(op, rank, disp, ErrInvalid, "%v", err)
	}
	for _, side := range [...]struct {
		name string
		t    datatype.Type
	}{{"origin", ot}, {"target", tt}} {
		if why := wholeElems(side.t, es); why != "" {
			return werrf(op, rank, disp, ErrInvalid, "%s layout %v: %s (the window's elements are %d bytes)", side.name, side.t, why, es)
		}
	}
	lo, hi, _ := tt.Span(tcount)
	if hi > lo && w.flavor != FlavorDynamic && uint(rank) < uint(w.size) {
		if n := w.tg[rank].n; disp+lo/es < 0 || disp+hi/es > n {
			return werrf(op, rank, disp, ErrRange, "%d copies of the target layout %v reach elements [%d, %d) of rank %d's %d",
				tcount, tt, disp+lo/es, disp+hi/es, rank, n)
		}
	}
	return pairRuns(ot, ocount, tt, tcount, func(o, t, n int) error {
		return do(buf[o/es:(o+n)/es], disp+t/es)
	})
}

// pairRuns walks count copies of two layouts of equal size together, in typemap order,
// and calls do with each run that is contiguous on both sides: its byte offsets in the
// origin and the target and its length. Runs that continue each other are merged.
func pairRuns(ot datatype.Type, ocount int, tt datatype.Type, tcount int, do func(o, t, n int) error) error {
	var o, t walker
	o.start(ot, ocount)
	t.start(tt, tcount)
	po, pt, pn := 0, 0, 0 // the pending run
	for o.load() && t.load() {
		n := min(o.left, t.left)
		if pn > 0 && o.off == po+pn && t.off == pt+pn {
			pn += n
		} else {
			if pn > 0 {
				if err := do(po, pt, pn); err != nil {
					return err
				}
			}
			po, pt, pn = o.off, t.off, n
		}
		o.take(n)
		t.take(n)
	}
	if pn > 0 {
		return do(po, pt, pn)
	}
	return nil
}

// wholeElems says what of t is not made of whole es-byte elements, or "".
func wholeElems(t datatype.Type, es int) string {
	if t.Extent()%es != 0 {
		return fmt.Sprintf("extent %d is not a multiple of %d bytes", t.Extent(), es)
	}
	for i := range t.NumBlocks() {
		if b := t.Block(i); b.Off%es != 0 || b.Len%es != 0 {
			return fmt.Sprintf("block %d (%d bytes at offset %d) is not whole elements", i, b.Len, b.Off)
		}
	}
	return ""
}

// walker steps through the bytes of count copies of a layout, block by block.
type walker struct {
	t          datatype.Type
	count, ext int
	k, i       int // the copy and the block
	off, left  int // the current block's unconsumed run
	nblk       int
}

func (c *walker) start(t datatype.Type, count int) {
	*c = walker{t: t, count: count, ext: t.Extent(), i: -1, nblk: t.NumBlocks()}
}

// load moves to the next block when the current one is consumed, and reports whether
// bytes remain.
func (c *walker) load() bool {
	for c.left == 0 {
		if c.nblk == 0 {
			return false
		}
		if c.i++; c.i == c.nblk {
			c.i, c.k = 0, c.k+1
		}
		if c.k >= c.count {
			return false
		}
		b := c.t.Block(c.i)
		c.off, c.left = c.k*c.ext+b.Off, b.Len
	}
	return true
}

func (c *walker) take(n int) { c.off, c.left = c.off+n, c.left-n }
