package collectives

// Logical operator kinds (MPI_LAND, MPI_LOR, MPI_LXOR), after the kinds of op.go.
const (
	OpLand OpKind = OpNoOp + 1 + iota
	OpLor
	OpLxor
)

// Land is logical and (MPI_LAND): nonzero is true, and the result is 1 or 0.
func Land[T Integer]() Op[T] { return Op[T]{"land", OpLand, true, landOf[T], land2[T]} }

// Lor is logical or (MPI_LOR): nonzero is true, and the result is 1 or 0.
func Lor[T Integer]() Op[T] { return Op[T]{"lor", OpLor, true, lorOf[T], lor2[T]} }

// Lxor is logical exclusive or (MPI_LXOR): nonzero is true, and the result is 1 or 0.
func Lxor[T Integer]() Op[T] { return Op[T]{"lxor", OpLxor, true, lxorOf[T], lxor2[T]} }

// truth is 1 for true, 0 for false.
func truth[T Integer](b bool) T {
	if b {
		return 1
	}
	return 0
}

func landOf[T Integer](inout, in []T) { land2(inout, inout, in) }

func lorOf[T Integer](inout, in []T) { lor2(inout, inout, in) }

func lxorOf[T Integer](inout, in []T) { lxor2(inout, inout, in) }

func land2[T Integer](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = truth[T](a[i] != 0 && b[i] != 0)
	}
}

func lor2[T Integer](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = truth[T](a[i] != 0 || b[i] != 0)
	}
}

func lxor2[T Integer](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = truth[T]((a[i] != 0) != (b[i] != 0))
	}
}
