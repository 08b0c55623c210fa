//go:build !amd64

package runtime

import "unsafe"

// prefetchW does nothing here (see prefetch_amd64.go).
func prefetchW(unsafe.Pointer) {}

// prefetchR does nothing here (see prefetch_amd64.go).
func prefetchR(unsafe.Pointer) {}

// spinPause does nothing here (see prefetch_amd64.go).
func spinPause() {}
