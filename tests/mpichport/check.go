package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// same returns nil if got equals want element by element, else an error naming what,
// the first differing index and how many differ.
func same[T comparable](what string, got, want []T) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d elements, want %d", what, len(got), len(want))
	}
	bad, first := 0, -1
	for i := range got {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%s: %d of %d elements differ; [%d] is %v, want %v", what, bad, len(got), first, got[first], want[first])
	}
	return nil
}

// seq returns n elements, element i being f(i).
func seq[T any](n int, f func(i int) T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = f(i)
	}
	return s
}

// fill returns n copies of v.
func fill[T any](n int, v T) []T {
	return seq(n, func(int) T { return v })
}

// first returns the first non-nil error.
func first(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// split runs MPI_Comm_split(world, color, rank) and returns the new World, nil for
// ranks whose color is runtime.NoColor.
func split(ctx context.Context, w *runtime.World, color int) (*runtime.World, error) {
	c, err := w.Split(ctx, color, w.Rank())
	if err != nil {
		return nil, fmt.Errorf("split (color %d): %w", color, err)
	}
	return c, nil
}
