package datatype

import "unsafe"

// PackSize returns the bytes that Pack writes for count copies of t: count * Size()
// (MPI_Pack_size, which has no header to add here).
func (t Type) PackSize(count int) (int, error) {
	if uint(count) < 1<<20 && t.size < 1<<30 { // the product is below maxBytes: no division
		return count * t.size, nil
	}
	if err := checkCount("pack size", "count", count); err != nil {
		return 0, err
	}
	if t.size > 0 && count > maxBytes/t.size {
		return 0, invalidf("pack size", "%d copies of %d bytes exceed 2^50", count, t.size)
	}
	return count * t.size, nil
}

// Span returns the byte range [lo, hi) of a buffer that count copies of t read or write:
// from the lowest byte of data to one past the highest. It is empty (0, 0) when count or
// t's size is 0. With a negative extent the copies after the first lie below it, and lo
// is the last copy's lowest byte.
func (t Type) Span(count int) (lo, hi int, err error) {
	if err := checkCount("span", "count", count); err != nil {
		return 0, 0, err
	}
	if count == 0 || t.size == 0 {
		return 0, 0, nil
	}
	ext := t.Extent()
	if (count >= 1<<20 || abs(ext) >= 1<<30) && ext != 0 && count-1 > maxBytes/abs(ext) {
		return 0, 0, invalidf("span", "%d copies of extent %d exceed 2^50 bytes", count, ext)
	}
	if ext < 0 {
		return t.tlb + (count-1)*ext, t.tub, nil
	}
	return t.tlb, t.tub + (count-1)*ext, nil
}

// Check returns an ErrRange error, naming op, unless count copies of t lie inside a
// buffer of n bytes that starts at offset 0.
func (t Type) Check(op string, count, n int) error {
	lo, hi, err := t.Span(count)
	if err != nil {
		return err
	}
	if lo < 0 {
		return rangef(op, "%v has data at byte offset %d, before the buffer's start: shift it with Hindexed or a Struct field offset", t, lo)
	}
	if hi > n {
		return rangef(op, "%d copies of %v reach byte %d, but the buffer holds %d bytes", count, t, hi, n)
	}
	return nil
}

// Pack copies the data of count copies of t, laid out over src's memory, into dst in
// typemap order (MPI_Pack), and returns the bytes written, count * t.Size(). Contiguous
// runs are moved with one copy each; Pack allocates nothing. T may be any type whose
// values hold no pointers (numbers, arrays and structs of them). A dst shorter than
// PackSize(count), or a src that does not hold the layout, is an ErrRange error and dst
// is untouched.
func Pack[T any](dst []byte, src []T, count int, t Type) (int, error) {
	s, err := bytesOf[T]("pack", src)
	if err != nil {
		return 0, err
	}
	n, err := t.sizes("pack", count, len(dst), len(s))
	if err != nil {
		return 0, err
	}
	pack(dst, s, count, t, n)
	return n, nil
}

// pack is Pack of n = count * t.Size() bytes after the checks: every block of the count
// copies lies inside s, and dst holds n bytes.
func pack(dst, s []byte, count int, t Type, n int) {
	if off, m, ok := t.Contig(count); ok {
		copy(dst[:m], s[off:off+m])
		return
	}
	dp, sp := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(s))
	pos, ext := 0, t.Extent()
	for k := range count {
		base := k * ext
		if t.stride != 0 {
			b := t.blocks[0]
			gather(unsafe.Add(dp, pos), unsafe.Add(sp, base+b.Off), len(t.blocks), b.Len, t.stride)
			pos += t.size
			continue
		}
		for _, b := range t.blocks {
			move(unsafe.Add(dp, pos), unsafe.Add(sp, base+b.Off), b.Len)
			pos += b.Len
		}
	}
}

// gather copies nb blocks of l bytes, stride bytes apart from s on, to d back to back.
func gather(d, s unsafe.Pointer, nb, l, stride int) {
	if l == 8 && (uintptr(d)|uintptr(s)|uintptr(stride))&7 == 0 {
		for i := range nb {
			*(*uint64)(unsafe.Add(d, i*8)) = *(*uint64)(unsafe.Add(s, i*stride))
		}
		return
	}
	for i := range nb {
		move(unsafe.Add(d, i*l), unsafe.Add(s, i*stride), l)
	}
}

// scatter is gather's inverse: nb blocks of l bytes from s back to back, to d on, stride
// bytes apart.
func scatter(d, s unsafe.Pointer, nb, l, stride int) {
	if l == 8 && (uintptr(d)|uintptr(s)|uintptr(stride))&7 == 0 {
		for i := range nb {
			*(*uint64)(unsafe.Add(d, i*stride)) = *(*uint64)(unsafe.Add(s, i*8))
		}
		return
	}
	for i := range nb {
		move(unsafe.Add(d, i*stride), unsafe.Add(s, i*l), l)
	}
}

// move copies n bytes from s to d. Blocks of one element of 4, 8 or 16 bytes at aligned
// addresses (a matrix column's) move as words: a memmove call per block costs several
// times the copy (`go test -bench PackColumn ./datatype` compares with a loop written
// out). Unaligned ones, and the rest, go through copy.
func move(d, s unsafe.Pointer, n int) {
	switch a := uintptr(d) | uintptr(s); {
	case n == 8 && a&7 == 0:
		*(*uint64)(d) = *(*uint64)(s)
	case n == 4 && a&3 == 0:
		*(*uint32)(d) = *(*uint32)(s)
	case n == 16 && a&7 == 0:
		*(*[2]uint64)(d) = *(*[2]uint64)(s)
	default:
		copy(unsafe.Slice((*byte)(d), n), unsafe.Slice((*byte)(s), n))
	}
}

// Unpack copies count * t.Size() bytes of packed data from src into the layout of count
// copies of t over dst's memory (MPI_Unpack), and returns the bytes read. Where blocks
// of the layout overlap, the later one in typemap order is written last. Bytes written
// over a bool must be 0 or 1 (FromStruct's layouts never cover one). Errors are as
// Pack's; on error dst is untouched.
func Unpack[T any](dst []T, src []byte, count int, t Type) (int, error) {
	d, err := bytesOf[T]("unpack", dst)
	if err != nil {
		return 0, err
	}
	n, err := t.sizes("unpack", count, len(src), len(d))
	if err != nil {
		return 0, err
	}
	unpack(d, src, count, t)
	return n, nil
}

// unpack is Unpack after the checks: every block of the count copies lies inside d, and
// src holds their packed bytes.
func unpack(d, src []byte, count int, t Type) {
	if off, m, ok := t.Contig(count); ok {
		copy(d[off:off+m], src[:m])
		return
	}
	dp, sp := unsafe.Pointer(unsafe.SliceData(d)), unsafe.Pointer(unsafe.SliceData(src))
	pos, ext := 0, t.Extent()
	for k := range count {
		base := k * ext
		if t.stride != 0 {
			b := t.blocks[0]
			scatter(unsafe.Add(dp, base+b.Off), unsafe.Add(sp, pos), len(t.blocks), b.Len, t.stride)
			pos += t.size
			continue
		}
		for _, b := range t.blocks {
			move(unsafe.Add(dp, base+b.Off), unsafe.Add(sp, pos), b.Len)
			pos += b.Len
		}
	}
}

// sizes checks a pack or unpack of count copies between a packed buffer of packed bytes
// and a laid-out buffer of laid bytes, and returns the packed length.
func (t Type) sizes(op string, count, packed, laid int) (int, error) {
	n, err := t.PackSize(count)
	if err != nil {
		return 0, err
	}
	if packed < n {
		return 0, rangef(op, "%d copies of %v are %d packed bytes, but the packed buffer holds %d", count, t, n, packed)
	}
	if err := t.Check(op, count, laid); err != nil {
		return 0, err
	}
	return n, nil
}

// bytesOf returns s's memory as bytes, or an ErrInvalid error if T holds pointers.
func bytesOf[T any](op string, s []T) ([]byte, error) {
	if !plain[T]() {
		var zero T
		return nil, invalidf(op, "element type %T holds pointers: its memory cannot be packed as bytes", zero)
	}
	if len(s) == 0 {
		return nil, nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero))), nil
}

// AsBytes returns the memory of s as bytes, for the layers that move packed data; it
// fails with ErrInvalid if T holds pointers.
func AsBytes[T any](s []T) ([]byte, error) { return bytesOf[T]("as bytes", s) }

// UnpackPrefix is Unpack of the first len(src) bytes of the packed data of count copies
// of t, len(src) <= PackSize(count): the layout's first len(src) bytes, in typemap order,
// are written and the rest of dst is untouched, as a receive of a shorter message does.
// It returns len(src).
func UnpackPrefix[T any](dst []T, src []byte, count int, t Type) (int, error) {
	d, err := bytesOf[T]("unpack prefix", dst)
	if err != nil {
		return 0, err
	}
	n, err := t.PackSize(count)
	if err != nil {
		return 0, err
	}
	if len(src) > n {
		return 0, rangef("unpack prefix", "%d packed bytes are more than %d copies of %v hold (%d)", len(src), count, t, n)
	}
	if err := t.Check("unpack prefix", count, len(d)); err != nil {
		return 0, err
	}
	unpackPrefix(d, src, t)
	return len(src), nil
}

// unpackPrefix is UnpackPrefix after the checks: the layout of the copies src covers
// lies inside d.
func unpackPrefix(d, src []byte, t Type) {
	if len(src) == 0 {
		return
	}
	whole := len(src) / t.size
	unpack(d, src[:whole*t.size], whole, t)
	rest, base := src[whole*t.size:], whole*t.Extent()
	for _, b := range t.blocks {
		if len(rest) == 0 {
			break
		}
		k := copy(d[base+b.Off:base+b.Off+min(b.Len, len(rest))], rest)
		rest = rest[k:]
	}
}
