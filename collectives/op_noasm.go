//go:build !amd64

package collectives

import "github.com/gorma-hpc/gorma/runtime"

// The vector kernels (op_amd64.go) combine no element on this architecture: each
// returns 0, and op.go's scalar loops combine every element.

func sumVec[T runtime.Elem](out, a, b []T) int { return 0 }

func minVec[T Ordered](out, a, b []T) int { return 0 }

func maxVec[T Ordered](out, a, b []T) int { return 0 }

func bandVec[T Integer](out, a, b []T) int { return 0 }

func borVec[T Integer](out, a, b []T) int { return 0 }

func bxorVec[T Integer](out, a, b []T) int { return 0 }
