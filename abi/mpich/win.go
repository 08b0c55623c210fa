//go:build cgo

package mpich

import (
	"github.com/gorma-hpc/gorma/window"
)

// A win is a window: bytes of memory exposed to the communicator's ranks.
type win struct {
	w    *window.Win[byte]
	errh Errhandler
}

var wins = newTable[*win](kindWin)

// winOf returns the window of handle h.
func winOf(h Win) (*win, error) {
	if wo, ok := wins.get(int32(h)); ok {
		return wo, nil
	}
	return nil, errHandle("window", int32(h))
}
