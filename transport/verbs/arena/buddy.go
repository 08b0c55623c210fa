package arena

import "math/bits"

// minBlock is the smallest block the buddy allocator hands out; blocks are aligned to
// their size, so blocks of a page or more are page-aligned.
const (
	minBlockShift = 6
	minBlock      = 1 << minBlockShift
)

// buddy is a binary buddy allocator over [0, size), size a power of two. It is pure
// bookkeeping (no memory of its own) and not safe for concurrent use.
type buddy struct {
	maxOrder int
	free     [][]int64       // per order: stack of free block offsets (LIFO, so warm blocks come back first)
	where    map[int64]where // free block offset → its order and index in free[order]
	used     map[int64]int   // allocated block offset → order
}

type where struct{ order, idx int }

func newBuddy(size int64) *buddy {
	if size < minBlock || size&(size-1) != 0 {
		panic("arena: buddy size must be a power of two of at least 64")
	}
	maxOrder := bits.TrailingZeros64(uint64(size)) - minBlockShift
	b := &buddy{
		maxOrder: maxOrder,
		free:     make([][]int64, maxOrder+1),
		where:    make(map[int64]where),
		used:     make(map[int64]int),
	}
	b.push(0, maxOrder)
	return b
}

// orderFor returns the order of the smallest block holding n bytes, or -1 if none can.
func (b *buddy) orderFor(n int64) int {
	if n <= minBlock {
		return 0
	}
	o := bits.Len64(uint64(n-1)) - minBlockShift
	if o > b.maxOrder {
		return -1
	}
	return o
}

func blockSize(order int) int64 { return minBlock << order }

func (b *buddy) push(off int64, order int) {
	b.where[off] = where{order, len(b.free[order])}
	b.free[order] = append(b.free[order], off)
}

func (b *buddy) remove(off int64) {
	w := b.where[off]
	st := b.free[w.order]
	last := st[len(st)-1]
	st[w.idx] = last
	b.where[last] = where{w.order, w.idx}
	b.free[w.order] = st[:len(st)-1]
	delete(b.where, off)
}

// alloc returns the offset and order of a free block holding n bytes.
func (b *buddy) alloc(n int64) (off int64, order int, ok bool) {
	want := b.orderFor(n)
	if want < 0 {
		return 0, 0, false
	}
	o := want
	for o <= b.maxOrder && len(b.free[o]) == 0 {
		o++
	}
	if o > b.maxOrder {
		return 0, 0, false
	}
	st := b.free[o]
	off = st[len(st)-1]
	b.remove(off)
	for o > want {
		o--
		b.push(off+blockSize(o), o) // upper half stays free
	}
	b.used[off] = want
	return off, want, true
}

// release frees the block at off and merges it with free buddies. It returns the order
// freed, or -1 if off is not an allocated block.
func (b *buddy) release(off int64) int {
	order, ok := b.used[off]
	if !ok {
		return -1
	}
	delete(b.used, off)
	freed := order
	for order < b.maxOrder {
		bud := off ^ blockSize(order)
		w, free := b.where[bud]
		if !free || w.order != order {
			break
		}
		b.remove(bud)
		off &^= blockSize(order)
		order++
	}
	b.push(off, order)
	return freed
}

// each calls f for every free block, largest first, until f returns false.
func (b *buddy) each(f func(off int64, order int) bool) {
	for o := b.maxOrder; o >= 0; o-- {
		for _, off := range b.free[o] {
			if !f(off, o) {
				return
			}
		}
	}
}
