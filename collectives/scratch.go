package collectives

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime"
)

// EnvScratch names the environment variable that sets how collective calls get their
// scratch memory: arena (the default) or fresh (see Scratch). It is read once, at the
// process's first collective call that needs scratch; SetScratch overrides it.
const EnvScratch = "GORMA_SCRATCH"

// Scratch is a policy for the scratch memory of collective calls.
type Scratch uint8

const (
	// ScratchArena, the default: scratch is acquired once and reused by every later call.
	// The shared-memory algorithms carve theirs from the pre-registered arena, map the
	// peers' once and keep the mappings; the point-to-point algorithms keep a Go buffer
	// per World that grows to the largest size used.
	ScratchArena Scratch = iota
	// ScratchFresh makes every call acquire its data scratch and release it before it
	// returns, the way Open MPI and MPICH do (a malloc above glibc's mmap threshold is an
	// mmap, its free a munmap; a registration cache entry dies with the mapping). It exists
	// to measure what pre-registration buys; see the package documentation for exactly
	// what is paid per call.
	ScratchFresh
)

var scratchNames = [...]string{"arena", "fresh"}

func (s Scratch) String() string {
	if int(s) < len(scratchNames) {
		return scratchNames[s]
	}
	return fmt.Sprintf("Scratch(%d)", s)
}

// ParseScratch parses a GORMA_SCRATCH value: "arena" (or "", the default) or "fresh". A
// bad value returns an error wrapping runtime.ErrConfig.
func ParseScratch(v string) (Scratch, error) {
	switch v {
	case "", "arena":
		return ScratchArena, nil
	case "fresh":
		return ScratchFresh, nil
	}
	return ScratchArena, fmt.Errorf("%w: %s=%q: want arena or fresh", runtime.ErrConfig, EnvScratch, v)
}

// scratchCur is the policy in force: 0 not decided yet, 1+policy once decided, or
// scratchBad for a bad GORMA_SCRATCH, whose error is scratchErr.
var (
	scratchCur atomic.Uint32
	scratchErr error // set once, before scratchCur takes scratchBad
)

const scratchBad = uint32(ScratchFresh) + 2

// SetScratch sets the scratch policy of every World of this process, overriding
// GORMA_SCRATCH (and a bad value's error). Every rank of a job must use the same policy
// (ranks whose shared-memory scratch policies differ fail their calls with ErrMismatch).
// It must not change while a collective call runs: set it before the first call, or
// between calls at the same point on every rank.
func SetScratch(s Scratch) {
	if s > ScratchFresh {
		panic(fmt.Sprintf("collectives: SetScratch(%d): no such policy", s))
	}
	scratchCur.Store(uint32(s) + 1)
}

// ScratchPolicy returns the scratch policy in force: the last SetScratch, or else
// GORMA_SCRATCH, read at the first call. A bad GORMA_SCRATCH returns its error (wrapping
// runtime.ErrConfig) until SetScratch, and the collective calls that acquire scratch
// fail with it.
func ScratchPolicy() (Scratch, error) {
	switch v := scratchCur.Load(); v {
	case 0:
	case scratchBad:
		return ScratchArena, scratchErr
	default:
		return Scratch(v - 1), nil
	}
	s, err := ParseScratch(os.Getenv(EnvScratch))
	v := uint32(s) + 1
	if err != nil {
		scratchOnce.Do(func() { scratchErr = err })
		v = scratchBad
	}
	scratchCur.CompareAndSwap(0, v)
	return ScratchPolicy()
}

var scratchOnce sync.Once

// freshScratch reports whether calls acquire their scratch per call.
func freshScratch() (bool, error) {
	s, err := ScratchPolicy()
	return s == ScratchFresh, err
}
