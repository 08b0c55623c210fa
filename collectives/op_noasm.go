//go:build !amd64

package collectives

import "github.com/gorma-hpc/gorma/runtime"

// addVec reports false: no vector kernel on this architecture (op_amd64.go).
func addVec[T runtime.Elem](out, a, b []T) bool { return false }
