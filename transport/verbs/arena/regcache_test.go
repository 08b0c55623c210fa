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
	m3, _ := c.Get(big[100:200], verbs.RemoteAtomic) // more rights: miss
	c.Put(m1)
	c.Put(m2)
	c.Put(m3)
	other := make([]byte, 10)
	m4, _ := c.Get(other, verbs.RemoteRead) // evicts the least recently used idle entry
	if h, m, e := c.Stats(); h != 1 || m != 3 || e != 1 || dereged != 1 {
		t.Fatalf("hits %d misses %d evictions %d dereged %d; want 1 3 1 1", h, m, e, dereged)
	}
	c.Put(m4)
	c.Invalidate(other[5:6])
	if dereged != 2 {
		t.Fatalf("Invalidate did not deregister the overlapping entry")
	}
	c.Close()
	if dereged != 3 {
		t.Fatalf("Close deregistered %d of 3", dereged)
	}
}

// TestRegCacheKeepsReferenced: registrations in use are never evicted, however many there
// are (more rendezvous sends in flight than the capacity); the cache shrinks back to its
// capacity as they are put back, and an invalidated one in use goes at its last Put.
func TestRegCacheKeepsReferenced(t *testing.T) {
	dereged := 0
	reg := func(buf []byte, acc verbs.Access) (verbs.MR, error) {
		return &fakeMR{buf: buf, acc: acc, dereged: &dereged}, nil
	}
	const capacity = 4
	c := NewRegCache(reg, capacity)
	mem := make([]byte, 64<<10)
	var mrs []verbs.MR
	for i := range 10 { // disjoint segments of one buffer, as a segmented send posts them
		mr, err := c.Get(mem[i*4096:(i+1)*4096], verbs.RemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		mrs = append(mrs, mr)
	}
	if dereged != 0 {
		t.Fatalf("%d registrations in use were deregistered", dereged)
	}
	if _, _, e := c.Stats(); e != 0 {
		t.Fatalf("%d evictions of registrations in use", e)
	}
	again, _ := c.Get(mem[9*4096+8:9*4096+16], verbs.RemoteRead)
	if again != mrs[9] {
		t.Fatal("a registration over the cache's capacity was not found again")
	}
	c.Put(again)
	c.Invalidate(mem[0:1]) // in use: retired, not deregistered
	if dereged != 0 {
		t.Fatal("Invalidate deregistered a registration in use")
	}
	for _, mr := range mrs {
		c.Put(mr)
	}
	// 1 retired one at its Put, and the rest down to the capacity.
	if want := 1 + (10 - 1 - capacity); dereged != want {
		t.Fatalf("after every Put, %d deregistered; want %d", dereged, want)
	}
	if _, _, e := c.Stats(); e != int64(10-1-capacity) {
		t.Fatalf("%d evictions; want %d", e, 10-1-capacity)
	}
	empty, _ := c.Get(nil, verbs.RemoteRead)
	c.Put(empty)
	if want := 1 + (10 - 1 - capacity) + 1; dereged != want {
		t.Fatalf("an empty registration was not deregistered at its Put")
	}
	c.Close()
	if dereged != 11 {
		t.Fatalf("Close left %d of 11 registered", 11-dereged)
	}
}

// TestRegCacheIdleLimit: idle registrations beyond the byte limit are evicted, least
// recently used first; referenced ones stay whatever their size.
func TestRegCacheIdleLimit(t *testing.T) {
	dereged := 0
	reg := func(buf []byte, acc verbs.Access) (verbs.MR, error) {
		return &fakeMR{buf: buf, acc: acc, dereged: &dereged}, nil
	}
	c := NewRegCache(reg, 64)
	c.SetIdleLimit(3 << 20)
	bufs := make([][]byte, 5)
	mrs := make([]verbs.MR, 5)
	for i := range bufs {
		bufs[i] = make([]byte, 1<<20)
		mrs[i], _ = c.Get(bufs[i], verbs.RemoteRead)
	}
	if dereged != 0 {
		t.Fatalf("%d referenced registrations evicted", dereged)
	}
	for _, mr := range mrs {
		c.Put(mr) // 5 MiB idle against a 3 MiB limit: the 2 oldest go
	}
	if dereged != 2 {
		t.Fatalf("%d evicted, want 2", dereged)
	}
	if again, _ := c.Get(bufs[0], verbs.RemoteRead); again == mrs[0] {
		t.Fatal("the least recently used idle registration was kept")
	}
	if again, _ := c.Get(bufs[4], verbs.RemoteRead); again != mrs[4] {
		t.Fatal("a recent idle registration was evicted")
	}
}
