package trace

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestRingLayout checks that the Go types a ring file is written through have the
// layout ReadRing reads.
func TestRingLayout(t *testing.T) {
	var e Event
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"Event", unsafe.Sizeof(e), evLen},
		{"Start", unsafe.Offsetof(e.Start), evStart},
		{"End", unsafe.Offsetof(e.End), evEnd},
		{"Bytes", unsafe.Offsetof(e.Bytes), evBytes},
		{"Flow", unsafe.Offsetof(e.Flow), evFlow},
		{"Peer", unsafe.Offsetof(e.Peer), evPeer},
		{"Tag", unsafe.Offsetof(e.Tag), evTag},
		{"Label", unsafe.Offsetof(e.Label), evLabel},
		{"Kind", unsafe.Offsetof(e.Kind), evKind},
		{"slot", unsafe.Sizeof(slot{}), slotLen},
		{"slot.ev", unsafe.Offsetof(slot{}.ev), 8},
		{"batchArea", unsafe.Sizeof(batchArea{}), batchAreaLen},
		{"batchArea.evs", unsafe.Offsetof(batchArea{}.evs), 8},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, the ring file says %d", c.name, c.got, c.want)
		}
	}
}

// mapTest returns a recorder of rank 2 mapped into a file of t's, whose stamps are
// nanoseconds, and the file's path.
func mapTest(t *testing.T, capacity int) (*Recorder, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ring")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := MapRecorder(2, capacity, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmap(r.file.mem) })
	r.clock = &Clock{origin: r.clock.origin, scale: 1}
	r.file.writeHeader(2, len(r.slots), r.clock)
	return r, path
}

// readTest reads the ring file at path as another process would.
func readTest(t *testing.T, path string) Dump {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadRing(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRingFile reads back a ring file: the ring's last events in order, then the
// events a batch holds but has not flushed, with the labels.
func TestRingFile(t *testing.T) {
	r, path := mapTest(t, 8)
	send, _ := r.Label("Send")
	recv, _ := r.Label("Recv")
	for i := range 12 {
		r.Record(Event{Kind: Send, Start: int64(10 * i), End: int64(10*i + 5), Bytes: 8, Flow: uint64(i + 1), Peer: 1, Tag: 3, Label: send})
	}
	b := NewBatch(r)
	b.Put(Recv, 200, 210, 8, 0, 0, 3, recv)
	b.Put(Match, 205, 210, 8, 1, 0, 3, recv)
	snap := r.Snapshot()
	d := readTest(t, path)
	if !reflect.DeepEqual(d.Labels, []string{"Send", "Recv"}) || d.Rank != 2 || d.Origin != snap.Origin {
		t.Fatalf("labels %q rank %d origin %d; want Send, Recv, 2, %d", d.Labels, d.Rank, d.Origin, snap.Origin)
	}
	if len(d.Events) != 10 || !reflect.DeepEqual(d.Events[:8], snap.Events) || !reflect.DeepEqual(d.Seqs[:8], snap.Seqs) {
		t.Fatalf("events %+v seqs %v, want the ring's %+v %v and the batch's two", d.Events, d.Seqs, snap.Events, snap.Seqs)
	}
	if d.Events[8].Kind != Recv || d.Events[9].Kind != Match || d.Seqs[9] != 13 || d.Total != 14 {
		t.Errorf("batch events %+v, seqs %v, total %d; want the Recv and the Match as 12 and 13 of 14", d.Events[8:], d.Seqs[8:], d.Total)
	}
	if _, err := AppendDump(nil, d); err != nil {
		t.Errorf("the ring file's dump does not encode: %v", err)
	}
	b.Flush()
	if d := readTest(t, path); len(d.Events) != 8 || d.Events[7].Kind != Match || d.Total != 14 {
		t.Errorf("after the flush: %d events, the last %+v, total %d; want 8, the Match, 14", len(d.Events), d.Events[7], d.Total)
	}
	area := b.a
	b.Close()
	if b2 := NewBatch(r); b2.a != area {
		t.Error("a closed batch's place in the ring file was not given back")
	}
}

// TestRingTorn: an event being written when the process ended is left out, and an event
// both stored and still counted in its batch (a Flush cut short) appears once.
func TestRingTorn(t *testing.T) {
	r, path := mapTest(t, 8)
	l, _ := r.Label("x")
	for i := range 3 {
		r.Record(Event{Kind: Call, Start: int64(i), End: int64(i + 1), Bytes: -1, Peer: NoPeer, Tag: -1, Label: l})
	}
	s := r.slot(0)
	s.state.Store(s.state.Load() | writing)
	if d := readTest(t, path); len(d.Events) != 2 || d.Events[0].Start != 1 || d.Events[1].Start != 2 {
		t.Errorf("events %+v, want those of starts 1 and 2", d.Events)
	}
	s.state.Store(s.state.Load() &^ writing)
	b := NewBatch(r)
	for i := 3; i < 6; i++ {
		b.Put(Call, int64(i), int64(i+1), -1, 0, NoPeer, -1, l)
	}
	n := b.a.n
	b.Flush()
	b.a.n = n // as if the process ended before Flush cleared the count
	d := readTest(t, path)
	if len(d.Events) != 6 || d.Total != 6 {
		t.Fatalf("%d events of %d, want 6 of 6: %+v", len(d.Events), d.Total, d.Events)
	}
	for i, e := range d.Events {
		if e.Start != int64(i) {
			t.Errorf("event %d starts at %d", i, e.Start)
		}
	}
}

// TestRingLabelsFull: labels past the file's label area are named by their index.
func TestRingLabelsFull(t *testing.T) {
	r, path := mapTest(t, 4)
	long := strings.Repeat("x", MaxLabelLen)
	var last uint16
	for i := range ringLabelBytes/(MaxLabelLen+2) + 2 {
		last, _ = r.Label(strconv.Itoa(i) + long[:MaxLabelLen-8])
	}
	r.Record(Event{Kind: Call, Start: 1, End: 2, Label: last, Peer: NoPeer, Tag: -1})
	d := readTest(t, path)
	if got, want := d.Labels[last], "label "+strconv.Itoa(int(last)); got != want || !strings.HasPrefix(d.Labels[0], "0x") {
		t.Errorf("label %d read as %q, want %q; label 0 %.8q", last, got, want, d.Labels[0])
	}
}

func TestReadRingRejects(t *testing.T) {
	_, path := mapTest(t, 4)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     bad(func(b []byte) { b[0] = 'X' }),
		"version":   bad(func(b []byte) { b[hVersion] = 9 }),
		"truncated": good[:len(good)-1],
		"slots":     bad(func(b []byte) { binary.NativeEndian.PutUint32(b[hSlots:], 6) }),
		"labels":    bad(func(b []byte) { binary.NativeEndian.PutUint32(b[hLabels:], MaxLabels+1) }),
	} {
		if _, err := ReadRing(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: error %v, want ErrFormat", name, err)
		}
	}
}

// TestRingOutlivesProcess records into a ring file in a child process that then crashes
// with events still in its batch, and reads every one of them back.
func TestRingOutlivesProcess(t *testing.T) {
	if path := os.Getenv("TRACE_RING_CHILD"); path != "" {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			os.Exit(3)
		}
		r, err := MapRecorder(5, 64, f)
		if err != nil {
			os.Exit(4)
		}
		l, _ := r.Label("before the crash")
		for i := range 10 {
			r.Record(Event{Kind: Region, Start: r.Stamp(), End: r.Stamp(), Label: l, Peer: NoPeer, Tag: int32(i)})
		}
		b := NewBatch(r)
		b.Put(Call, r.Stamp(), r.Stamp(), -1, 0, NoPeer, 10, l)
		panic("crash on purpose")
	}
	path := filepath.Join(t.TempDir(), "ring")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRingOutlivesProcess$")
	cmd.Env = append(os.Environ(), "TRACE_RING_CHILD="+path)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "crash on purpose") {
		t.Fatalf("the child did not crash: %v\n%s", err, out)
	}
	d := readTest(t, path)
	if d.Rank != 5 || len(d.Events) != 11 || d.Labels[0] != "before the crash" {
		t.Fatalf("rank %d, %d events, labels %q; want rank 5, 11 events", d.Rank, len(d.Events), d.Labels)
	}
	for i, e := range d.Events {
		if e.Tag != int32(i) || e.Start < 0 || (i > 0 && e.Start < d.Events[i-1].End) {
			t.Errorf("event %d: %+v out of order", i, e)
		}
	}
}

// FuzzReadRing checks that ReadRing never panics, and that a dump it returns encodes.
func FuzzReadRing(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "ring")
	fh, err := os.Create(path)
	if err != nil {
		f.Fatal(err)
	}
	r, err := MapRecorder(1, 4, fh)
	fh.Close()
	if err != nil {
		f.Fatal(err)
	}
	l, _ := r.Label("Send")
	r.Record(Event{Kind: Send, Start: 1, End: 2, Label: l, Peer: 0, Tag: 1, Flow: 1})
	NewBatch(r).Put(Recv, 3, 4, 8, 0, 0, 1, l)
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	unmap(r.file.mem)
	f.Add(good)
	f.Add(good[:ringHeaderLen])
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ReadRing(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		if _, err := AppendDump(nil, d); err != nil {
			t.Fatalf("the ring file's dump does not encode: %v", err)
		}
	})
}
