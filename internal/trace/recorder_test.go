package trace

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestRingKeepsLastN(t *testing.T) {
	r := nsRecorder(0, 8)
	if r.Capacity() != 8 {
		t.Fatalf("capacity %d, want 8", r.Capacity())
	}
	l, _ := r.Label("Send")
	for i := range 20 {
		r.Record(Event{Kind: Send, Start: int64(i), End: int64(i + 1), Label: l, Peer: 1, Tag: -1, Bytes: 8, Flow: uint64(i + 1)})
	}
	d := r.Snapshot()
	if d.Total != 20 || d.Lost != 0 || len(d.Events) != 8 || d.Dropped() != 12 {
		t.Fatalf("total %d lost %d events %d dropped %d; want 20 0 8 12", d.Total, d.Lost, len(d.Events), d.Dropped())
	}
	for k, e := range d.Events {
		if want := int64(12 + k); e.Start != want || d.Seqs[k] != uint64(want) {
			t.Errorf("event %d: start %d seq %d, want %d", k, e.Start, d.Seqs[k], want)
		}
	}
}

func TestCapacityRoundsUp(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, 2}, {1, 2}, {3, 4}, {1000, 1024}} {
		if got := NewRecorder(0, c.in).Capacity(); got != c.want {
			t.Errorf("NewRecorder(0, %d).Capacity() = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestLabels(t *testing.T) {
	r := NewRecorder(0, 2)
	a, _ := r.Label("a")
	b, _ := r.Label("b")
	a2, _ := r.Label("a")
	if a != 0 || b != 1 || a2 != 0 {
		t.Fatalf("labels %d %d %d, want 0 1 0", a, b, a2)
	}
}

func TestRecordAllocatesNothing(t *testing.T) {
	r := NewRecorder(0, 64)
	e := Event{Kind: Call, Peer: NoPeer, Tag: -1, Bytes: -1}
	if n := testing.AllocsPerRun(1000, func() {
		e.Start = r.Stamp()
		e.End = r.Stamp()
		r.Record(e)
	}); n != 0 {
		t.Fatalf("Record allocates %v times per call", n)
	}
}

// TestConcurrentRecord records from several goroutines while another takes snapshots;
// under -race it checks that the ring's slots are handed over without a data race.
func TestConcurrentRecord(t *testing.T) {
	const writers, each = 4, 2000
	r := NewRecorder(5, 64)
	if _, err := r.Label("Call"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			checkSnapshot(t, r.Snapshot())
		}
	}()
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r.Record(Event{Kind: Call, Start: int64(i), End: int64(i), Peer: int32(w), Tag: -1, Bytes: -1})
			}
		})
	}
	wg.Wait()
	close(stop)
	<-done
	d := r.Snapshot()
	checkSnapshot(t, d)
	if d.Total != writers*each {
		t.Fatalf("total %d, want %d", d.Total, writers*each)
	}
	if uint64(len(d.Events))+d.Lost < 1 || len(d.Events) > 64 {
		t.Fatalf("%d events, %d lost", len(d.Events), d.Lost)
	}
}

// checkSnapshot checks what any snapshot must satisfy: ascending indexes, counts in
// range, and a form that encodes and decodes.
func checkSnapshot(t *testing.T, d Dump) {
	t.Helper()
	if err := d.check(); err != nil {
		t.Error(err)
	}
}

// TestClockAgreesWithMonotonic checks that stamps converted by Exact fall between
// readings of the monotonic clock taken around them.
func TestClockAgreesWithMonotonic(t *testing.T) {
	const slack = int64(10 * time.Microsecond)
	c := NewClock()
	for range 100 {
		before := c.Now()
		s := c.Stamp()
		after := c.Now()
		ns := c.Exact()(s)
		// The rate's error over the clock's life is a few reads of the clock; slack
		// allows many.
		if ns < before-slack || ns > after+slack {
			t.Fatalf("stamp %d converts to %d ns, outside [%d, %d]", s, ns, before, after)
		}
		if d := c.Nanos(s); d < 0 {
			t.Fatalf("Nanos(%d) = %d, want >= 0", s, d)
		}
	}
}

func BenchmarkClock(b *testing.B) {
	c := NewClock()
	b.Run("Stamp", func(b *testing.B) {
		var s int64
		for b.Loop() {
			s += c.Stamp()
		}
		sink = s
	})
	b.Run("Now", func(b *testing.B) {
		var s int64
		for b.Loop() {
			s += c.Now()
		}
		sink = s
	})
}

var sink int64

// nsRecorder is NewRecorder with a clock whose stamps are nanoseconds, so that a test's
// made-up times come out of Snapshot as given.
func nsRecorder(rank, capacity int) *Recorder {
	r := NewRecorder(rank, capacity)
	r.clock = &Clock{origin: r.clock.origin, scale: 1}
	return r
}

// BenchmarkRecord records into a ring of the runtime's default size, so that each event
// lands in memory the ring has not touched for a lap, as on a long job.
func BenchmarkRecord(b *testing.B) {
	r := NewRecorder(0, 1<<17)
	e := Event{Kind: Send, Peer: 1, Tag: 0, Bytes: 8, Flow: 1}
	for b.Loop() {
		e.Start = int64(e.Flow)
		e.Flow++
		r.Record(e)
	}
}

// TestCounterUsable: the counter is a clock where the kernel keeps time by it, or offers
// it on a processor that says its counter runs at a constant rate in every power state.
func TestCounterUsable(t *testing.T) {
	steady := []string{"fpu", "tsc", "constant_tsc", "nonstop_tsc"}
	for _, c := range []struct {
		current, available string
		flags              []string
		want               bool
	}{
		{"tsc\n", "tsc kvm-clock \n", nil, true},
		{"kvm-clock\n", "kvm-clock tsc acpi_pm \n", steady, true},
		{"kvm-clock\n", "kvm-clock acpi_pm \n", steady, false},                      // withdrawn: unstable
		{"kvm-clock\n", "kvm-clock tsc \n", []string{"tsc", "constant_tsc"}, false}, // stops in deep sleep
		{"xen\n", "xen tsc hpet acpi_pm \n", []string{"tsc", "nonstop_tsc"}, false}, // its rate varies
		{"hpet\n", "tsc-early hpet \n", steady, false},                              // not tsc
		{"", "", steady, false},                                                     // no sysfs
	} {
		if got := CounterUsable(c.current, c.available, c.flags); got != c.want {
			t.Errorf("CounterUsable(%q, %q, %q) = %v, want %v", c.current, c.available, c.flags, got, c.want)
		}
	}
	info := "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n\nprocessor\t: 1\nflags\t\t: fpu\n"
	if got := cpuFlags(info); !slices.Equal(got, []string{"fpu", "tsc", "constant_tsc", "nonstop_tsc"}) {
		t.Errorf("cpuFlags = %q, want the first processor's", got)
	}
}
