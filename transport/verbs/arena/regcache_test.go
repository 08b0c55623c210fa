package arena

import (
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

type fakeMR struct {
	buf     []byte
	acc     verbs.Access
	dereged *int
}

func (m *fakeMR) LKey() uint64         { return 1 }
func (m *fakeMR) RKey() uint64         { return 1 }
func (m *fakeMR) Len() int             { return len(m.buf) }
func (m *fakeMR) Access() verbs.Access { return m.acc }
func (m *fakeMR) Bytes() []byte        { return m.buf }
func (m *fakeMR) Dereg() error         { *m.dereged++; return nil }

func TestRegCache(t *testing.T) {
	dereged := 0
	reg := func(buf []byte, acc verbs.Access) (verbs.MR, error) {
		return &fakeMR{buf: buf, acc: acc, dereged: &dereged}, nil
	}
	c := NewRegCache(reg, 2)
	big := make([]byte, 4096)
	m1, _ := c.Get(big, verbs.RemoteRead|verbs.RemoteWrite)
	m2, _ := c.Get(big[100:200], verbs.RemoteRead) // covered, fewer rights: hit
	if m1 != m2 {
		t.Fatal("covered sub-slice missed")
	}
	c.Get(big[100:200], verbs.RemoteAtomic) // more rights: miss
	other := make([]byte, 10)
	c.Get(other, verbs.RemoteRead) // evicts the least recently used
	if h, m, e := c.Stats(); h != 1 || m != 3 || e != 1 || dereged != 1 {
		t.Fatalf("hits %d misses %d evictions %d dereged %d; want 1 3 1 1", h, m, e, dereged)
	}
	c.Invalidate(other[5:6])
	if dereged != 2 {
		t.Fatalf("Invalidate did not deregister the overlapping entry")
	}
	c.Close()
	if dereged != 3 {
		t.Fatalf("Close deregistered %d of 3", dereged)
	}
}
