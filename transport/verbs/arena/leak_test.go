package arena

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Leak tests: arenas created, attached and closed, and regions allocated and freed, many
// times in one process; afterwards fds, mappings and /dev/shm files are back to the
// baseline, and an arena's bytes in use, live MRs and resident free bytes are where its
// counters say they must be.

type leakUsage struct{ fds, maps, shm int }

func leakMeasure() leakUsage {
	fds, _ := os.ReadDir("/proc/self/fd")
	maps, _ := os.ReadFile("/proc/self/maps")
	shm, _ := filepath.Glob(fmt.Sprintf("%s/%s%d-*", ShmDir, shmPrefix, os.Getpid()))
	return leakUsage{len(fds), bytes.Count(maps, []byte("\n")), len(shm)}
}

// TestLeakArenaCycles creates an arena, attaches it as a peer would, carves and frees
// regions and user registrations, and closes both, 200 times, with memfd segments and
// with /dev/shm files.
func TestLeakArenaCycles(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", fallback), func(t *testing.T) {
			forceShmFallback = fallback
			defer func() { forceShmFallback = false }()
			user := make([]byte, 1<<12)
			cycle := func() {
				a, err := New(Config{Name: "leak", Size: 8 << 20, MaxMRs: 16})
				if err != nil {
					t.Fatal(err)
				}
				r, err := Attach(a.Segment().Desc())
				if err != nil {
					t.Fatal(err)
				}
				reg, err := a.Alloc(1<<16, verbs.AccessAll)
				if err != nil {
					t.Fatal(err)
				}
				key, err := a.RegisterUser(user, verbs.AccessAll)
				if err != nil {
					t.Fatal(err)
				}
				if err := a.Deregister(key); err != nil {
					t.Fatal(err)
				}
				if err := a.Free(reg); err != nil {
					t.Fatal(err)
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				if err := a.Close(); err != nil {
					t.Fatal(err)
				}
			}
			cycle()
			base := leakMeasure()
			const cycles = 200
			for range cycles {
				cycle()
			}
			if now := leakMeasure(); now.fds > base.fds || now.shm > base.shm || now.maps > base.maps+16 {
				t.Errorf("after %d arena cycles: %+v, baseline %+v", cycles, now, base)
			}
		})
	}
}

// TestLeakRegionCycles allocates and frees regions of growing and shrinking sizes and
// user registrations in one arena, 500 times, and checks that bytes in use and live MRs
// return to zero, that every key slot can be taken again, and that resident free memory
// stays within the high-water mark (trimming).
func TestLeakRegionCycles(t *testing.T) {
	const maxMRs, high, cycles = 8, 256 << 10, 500
	a, err := New(Config{Name: "leak", Size: 16 << 20, MaxMRs: maxMRs, HighWater: high})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sizes := []int{1, 4096, 1 << 18, 300, 1 << 16, 3 << 18, 100}
	user := make([]byte, 1<<12)
	for i := range cycles {
		var regs []Region
		for j := range maxMRs - 1 {
			r, err := a.Alloc(sizes[(i+j)%len(sizes)], verbs.AccessAll)
			if err != nil {
				t.Fatalf("cycle %d: %v", i, err)
			}
			for p := 0; p < len(r.Bytes); p += pageSize {
				r.Bytes[p] = 1 // fault the pages in, so that frees make resident free memory
			}
			regs = append(regs, r)
		}
		key, err := a.RegisterUser(user, verbs.AccessAll)
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		if err := a.Deregister(key); err != nil {
			t.Fatal(err)
		}
		for _, r := range regs {
			if err := a.Free(r); err != nil {
				t.Fatal(err)
			}
		}
		if st := a.Stats(); st.ResidentFree > high {
			t.Fatalf("cycle %d: %d resident free bytes, above the high-water mark %d", i, st.ResidentFree, high)
		}
	}
	st := a.Stats()
	if st.InUse != 0 || st.LiveMRs != 0 || st.Quarantined != 0 {
		t.Errorf("after %d cycles: %d bytes in use, %d live MRs, %d quarantined; want none", cycles, st.InUse, st.LiveMRs, st.Quarantined)
	}
	if st.Trims == 0 {
		t.Errorf("after %d cycles past the high-water mark: no trim", cycles)
	}
	// Every key slot is free again: MaxMRs registrations at once succeed.
	var keys []uint64
	for range maxMRs {
		k, err := a.RegisterUser(user, verbs.RemoteRead)
		if err != nil {
			t.Fatalf("key slots leaked: %v", err)
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		a.Deregister(k)
	}
	goruntime.KeepAlive(user)
}
