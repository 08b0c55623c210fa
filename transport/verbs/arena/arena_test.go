package arena

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

func newArena(t testing.TB, cfg Config) *Arena {
	t.Helper()
	if cfg.Size == 0 {
		cfg.Size = 64 << 20
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func TestAllocKeysAndReuse(t *testing.T) {
	a := newArena(t, Config{Name: "t", Quarantine: -1}) // freed bytes are reused at once
	r1, err := a.Alloc(1<<20, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Bytes) != 1<<20 || r1.Key == 0 || r1.Off%pageSize != 0 {
		t.Fatalf("region: len %d key %#x off %d", len(r1.Bytes), r1.Key, r1.Off)
	}
	for i := range r1.Bytes {
		r1.Bytes[i] = 0xAA // fault in
	}
	tab := a.Table()
	if _, ok := tab.Pin(r1.Key, 0, 1<<20, verbs.RemoteWrite); !ok {
		t.Fatal("pin of a live key failed")
	}
	tab.Unpin(r1.Key)
	if err := a.Free(r1); err != nil {
		t.Fatal(err)
	}
	r2, err := a.Alloc(1<<20, verbs.RemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Off != r1.Off {
		t.Fatalf("reuse: got offset %d, want the freed %d", r2.Off, r1.Off)
	}
	if r2.Key == r1.Key {
		t.Fatal("reused bytes got the old key")
	}
	st := a.Stats()
	if st.Reuses != 1 || st.PageInsAvoided != (1<<20)/pageSize || st.Allocs != 2 || st.LiveMRs != 1 {
		t.Fatalf("stats after reuse: %+v", st)
	}
	// The stale key fails, on the same bytes, and is counted.
	if _, ok := tab.Pin(r1.Key, 0, 8, verbs.RemoteRead); ok {
		t.Fatal("stale key pinned reused memory")
	}
	if _, ok := tab.Pin(r2.Key, 0, 8, verbs.RemoteWrite); ok {
		t.Fatal("write pinned on a read-only MR")
	}
	if got := a.Stats().KeyRejections; got != 2 {
		t.Fatalf("key rejections = %d, want 2", got)
	}
	if err := a.Free(r1); err == nil {
		t.Fatal("double free with the old key succeeded")
	}
}

func TestPinRejects(t *testing.T) {
	a := newArena(t, Config{Name: "t"})
	r, _ := a.Alloc(100, verbs.AccessAll)
	tab := a.Table()
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name      string
		key, off  uint64
		n         uint64
		wantPinOK bool
	}{
		{"whole", r.Key, 0, 100, true},
		{"empty at end", r.Key, 100, 0, true},
		{"past end", r.Key, 1, 100, false},
		{"offset past end", r.Key, 101, 0, false},
		{"huge length wraps", r.Key, 8, ^uint64(0) - 4, false},
		{"zero key", 0, 0, 1, false},
		{"slot zero", 5, 0, 1, false},
		{"slot out of table", ^uint64(0), 0, 1, false},
		{"forged generation", r.Key ^ 1<<10, 0, 1, false},
		{"random", rng.Uint64(), 0, 1, false},
	}
	for _, tc := range cases {
		tg, ok := tab.Pin(tc.key, tc.off, tc.n, verbs.RemoteRead)
		if ok != tc.wantPinOK {
			t.Errorf("%s: Pin ok = %v, want %v", tc.name, ok, tc.wantPinOK)
		}
		if ok {
			if tg.Kind != KindArena || tg.Base != uint64(r.Off) || tg.Len != 100 {
				t.Errorf("%s: target %+v", tc.name, tg)
			}
			tab.Unpin(tc.key)
		}
	}
	// Deregistration waits for pins.
	if _, ok := tab.Pin(r.Key, 0, 1, verbs.RemoteRead); !ok {
		t.Fatal("pin failed")
	}
	done := make(chan error)
	go func() { done <- a.Free(r) }()
	select {
	case <-done:
		t.Fatal("Free returned while the region was pinned")
	case <-time.After(50 * time.Millisecond):
	}
	tab.Unpin(r.Key)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestQuarantineWhenPinNeverDrains(t *testing.T) {
	a := newArena(t, Config{Name: "t"})
	r, _ := a.Alloc(4096, verbs.AccessAll)
	if _, ok := a.Table().Pin(r.Key, 0, 1, verbs.RemoteRead); !ok {
		t.Fatal("pin failed")
	}
	// The pinner "dies": Free gives up after drainTimeout and withholds the bytes.
	if err := a.Free(r); err != nil {
		t.Fatal(err)
	}
	st := a.Stats()
	if st.Quarantined != 4096 || st.InUse != 0 {
		t.Fatalf("stats %+v: want 4096 quarantined, 0 in use", st)
	}
	r2, _ := a.Alloc(4096, verbs.AccessAll)
	if r2.Off == r.Off {
		t.Fatal("quarantined bytes were reused")
	}
}

func TestTrimPastHighWater(t *testing.T) {
	a := newArena(t, Config{Name: "t", HighWater: 2 << 20, Quarantine: -1})
	var rs []Region
	for range 4 {
		r, err := a.Alloc(1<<20, verbs.AccessAll)
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.Bytes {
			r.Bytes[i] = 1
		}
		rs = append(rs, r)
	}
	for _, r := range rs[:2] {
		a.Free(r)
	}
	if st := a.Stats(); st.Trims != 0 || st.ResidentFree != 2<<20 {
		t.Fatalf("under the high-water mark: %+v", st)
	}
	a.Free(rs[2])
	st := a.Stats()
	if st.Trims == 0 || st.ResidentFree > 1<<20 {
		t.Fatalf("past the high-water mark: %+v", st)
	}
	// A trimmed block reads as zeros for everyone.
	r, _ := a.Alloc(3<<20, verbs.AccessAll)
	if bytes.Count(r.Bytes, []byte{1}) == len(r.Bytes) {
		t.Fatal("nothing was returned to the kernel")
	}
}

// TestRegionZero: a region reported Zero reads zero in every byte, through allocations,
// writes, frees and trims of random sizes; a fresh region is Zero and a reused one is not.
func TestRegionZero(t *testing.T) {
	a := newArena(t, Config{Name: "z", Size: 16 << 20, HighWater: 1 << 20})
	r, err := a.AllocRaw(64 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Zero {
		t.Fatal("a region of never-used pages is not reported Zero")
	}
	r.Bytes[100] = 7
	a.Free(r)
	if r, _ = a.AllocRaw(64 << 10); r.Zero {
		t.Fatal("a reused, written region is reported Zero")
	}
	a.Free(r)
	rng := rand.New(rand.NewPCG(1, 2))
	var live []Region
	zeros := 0
	for range 2000 {
		if len(live) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(live))
			a.Free(live[i])
			live = append(live[:i], live[i+1:]...)
			continue
		}
		r, err := a.AllocRaw(1 + rng.IntN(256<<10))
		if err != nil {
			continue // full for now
		}
		if r.Zero {
			zeros++
			if i := bytes.IndexFunc(r.Bytes, func(c rune) bool { return c != 0 }); i >= 0 {
				t.Fatalf("a region reported Zero holds a non-zero byte at %d of %d", i, len(r.Bytes))
			}
		}
		for i := 0; i < len(r.Bytes); i += 509 {
			r.Bytes[i] = 0xA5
		}
		live = append(live, r)
	}
	if zeros == 0 {
		t.Fatal("no allocation was reported Zero")
	}
}

func TestErrors(t *testing.T) {
	a := newArena(t, Config{Name: "t", Size: 1 << 20, MaxMRs: 2})
	if _, err := a.Alloc(2<<20, verbs.AccessAll); !errors.Is(err, verbs.ErrNoMemory) {
		t.Fatalf("oversized alloc: %v", err)
	}
	a.Alloc(8, verbs.AccessAll)
	a.Alloc(8, verbs.AccessAll)
	if _, err := a.Alloc(8, verbs.AccessAll); !errors.Is(err, verbs.ErrTooManyMRs) {
		t.Fatalf("third MR with MaxMRs 2: %v", err)
	}
	if _, err := a.AllocRaw(8); err != nil {
		t.Fatalf("raw regions need no key slot: %v", err)
	}
	if _, err := New(Config{Size: -1}); err == nil {
		t.Fatal("negative size accepted")
	}
}

func TestUserRegistration(t *testing.T) {
	a := newArena(t, Config{Name: "t"})
	buf := make([]byte, 300)
	key, err := a.RegisterUser(buf, verbs.RemoteRead|verbs.RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	tg, ok := a.Table().Pin(key, 10, 20, verbs.RemoteWrite)
	if !ok || tg.Kind != KindUser || tg.Len != 300 {
		t.Fatalf("pin user key: %v %+v", ok, tg)
	}
	a.Table().Unpin(key)
	if err := a.Deregister(key); err != nil {
		t.Fatal(err)
	}
	if a.Table().Valid(key) {
		t.Fatal("key valid after Deregister")
	}
	if err := a.Deregister(key); err == nil {
		t.Fatal("double deregister succeeded")
	}
}

// TestCrossProcess maps an arena in a child process, which writes through a key, and checks
// that the child sees a stale key fail.
func TestCrossProcess(t *testing.T) {
	if os.Getenv("ARENA_CHILD") != "" {
		return
	}
	a := newArena(t, Config{Name: "xp"})
	r, _ := a.Alloc(64, verbs.RemoteWrite)
	old, _ := a.Alloc(64, verbs.RemoteWrite)
	a.Free(old)
	desc, _ := a.Segment().Desc().AppendBinary(nil)
	cmd := exec.Command(os.Args[0], "-test.run=^TestArenaChild$")
	cmd.Env = append(os.Environ(), "ARENA_CHILD=1",
		"ARENA_DESC="+strconv.Quote(string(desc)),
		"ARENA_KEY="+strconv.FormatUint(r.Key, 10), "ARENA_OLD="+strconv.FormatUint(old.Key, 10))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if string(r.Bytes[:5]) != "hello" {
		t.Fatalf("child's write not visible: %q", r.Bytes[:5])
	}
	if a.Stats().KeyRejections != 1 {
		t.Fatalf("the child's stale-key attempt was not counted in the shared header")
	}
}

func TestArenaChild(t *testing.T) {
	if os.Getenv("ARENA_CHILD") == "" {
		t.Skip("helper process for TestCrossProcess")
	}
	q, _ := strconv.Unquote(os.Getenv("ARENA_DESC"))
	d, rest, err := DecodeSegmentDesc([]byte(q))
	if err != nil || len(rest) != 0 {
		t.Fatal(err)
	}
	rem, err := Attach(d)
	if err != nil {
		t.Fatal(err)
	}
	defer rem.Close()
	key, _ := strconv.ParseUint(os.Getenv("ARENA_KEY"), 10, 64)
	old, _ := strconv.ParseUint(os.Getenv("ARENA_OLD"), 10, 64)
	if _, ok := rem.Table().Pin(old, 0, 5, verbs.RemoteWrite); ok {
		t.Fatal("stale key pinned in the child")
	}
	tg, ok := rem.Table().Pin(key, 0, 5, verbs.RemoteWrite)
	if !ok {
		t.Fatal("live key refused in the child")
	}
	copy(rem.Bytes()[tg.Base:], "hello")
	rem.Table().Unpin(key)
}

func TestShmFallbackAndSweep(t *testing.T) {
	if os.Getenv("ARENA_CHILD") != "" {
		return
	}
	forceShmFallback = true
	a, err := New(Config{Name: "fb", Size: 1 << 20})
	forceShmFallback = false
	if err != nil {
		t.Fatal(err)
	}
	path := a.Segment().Desc().Path
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("fallback segment %s: %v mode %v, want 0600", path, err, fi.Mode())
	}
	a.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("fallback segment %s survived Close", path)
	}
	// A process killed while holding a fallback segment leaves a file; the sweep removes it.
	cmd := exec.Command(os.Args[0], "-test.run=^TestFallbackChild$")
	cmd.Env = append(os.Environ(), "ARENA_CHILD=fallback")
	cmd.Stdout = new(strings.Builder)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
	prefix := "/dev/shm/gorma-" + strconv.Itoa(cmd.Process.Pid) + "-"
	for !hasPrefixFile(prefix) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child never created its segment")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	SweepStale()
	if hasPrefixFile(prefix) {
		t.Fatalf("segment of killed pid %d left in /dev/shm after the sweep", cmd.Process.Pid)
	}
}

func hasPrefixFile(prefix string) bool {
	for _, p := range Leftovers() {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func TestFallbackChild(t *testing.T) {
	if os.Getenv("ARENA_CHILD") != "fallback" {
		t.Skip("helper process for TestShmFallbackAndSweep")
	}
	forceShmFallback = true
	if _, err := New(Config{Name: "fb", Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute) // killed by the parent
}

func TestMemfdLeavesNothing(t *testing.T) {
	before := len(Leftovers())
	a := newArena(t, Config{Name: "m", Size: 1 << 20})
	if a.Segment().Desc().Path != "" || len(Leftovers()) != before {
		t.Fatal("memfd arena created a file in /dev/shm")
	}
}

func FuzzDecodeSegmentDesc(f *testing.F) {
	good, _ := SegmentDesc{PID: 12, FD: 3, Size: 1 << 20}.AppendBinary(nil)
	path, _ := SegmentDesc{PID: 12, FD: -1, Path: "/dev/shm/gorma-12-1", Size: 99}.AppendBinary(nil)
	f.Add(good)
	f.Add(path)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, rest, err := DecodeSegmentDesc(b)
		if err != nil {
			return
		}
		again, err := d.AppendBinary(nil)
		if err != nil || !bytes.Equal(again, b[:len(b)-len(rest)]) {
			t.Fatalf("round trip of %+v: %x vs %x (%v)", d, again, b, err)
		}
	})
}

// BenchmarkAllocFree1MiB is arena allocate+free of 1 MiB on reuse: no system call, no fault.
func BenchmarkAllocFree1MiB(b *testing.B) {
	a := newArena(b, Config{Name: "b"})
	r, _ := a.Alloc(1<<20, verbs.AccessAll)
	clear(r.Bytes)
	a.Free(r)
	b.ReportAllocs()
	for b.Loop() {
		r, err := a.Alloc(1<<20, verbs.AccessAll)
		if err != nil {
			b.Fatal(err)
		}
		a.Free(r)
	}
}

// BenchmarkFreshSegment1MiB is what the arena avoids: create, map, fault in and unmap.
func BenchmarkFreshSegment1MiB(b *testing.B) {
	for b.Loop() {
		s, err := CreateSegment("fresh", 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		mem := s.Bytes()
		for i := 0; i < len(mem); i += pageSize {
			mem[i] = 1
		}
		s.Close()
	}
}

func BenchmarkPinUnpin(b *testing.B) {
	a := newArena(b, Config{Name: "b"})
	r, _ := a.Alloc(64, verbs.AccessAll)
	tab := a.Table()
	for b.Loop() {
		if _, ok := tab.Pin(r.Key, 0, 8, verbs.RemoteWrite); !ok {
			b.Fatal("pin")
		}
		tab.Unpin(r.Key)
	}
}

// TestRetire: a retired arena's memory and fd are released at once (its memfd is gone from
// the process's descriptors, a fallback file from /dev/shm) while its range reads as
// zeros, without a fault, until Close unmaps it.
func TestRetire(t *testing.T) {
	if os.Getenv("ARENA_CHILD") != "" {
		return
	}
	for _, fallback := range []bool{false, true} {
		forceShmFallback = fallback
		a, err := New(Config{Name: "retire", Size: 1 << 20})
		forceShmFallback = false
		if err != nil {
			t.Fatal(err)
		}
		seg := a.Segment()
		desc, mem := seg.Desc(), seg.Bytes()
		for i := range mem {
			mem[i] = 0xa5
		}
		if err := a.Retire(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Alloc(4096, verbs.LocalWrite); err == nil {
			t.Errorf("fallback=%v: Alloc on a retired arena succeeded", fallback)
		}
		for i := 0; i < len(mem); i += 4096 {
			if mem[i] != 0 {
				t.Fatalf("fallback=%v: byte %d of a retired arena reads %#x, want 0", fallback, i, mem[i])
			}
		}
		if desc.Path != "" {
			if _, err := os.Stat(desc.Path); !os.IsNotExist(err) {
				t.Errorf("fallback segment %s survived Retire", desc.Path)
			}
		} else if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(desc.FD))); err == nil && strings.Contains(target, "memfd:gorma-") {
			t.Errorf("memfd %d (%s) still open after Retire", desc.FD, target)
		}
		if err := a.Retire(); err != nil {
			t.Errorf("second Retire: %v", err)
		}
		if err := a.Close(); err != nil {
			t.Fatalf("Close after Retire: %v", err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}
