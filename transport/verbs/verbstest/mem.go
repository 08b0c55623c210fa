package verbstest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// memKind is where a buffer lives.
type memKind int

const (
	arenaMem memKind = iota // PD.AllocMR: pre-registered arena memory
	userMem                 // PD.RegMR: ordinary Go memory, registered
	unregMem                // ordinary Go memory, LKey 0
)

func (k memKind) String() string {
	switch k {
	case arenaMem:
		return "arena"
	case userMem:
		return "user"
	case unregMem:
		return "unreg"
	}
	return "memKind(?)"
}

// buffer is memory the suite uses as a source, sink or target, with its MR (nil for
// unregistered memory).
type buffer struct {
	mr verbs.MR
	b  []byte
}

func (x *buffer) lkey() uint64 {
	if x.mr == nil {
		return 0
	}
	return x.mr.LKey()
}

func (x *buffer) rkey() uint64 {
	if x.mr == nil {
		return 0
	}
	return x.mr.RKey()
}

// alloc returns size bytes of kind k with rights access; t's cleanup deregisters them. A
// RegMR the provider does not support (ErrUnsupported) skips t.
func (n *node) alloc(t testing.TB, k memKind, size int, access verbs.Access) *buffer {
	t.Helper()
	switch k {
	case unregMem:
		return &buffer{b: make([]byte, size)}
	case arenaMem:
		mr, err := n.pd.AllocMR(size, access)
		if err != nil {
			t.Fatalf("%s: AllocMR(%d, %v): %v", n.name, size, access, err)
		}
		checkMR(t, "AllocMR", mr, size, access)
		t.Cleanup(func() { closeWithin(t, "Dereg", ignoreErr(mr.Dereg)) })
		return &buffer{mr: mr, b: mr.Bytes()}
	case userMem:
		buf := make([]byte, size)
		mr, err := n.pd.RegMR(buf, access)
		if errors.Is(err, verbs.ErrUnsupported) {
			t.Skipf("%s: RegMR with %v: %v", n.name, access, err)
		}
		if err != nil {
			t.Fatalf("%s: RegMR(%d bytes, %v): %v", n.name, size, access, err)
		}
		checkMR(t, "RegMR", mr, size, access)
		if size > 0 && &mr.Bytes()[0] != &buf[0] {
			t.Errorf("RegMR: Bytes() does not alias the registered buffer")
		}
		t.Cleanup(func() { closeWithin(t, "Dereg", ignoreErr(mr.Dereg)) })
		return &buffer{mr: mr, b: buf}
	}
	panic("bad memKind")
}

// fullAccess is every right memory of kind k on n can have: user memory gets remote
// rights only as far as the device's Caps promise.
func (n *node) fullAccess(k memKind) verbs.Access {
	if k != userMem {
		return verbs.AccessAll
	}
	a := verbs.LocalWrite
	if n.dev.Caps().Has(verbs.CapUserMemRDMA) {
		a |= verbs.RemoteRead | verbs.RemoteWrite
	}
	if n.dev.Caps().Has(verbs.CapUserMemAtomic) {
		a |= verbs.RemoteAtomic
	}
	return a
}

// checkMR checks an MR's accessors right after registration.
func checkMR(t testing.TB, what string, mr verbs.MR, size int, access verbs.Access) {
	t.Helper()
	if mr.Len() != size || len(mr.Bytes()) != size {
		t.Errorf("%s(%d): Len %d, len(Bytes) %d", what, size, mr.Len(), len(mr.Bytes()))
	}
	if mr.Access() != access {
		t.Errorf("%s: Access %v, want %v", what, mr.Access(), access)
	}
	if mr.LKey() == 0 {
		t.Errorf("%s: LKey is 0, which SendWR.LKey reserves for unregistered memory", what)
	}
}

// fill writes a deterministic pseudo-random pattern derived from seed into b.
func fill(b []byte, seed uint64) {
	x := seed*0x9E3779B97F4A7C15 | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 24)
	}
}

// patterned returns n bytes of fill's pattern.
func patterned(n int, seed uint64) []byte {
	b := make([]byte, n)
	fill(b, seed)
	return b
}

// diff describes how got differs from want, or returns "" if they are equal.
func diff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	first, count := -1, 0
	for i := range got {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			count++
		}
	}
	if count == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d bytes differ, first at byte %d: got %#02x, want %#02x",
		count, len(got), first, got[first], want[first])
}

// checkBytes reports a difference between got and want as an error of t.
func checkBytes(t testing.TB, what string, got, want []byte) bool {
	t.Helper()
	if d := diff(got, want); d != "" {
		t.Errorf("%s: %s", what, d)
		return false
	}
	return true
}

// overlay returns a copy of base with part copied in at off.
func overlay(base []byte, off int, part []byte) []byte {
	out := clone(base)
	copy(out[off:], part)
	return out
}

func get64(b []byte) uint64    { return binary.NativeEndian.Uint64(b) }
func put64(b []byte, v uint64) { binary.NativeEndian.PutUint64(b, v) }

// hash64 is the FNV-1a hash of b, to compare messages across processes.
func hash64(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
