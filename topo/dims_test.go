package topo_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/topo"
)

// TestDimsCreate: MPI's documented examples, fixed entries, and each impossible case.
func TestDimsCreate(t *testing.T) {
	tests := []struct {
		n    int
		dims []int
		want []int
		bad  string
	}{
		{n: 6, dims: []int{0, 0}, want: []int{3, 2}},
		{n: 7, dims: []int{0, 0}, want: []int{7, 1}},
		{n: 6, dims: []int{0, 3, 0}, want: []int{2, 3, 1}},
		{n: 7, dims: []int{0, 3, 0}, bad: "multiply to 3, which does not divide 7"},
		{n: 1, dims: []int{0, 0, 0}, want: []int{1, 1, 1}},
		{n: 4, dims: []int{0, 0}, want: []int{2, 2}},
		{n: 12, dims: []int{0, 0, 0}, want: []int{3, 2, 2}},
		{n: 16, dims: []int{0, 0}, want: []int{4, 4}},
		{n: 24, dims: []int{0, 0, 0}, want: []int{4, 3, 2}},
		{n: 30, dims: []int{0, 0, 0}, want: []int{5, 3, 2}},
		{n: 64, dims: []int{0, 0, 0}, want: []int{4, 4, 4}},
		{n: 90, dims: []int{0, 0}, want: []int{10, 9}},
		{n: 8, dims: []int{0, 0, 0, 0}, want: []int{2, 2, 2, 1}},
		{n: 8, dims: []int{0, 2, 0}, want: []int{2, 2, 2}},
		{n: 12, dims: []int{1, 0, 0}, want: []int{1, 4, 3}},
		{n: 13, dims: []int{0}, want: []int{13}},
		{n: 5, dims: []int{}, bad: "multiply to 1, which does not divide 5"},
		{n: 1, dims: []int{}, want: []int{}},
		{n: 6, dims: []int{2, 3}, want: []int{2, 3}},
		{n: 6, dims: []int{3, 3}, bad: "multiply to more than 6"},
		{n: 8, dims: []int{2, 2}, bad: "multiply to 4, which does not divide 8"},
		{n: 0, dims: []int{0}, bad: "0 nodes"},
		{n: 4, dims: []int{0, -1}, bad: "dims[1] = -1"},
	}
	for _, tc := range tests {
		in := slices.Clone(tc.dims)
		got, err := topo.DimsCreate(tc.n, tc.dims)
		if !slices.Equal(in, tc.dims) {
			t.Errorf("DimsCreate(%d, %v) changed dims to %v", tc.n, in, tc.dims)
		}
		if tc.bad != "" {
			if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("DimsCreate(%d, %v): %v, %v; want ErrInvalid naming %q", tc.n, in, got, err, tc.bad)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("DimsCreate(%d, %v) = %v, %v; want %v", tc.n, in, got, err, tc.want)
		}
	}
}

// TestDimsCreateBalanced: for every size up to 400 in 1 to 4 dimensions, the sizes
// multiply to it, do not increase, and no other non-increasing factorization has a
// smaller spread (checked against a brute force over all tuples).
func TestDimsCreateBalanced(t *testing.T) {
	for k := 1; k <= 4; k++ {
		for n := 1; n <= 400; n++ {
			got, err := topo.DimsCreate(n, make([]int, k))
			if err != nil {
				t.Fatalf("DimsCreate(%d, %d zeros): %v", n, k, err)
			}
			p := 1
			for i, d := range got {
				p *= d
				if i > 0 && d > got[i-1] {
					t.Fatalf("DimsCreate(%d, %d zeros) = %v increases", n, k, got)
				}
			}
			if p != n {
				t.Fatalf("DimsCreate(%d, %d zeros) = %v multiplies to %d", n, k, got, p)
			}
			if best := bruteSpread(n, k, n); got[0]-got[k-1] != best {
				t.Fatalf("DimsCreate(%d, %d zeros) = %v has spread %d, best %d", n, k, got, got[0]-got[k-1], best)
			}
		}
	}
}

// bruteSpread returns the least max-min over all k-tuples of factors of n (each up to
// limit, non-increasing), or a large number when there is none.
func bruteSpread(n, k, limit int) int {
	if k == 1 {
		if n <= limit {
			return 0
		}
		return 1 << 30
	}
	best := 1 << 30
	for f := 1; f <= limit && f <= n; f++ {
		if n%f != 0 {
			continue
		}
		// the rest's spread, measured from f down to the rest's smallest
		sub := bruteMin(n/f, k-1, f)
		if sub > 0 && f-sub < best {
			best = f - sub
		}
	}
	return best
}

// bruteMin returns the largest possible smallest factor of a non-increasing k-tuple of
// factors of n bounded by limit, or 0 when there is none.
func bruteMin(n, k, limit int) int {
	if k == 1 {
		if n <= limit {
			return n
		}
		return 0
	}
	best := 0
	for f := 1; f <= limit && f <= n; f++ {
		if n%f == 0 {
			best = max(best, min(f, bruteMin(n/f, k-1, f)))
		}
	}
	return best
}

// FuzzDimsCreate checks DimsCreate with kept entries against the definition: an error
// exactly when the kept sizes cannot divide nnodes into a grid, else kept entries kept,
// the free ones non-increasing, the product nnodes, and the spread a brute force's.
func FuzzDimsCreate(f *testing.F) {
	f.Add(uint16(6), []byte{0, 3, 0})
	f.Add(uint16(7), []byte{0, 3, 0})
	f.Add(uint16(360), []byte{0, 0, 2, 0})
	f.Fuzz(func(t *testing.T, n16 uint16, spec []byte) {
		n := int(n16%1000) + 1
		if len(spec) > 4 {
			spec = spec[:4]
		}
		dims := make([]int, len(spec))
		fixed, free := 1, 0
		for i, b := range spec {
			if b%3 != 0 {
				dims[i] = int(b)%6 + 1
				fixed *= dims[i]
			} else {
				free++
			}
		}
		got, err := topo.DimsCreate(n, dims)
		possible := n%fixed == 0 && (free > 0 || fixed == n)
		if !possible {
			if !errors.Is(err, runtime.ErrInvalid) {
				t.Fatalf("DimsCreate(%d, %v) = %v, %v; want ErrInvalid", n, dims, got, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("DimsCreate(%d, %v): %v", n, dims, err)
		}
		p := 1
		var frees []int
		for i, d := range got {
			p *= d
			if dims[i] != 0 && d != dims[i] {
				t.Fatalf("DimsCreate(%d, %v) = %v changed a kept entry", n, dims, got)
			}
			if dims[i] == 0 {
				frees = append(frees, d)
			}
		}
		if p != n || !slices.IsSortedFunc(frees, func(a, b int) int { return b - a }) {
			t.Fatalf("DimsCreate(%d, %v) = %v", n, dims, got)
		}
		if free > 0 {
			if best := bruteSpread(n/fixed, free, n/fixed); frees[0]-frees[free-1] != best {
				t.Fatalf("DimsCreate(%d, %v) = %v: spread %d, best %d", n, dims, got, frees[0]-frees[free-1], best)
			}
		}
	})
}
