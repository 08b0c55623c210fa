package datatype

// Order is the storage order of a multi-dimensional array, for Subarray.
type Order int

const (
	// OrderC is row-major order (MPI_ORDER_C): the last dimension varies fastest, as in a
	// Go [rows][cols]T or a slice indexed [i*cols+j].
	OrderC Order = iota
	// OrderFortran is column-major order (MPI_ORDER_FORTRAN): the first dimension varies
	// fastest.
	OrderFortran
)

// Subarray returns the sub-block of subsizes elements starting at starts inside an array
// of sizes elements of t, stored in order (MPI_Type_create_subarray). The three slices
// have one entry per dimension. The result's lower bound is 0 and its extent the whole
// array's, so count copies are count whole arrays.
func (t Type) Subarray(sizes, subsizes, starts []int, order Order) (Type, error) {
	const op = "subarray"
	nd := len(sizes)
	if nd == 0 || len(subsizes) != nd || len(starts) != nd {
		return Type{}, invalidf(op, "%d sizes, %d subsizes and %d starts: want the same number, at least one", nd, len(subsizes), len(starts))
	}
	if order != OrderC && order != OrderFortran {
		return Type{}, invalidf(op, "order %d is neither OrderC nor OrderFortran", order)
	}
	total := 1
	for i := range nd {
		if sizes[i] < 1 || subsizes[i] < 0 || starts[i] < 0 || subsizes[i] > sizes[i] || starts[i] > sizes[i]-subsizes[i] {
			return Type{}, invalidf(op, "dimension %d: size %d, subsize %d, start %d: want size >= 1 and 0 <= start <= start+subsize <= size",
				i, sizes[i], subsizes[i], starts[i])
		}
		if total > maxBytes/sizes[i] {
			return Type{}, invalidf(op, "an array of %v elements exceeds 2^50", sizes)
		}
		total *= sizes[i]
	}
	arr, err := scale(op, total, t)
	if err != nil {
		return Type{}, err
	}
	// sz, sub and st hold the dimensions slowest first.
	sz, sub, st := make([]int, nd), make([]int, nd), make([]int, nd)
	for k := range nd {
		i := k
		if order == OrderFortran {
			i = nd - 1 - k
		}
		sz[k], sub[k], st[k] = sizes[i], subsizes[i], starts[i]
		if sub[k] == 0 || t.size == 0 {
			return emptyArray(arr), nil
		}
	}
	// A fastest dimension taken whole joins the next one: its rows are one run.
	for nd > 1 && sub[nd-1] == sz[nd-1] {
		sz[nd-2], sub[nd-2], st[nd-2] = sz[nd-2]*sz[nd-1], sub[nd-2]*sz[nd-1], st[nd-2]*sz[nd-1]
		nd--
	}
	stride := make([]int, nd) // in elements
	stride[nd-1] = 1
	for k := nd - 2; k >= 0; k-- {
		stride[k] = stride[k+1] * sz[k+1]
	}
	b := builder{op: op}
	idx := make([]int, nd-1) // odometer over every dimension but the fastest
	ext := t.Extent()
	for b.err == nil {
		off := st[nd-1]
		for k := range nd - 1 {
			off += (st[k] + idx[k]) * stride[k]
		}
		b.add(off*ext, sub[nd-1], t)
		k := nd - 2
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] < sub[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	r, err := b.done()
	if err != nil {
		return Type{}, err
	}
	r.lb, r.ub = 0, arr
	return r, nil
}

// emptyArray is the type of an empty sub-block of an array of n bytes.
func emptyArray(n int) Type { return Type{ub: n} }

// Subarray returns the sub-block of subsizes elements of T starting at starts inside an
// array of sizes elements stored in order (MPI_Type_create_subarray).
func Subarray[T Elem](sizes, subsizes, starts []int, order Order) (Type, error) {
	return Of[T]().Subarray(sizes, subsizes, starts, order)
}
