package topo

import (
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/runtime"
)

// DimsCreate returns the sizes of a grid of nnodes processes in len(dims) dimensions
// (MPI_Dims_create). An entry of dims that is above 0 is kept. The entries that are 0 get
// sizes as close to each other as possible (the smallest difference between the largest
// and the smallest), in non-increasing order, whose product with the kept ones is nnodes.
// dims is not modified. It fails with runtime.ErrInvalid when nnodes is below 1, an entry
// is negative, or no such sizes exist (the kept entries do not divide nnodes, or there is
// no 0 entry and their product is not nnodes).
//
//	DimsCreate(6, []int{0, 0})    // [3 2]
//	DimsCreate(7, []int{0, 0})    // [7 1]
//	DimsCreate(6, []int{0, 3, 0}) // [2 3 1]
//	DimsCreate(7, []int{0, 3, 0}) // error: 3 does not divide 7
func DimsCreate(nnodes int, dims []int) ([]int, error) {
	if nnodes < 1 {
		return nil, invalidf("dims_create", "%d nodes (at least 1)", nnodes)
	}
	fixed, free := 1, 0
	for i, d := range dims {
		switch {
		case d < 0:
			return nil, invalidf("dims_create", "dims[%d] = %d (0 to choose it, or a size above 0)", i, d)
		case d == 0:
			free++
		case fixed > nnodes/d: // the product already exceeds nnodes
			return nil, invalidf("dims_create", "the sizes given multiply to more than %d nodes", nnodes)
		default:
			fixed *= d
		}
	}
	if nnodes%fixed != 0 || free == 0 && fixed != nnodes {
		return nil, invalidf("dims_create", "the sizes given multiply to %d, which does not divide %d nodes into a grid", fixed, nnodes)
	}
	sizes := balanced(nnodes/fixed, free)
	out := make([]int, len(dims))
	for i, d := range dims {
		if d == 0 {
			d, sizes = sizes[0], sizes[1:]
		}
		out[i] = d
	}
	return out, nil
}

// balanced returns k factors of m, non-increasing, whose largest and smallest differ
// least (the smallest largest among those): an exhaustive search over non-increasing
// factorizations into divisors of m, which are few (1344 for the most divisible m below
// 10^9).
func balanced(m, k int) []int {
	if k == 0 {
		return nil
	}
	best := make([]int, k)
	cur := make([]int, k)
	divs := divisors(m) // every factor is a divisor of m: the search walks these only
	bestSpread, bestMax := -1, 0
	var search func(i, rest, limit int)
	search = func(i, rest, limit int) {
		if i == k-1 {
			if rest > limit {
				return
			}
			cur[i] = rest
			spread := cur[0] - rest
			if bestSpread < 0 || spread < bestSpread || spread == bestSpread && cur[0] < bestMax {
				bestSpread, bestMax = spread, cur[0]
				copy(best, cur)
			}
			return
		}
		// cur[i] >= every later factor, so cur[i]^(k-i) >= rest: no smaller cur[i] works.
		for _, f := range divs {
			if f > limit || rest%f != 0 {
				continue
			}
			if !atLeastRoot(f, k-i, rest) {
				break
			}
			cur[i] = f
			search(i+1, rest/f, f)
		}
	}
	search(0, m, m)
	return best
}

// divisors returns m's divisors, largest first (trial division up to sqrt(m)).
func divisors(m int) []int {
	var small, large []int
	for d := 1; d*d <= m; d++ {
		if m%d == 0 {
			small = append(small, d)
			if d != m/d {
				large = append(large, m/d)
			}
		}
	}
	slices.Reverse(small)
	return append(large, small...)
}

// atLeastRoot reports whether f^n >= m.
func atLeastRoot(f, n, m int) bool {
	p := 1
	for range n {
		if p >= (m+f-1)/f {
			return true
		}
		p *= f
	}
	return p >= m
}

// invalidf returns a runtime.ErrInvalid error of the call op.
func invalidf(op, format string, args ...any) error {
	return fmt.Errorf("topo: %s: %w: %s", op, runtime.ErrInvalid, fmt.Sprintf(format, args...))
}

// wrap names the call op in err, or returns nil.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("topo: %s: %w", op, err)
}
