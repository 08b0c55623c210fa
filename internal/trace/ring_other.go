//go:build !linux

package trace

import (
	"errors"
	"os"
)

// mapShared fails: ring files are mapped on Linux only.
func mapShared(f *os.File, size int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmap(mem []byte) error { return nil }

func monoNow() int64 { return 0 }
