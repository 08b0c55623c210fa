package datatype

// builder collects the blocks and bounds of a type under construction.
type builder struct {
	op     string
	t      Type
	bounds bool // some copy contributed bounds
	err    error
}

// push appends n bytes at off, merging it into the last block when it starts where that
// block ends.
func (b *builder) push(off, n int) {
	if n == 0 || b.err != nil {
		return
	}
	bl := b.t.blocks
	if k := len(bl); k > 0 && bl[k-1].Off+bl[k-1].Len == off {
		bl[k-1].Len += n
	} else {
		if len(bl) == MaxBlocks {
			b.err = invalidf(b.op, "the layout has more than %d blocks (MaxBlocks)", MaxBlocks)
			return
		}
		if len(bl) == 0 || off < b.t.tlb {
			b.t.tlb = off
		}
		b.t.blocks = append(bl, Block{off, n})
	}
	if len(bl) == 0 || off+n > b.t.tub {
		b.t.tub = off + n
	}
	b.t.size += n
}

// add places n copies of old at byte displacement disp, consecutive copies one extent
// of old apart.
func (b *builder) add(disp, n int, old Type) {
	if b.err != nil || n == 0 {
		return
	}
	ext := old.Extent()
	if disp < -maxBytes || disp > maxBytes {
		b.err = invalidf(b.op, "displacement %d bytes is beyond ±2^50", disp)
		return
	}
	if ext != 0 && n > maxBytes/abs(ext) || old.size > 0 && n > maxBytes/old.size {
		b.err = invalidf(b.op, "%d copies of a type of extent %d and size %d exceed 2^50 bytes", n, ext, old.size)
		return
	}
	// Each copy contributes its bounds shifted by its displacement; with a negative
	// extent the last copy lies lowest.
	first, last := 0, (n-1)*ext
	if last < 0 {
		first, last = last, 0
	}
	if lb := disp + first + old.lb; !b.bounds || lb < b.t.lb {
		b.t.lb = lb
	}
	if ub := disp + last + old.ub; !b.bounds || ub > b.t.ub {
		b.t.ub = ub
	}
	b.bounds = true
	if len(old.blocks) == 1 && (n == 1 || old.blocks[0].Len == ext) {
		b.push(disp+old.blocks[0].Off, n*old.blocks[0].Len)
		return
	}
	if len(old.blocks) == 0 {
		return // bounds only, placed above
	}
	for k := 0; k < n && b.err == nil; k++ {
		base := disp + k*ext
		for _, blk := range old.blocks {
			b.push(base+blk.Off, blk.Len)
		}
	}
}

// done returns the built type after checking its bounds.
func (b *builder) done() (Type, error) {
	if b.err != nil {
		return Type{}, b.err
	}
	t := b.t
	for _, v := range [...]int{t.lb, t.ub, t.tlb, t.tub} {
		if v < -maxBytes || v > maxBytes {
			return Type{}, invalidf(b.op, "the layout reaches byte %d, beyond ±2^50", v)
		}
	}
	if len(t.blocks) == 0 {
		t.blocks, t.tlb, t.tub = nil, 0, 0
	} else {
		t.blocks = t.blocks[:len(t.blocks):len(t.blocks)]
	}
	t.stride = strideOf(t.blocks)
	return t, nil
}

// strideOf returns the distance between consecutive blocks of bl if there are two or
// more, all of one length and evenly spaced forward; else 0.
func strideOf(bl []Block) int {
	if len(bl) < 2 {
		return 0
	}
	s := bl[1].Off - bl[0].Off
	if s <= 0 {
		return 0
	}
	for i := 1; i < len(bl); i++ {
		if bl[i].Len != bl[0].Len || bl[i].Off-bl[i-1].Off != s {
			return 0
		}
	}
	return s
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func checkCount(op, what string, n int) error {
	if n < 0 {
		return invalidf(op, "%s %d is negative", what, n)
	}
	if n > maxBytes {
		return invalidf(op, "%s %d exceeds 2^50", what, n)
	}
	return nil
}

// scale returns d extents of old in bytes, or an error naming what overflowed.
func scale(op string, d int, old Type) (int, error) {
	ext := old.Extent()
	if d < -maxBytes || d > maxBytes || ext != 0 && (d > maxBytes/abs(ext) || d < -maxBytes/abs(ext)) {
		return 0, invalidf(op, "displacement of %d extents of %d bytes is beyond ±2^50 bytes", d, ext)
	}
	return d * ext, nil
}

// Contiguous returns count copies of t back to back (MPI_Type_contiguous).
func (t Type) Contiguous(count int) (Type, error) {
	const op = "contiguous"
	if err := checkCount(op, "count", count); err != nil {
		return Type{}, err
	}
	b := builder{op: op}
	b.add(0, count, t)
	return b.done()
}

// Vector returns count blocks of blocklen copies of t, the starts of consecutive blocks
// stride extents of t apart (MPI_Type_vector). A negative stride runs backwards.
func (t Type) Vector(count, blocklen, stride int) (Type, error) {
	const op = "vector"
	s, err := scale(op, stride, t)
	if err != nil {
		return Type{}, err
	}
	return t.hvector(op, count, blocklen, s)
}

// Hvector is Vector with the stride in bytes (MPI_Type_create_hvector).
func (t Type) Hvector(count, blocklen, stride int) (Type, error) {
	return t.hvector("hvector", count, blocklen, stride)
}

func (t Type) hvector(op string, count, blocklen, stride int) (Type, error) {
	if err := checkCount(op, "count", count); err != nil {
		return Type{}, err
	}
	if err := checkCount(op, "block length", blocklen); err != nil {
		return Type{}, err
	}
	if stride < -maxBytes || stride > maxBytes || count > 0 && (stride > maxBytes/count || stride < -maxBytes/count) {
		return Type{}, invalidf(op, "%d strides of %d bytes reach beyond ±2^50 bytes", count, stride)
	}
	b := builder{op: op}
	if blocklen == 0 || len(t.blocks) == 0 {
		// No data: the bounds are linear in i, so the first and last blocks give them.
		if count > 0 {
			b.add(0, blocklen, t)
			b.add((count-1)*stride, blocklen, t)
		}
		return b.done()
	}
	for i := 0; i < count && b.err == nil; i++ {
		b.add(i*stride, blocklen, t)
	}
	return b.done()
}

// Indexed returns blocks of blocklens[i] copies of t at displacements displs[i], counted
// in extents of t (MPI_Type_indexed). The two slices must have the same length.
func (t Type) Indexed(blocklens, displs []int) (Type, error) {
	return t.indexed("indexed", blocklens, displs, true)
}

// Hindexed is Indexed with the displacements in bytes (MPI_Type_create_hindexed).
func (t Type) Hindexed(blocklens, displs []int) (Type, error) {
	return t.indexed("hindexed", blocklens, displs, false)
}

// IndexedBlock is Indexed with every block blocklen copies long
// (MPI_Type_create_indexed_block).
func (t Type) IndexedBlock(blocklen int, displs []int) (Type, error) {
	return t.indexedBlock("indexed block", blocklen, displs, true)
}

// HindexedBlock is IndexedBlock with the displacements in bytes
// (MPI_Type_create_hindexed_block).
func (t Type) HindexedBlock(blocklen int, displs []int) (Type, error) {
	return t.indexedBlock("hindexed block", blocklen, displs, false)
}

func (t Type) indexed(op string, blocklens, displs []int, inExtents bool) (Type, error) {
	if len(blocklens) != len(displs) {
		return Type{}, invalidf(op, "%d block lengths but %d displacements", len(blocklens), len(displs))
	}
	b := builder{op: op}
	for i, n := range blocklens {
		if err := checkCount(op, "block length", n); err != nil {
			return Type{}, invalidf(op, "block %d: length %d is negative or beyond 2^50", i, n)
		}
		d := displs[i]
		if inExtents {
			var err error
			if d, err = scale(op, d, t); err != nil {
				return Type{}, err
			}
		}
		b.add(d, n, t)
	}
	return b.done()
}

func (t Type) indexedBlock(op string, blocklen int, displs []int, inExtents bool) (Type, error) {
	if err := checkCount(op, "block length", blocklen); err != nil {
		return Type{}, err
	}
	b := builder{op: op}
	for _, d := range displs {
		if inExtents {
			var err error
			if d, err = scale(op, d, t); err != nil {
				return Type{}, err
			}
		}
		b.add(d, blocklen, t)
	}
	return b.done()
}

// Resized returns t with lower bound lb and extent extent, its data unchanged
// (MPI_Type_create_resized): consecutive copies then lie extent bytes apart. A negative
// extent is allowed, as in MPI: the upper bound lies below the lower one and copies run
// backwards, each extent bytes below the one before.
func (t Type) Resized(lb, extent int) (Type, error) {
	const op = "resized"
	if lb < -maxBytes || lb > maxBytes || extent < -maxBytes || extent > maxBytes ||
		lb+extent < -maxBytes || lb+extent > maxBytes {
		return Type{}, invalidf(op, "lower bound %d or upper bound %d (lower bound + extent) is beyond ±2^50", lb, lb+extent)
	}
	t.lb, t.ub = lb, lb+extent
	return t, nil
}

// Contiguous returns count elements of T back to back (MPI_Type_contiguous).
func Contiguous[T Elem](count int) (Type, error) { return Of[T]().Contiguous(count) }

// Vector returns count blocks of blocklen elements of T, consecutive blocks starting
// stride elements apart (MPI_Type_vector): a column of a row-major matrix with n columns
// is Vector[T](rows, 1, n).
func Vector[T Elem](count, blocklen, stride int) (Type, error) {
	return Of[T]().Vector(count, blocklen, stride)
}

// Hvector is Vector with the stride in bytes (MPI_Type_create_hvector).
func Hvector[T Elem](count, blocklen, stride int) (Type, error) {
	return Of[T]().Hvector(count, blocklen, stride)
}

// Indexed returns blocks of blocklens[i] elements of T at element displacements
// displs[i] (MPI_Type_indexed).
func Indexed[T Elem](blocklens, displs []int) (Type, error) {
	return Of[T]().Indexed(blocklens, displs)
}

// Hindexed is Indexed with the displacements in bytes (MPI_Type_create_hindexed).
func Hindexed[T Elem](blocklens, displs []int) (Type, error) {
	return Of[T]().Hindexed(blocklens, displs)
}

// IndexedBlock returns blocks of blocklen elements of T at element displacements displs
// (MPI_Type_create_indexed_block).
func IndexedBlock[T Elem](blocklen int, displs []int) (Type, error) {
	return Of[T]().IndexedBlock(blocklen, displs)
}

// HindexedBlock is IndexedBlock with the displacements in bytes
// (MPI_Type_create_hindexed_block).
func HindexedBlock[T Elem](blocklen int, displs []int) (Type, error) {
	return Of[T]().HindexedBlock(blocklen, displs)
}
