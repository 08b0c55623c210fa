package datatype

// Laid is count copies of a Type laid over a buffer, checked once by Over. Its Pack and
// UnpackPrefix move bytes without walking the checks of the package's Pack and
// UnpackPrefix again, for the layers that check a layout when a call starts and move
// its bytes later. The zero Laid is empty. A Laid holds the buffer; it is a small
// value, used by one goroutine at a time (the buffer's bytes are not guarded).
type Laid struct {
	t     Type
	count int
	buf   []byte
	size  int // packed bytes: count * t.Size()
}

// Over checks that count copies of t lie inside buf, which starts at offset 0, as
// Check(op, count, len(buf)) does (its errors are Check's and PackSize's), and returns
// them.
func (t Type) Over(op string, buf []byte, count int) (Laid, error) {
	n, err := t.PackSize(count)
	if err != nil {
		return Laid{}, err
	}
	if err := t.Check(op, count, len(buf)); err != nil {
		return Laid{}, err
	}
	return Laid{t: t, count: count, buf: buf, size: n}, nil
}

// Bytes returns the buffer the copies lie in; Runs' offsets are offsets into it.
func (l Laid) Bytes() []byte { return l.buf }

// Size returns the packed bytes of the copies: count * t.Size().
func (l Laid) Size() int { return l.size }

// Contig reports whether the copies are one run of the buffer, and returns that run.
func (l Laid) Contig() ([]byte, bool) {
	off, n, ok := l.t.Contig(l.count)
	if !ok {
		return nil, false
	}
	return l.buf[off : off+n], true
}

// Pack copies the data of the copies into dst in typemap order, as the package's Pack
// does, and returns Size(). A dst shorter than Size() is an ErrRange error and dst is
// untouched.
func (l Laid) Pack(dst []byte) (int, error) {
	if len(dst) < l.size {
		return 0, rangef("pack", "%d copies of %v are %d packed bytes, but the packed buffer holds %d", l.count, l.t, l.size, len(dst))
	}
	pack(dst, l.buf, l.count, l.t, l.size)
	return l.size, nil
}

// UnpackPrefix writes the first len(src) bytes of the copies' packed data into the
// buffer, as the package's UnpackPrefix does, and returns len(src). An src longer than
// Size() is an ErrRange error and the buffer is untouched.
func (l Laid) UnpackPrefix(src []byte) (int, error) {
	if len(src) > l.size {
		return 0, rangef("unpack prefix", "%d packed bytes are more than %d copies of %v hold (%d)", len(src), l.count, l.t, l.size)
	}
	unpackPrefix(l.buf, src, l.t)
	return len(src), nil
}

// Run is Count blocks of Len bytes each, the first at byte offset Off of the buffer and
// each Stride bytes after the one before (Stride is 0 when Count is 1): a vector's
// column is one Run.
type Run struct {
	Off, Len, Count, Stride int
}

// Runs appends the blocks of the copies to dst as runs, in packing order, joining
// consecutive blocks of one length evenly spaced into one Run, and returns dst. When
// the blocks need more than max runs it returns false, and dst holds max of them.
func (l Laid) Runs(dst []Run, max int) ([]Run, bool) {
	t, ext, have := l.t, l.t.Extent(), len(dst)
	if l.size == 0 {
		return dst, true
	}
	if off, n, ok := t.Contig(l.count); ok {
		if max < 1 {
			return dst, false
		}
		return append(dst, Run{off, n, 1, 0}), true
	}
	for k := range l.count {
		base := k * ext
		if t.stride != 0 {
			b := t.blocks[0]
			if dst = addRun(dst, Run{base + b.Off, b.Len, len(t.blocks), t.stride}); len(dst)-have > max {
				return dst[:have+max], false
			}
			continue
		}
		for _, b := range t.blocks {
			if dst = addRun(dst, Run{base + b.Off, b.Len, 1, 0}); len(dst)-have > max {
				return dst[:have+max], false
			}
		}
	}
	return dst, true
}

// addRun appends r to runs, joining it to the last run when r's blocks continue that
// run's spacing.
func addRun(runs []Run, r Run) []Run {
	n := len(runs)
	if n == 0 || runs[n-1].Len != r.Len {
		return append(runs, r)
	}
	c := &runs[n-1]
	switch {
	case c.Count == 1 && r.Count == 1:
		c.Stride, c.Count = r.Off-c.Off, 2
	case c.Count == 1 && r.Off-c.Off == r.Stride:
		c.Stride, c.Count = r.Stride, r.Count+1
	case c.Count > 1 && r.Off == c.Off+c.Count*c.Stride && (r.Count == 1 || r.Stride == c.Stride):
		c.Count += r.Count
	default:
		return append(runs, r)
	}
	return runs
}
