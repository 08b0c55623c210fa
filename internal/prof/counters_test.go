package prof

import (
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestBin(t *testing.T) {
	// Open MPI 4.1.4 put a 1000-byte message in bin 10, 32 bytes in bin 6 and
	// empty messages in bin 0 (testdata/ompi/enable2/prof.0.prof, E 0 3 and E 0 1).
	for _, c := range []struct {
		n    uint64
		want int
	}{{0, 0}, {1, 1}, {2, 2}, {3, 2}, {16, 5}, {31, 5}, {32, 6}, {1000, 10}, {1024, 11}, {1<<48 - 2, 48}, {1 << 63, 64}, {1<<64 - 1, 64}} {
		if got := Bin(c.n); got != c.want {
			t.Errorf("Bin(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestCountersSnapshot(t *testing.T) {
	c := New(1, 3)
	c.Send(0, 1000)
	c.Send(0, 0)
	c.Send(2, 16)
	c.Coll(2, 2048)
	c.PutTo(2, 512)
	c.GetFrom(0, 64)
	c.GetFrom(0, 64)
	c.Call(CallAllreduce, 2048, 3*time.Millisecond)
	c.Call(CallAllreduce, 2048, time.Millisecond)
	r := c.Snapshot()
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want []uint64) {
		t.Helper()
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s = %v, want %v", name, got, want)
				return
			}
		}
	}
	check("p2p bytes", r.P2P.Bytes, []uint64{1000, 0, 16})
	check("p2p msgs", r.P2P.Msgs, []uint64{2, 0, 1})
	check("coll bytes", r.Coll.Bytes, []uint64{0, 0, 2048})
	check("put bytes", r.Put.Bytes, []uint64{0, 0, 512})
	check("get", append(r.Get.Bytes, r.Get.Msgs...), []uint64{128, 0, 0, 2, 0, 0})
	if r.Hist[0][0] != 1 || r.Hist[0][10] != 1 || r.Hist[2][5] != 1 || r.Hist[1] != nil {
		t.Errorf("histograms %v", r.Hist)
	}
	want := CallStat{Kind: "Allreduce", Calls: 2, Bytes: 4096, Nanos: int64(4 * time.Millisecond)}
	if len(r.Calls) != 1 || r.Calls[0] != want {
		t.Errorf("calls %+v, want [%+v]", r.Calls, want)
	}
}

func TestTimer(t *testing.T) {
	c := New(0, 1)
	tm := c.Start(CallBarrier)
	time.Sleep(time.Millisecond)
	tm.Stop(0)
	r := c.Snapshot()
	if len(r.Calls) != 1 || r.Calls[0].Calls != 1 || r.Calls[0].Nanos < int64(time.Millisecond) {
		t.Errorf("calls %+v, want one Barrier of at least 1ms", r.Calls)
	}
}

// TestNilCounters: a nil *Counters is what the runtime holds with profiling off.
func TestNilCounters(t *testing.T) {
	var c *Counters
	c.Send(5, 1)
	c.Coll(5, 1)
	c.PutTo(5, 1)
	c.GetFrom(5, 1)
	c.Call(CallSend, 1, time.Second)
	c.Start(CallSend).Stop(1)
	if n := testing.AllocsPerRun(100, func() { c.Start(CallRecv).Stop(8); c.Send(0, 8) }); n != 0 {
		t.Errorf("nil counters allocate %v times per call", n)
	}
}

func TestRecordingAllocatesNothing(t *testing.T) {
	c := New(0, 4)
	n := testing.AllocsPerRun(1000, func() {
		tm := c.Start(CallSend)
		c.Send(1, 100)
		c.Coll(2, 100)
		c.PutTo(3, 100)
		c.GetFrom(3, 100)
		tm.Stop(100)
	})
	if n != 0 {
		t.Errorf("recording allocates %v times per call", n)
	}
}

// TestConcurrentRecording runs under -race in make race: adds from many
// goroutines and a Snapshot at the same time lose nothing.
func TestConcurrentRecording(t *testing.T) {
	c := New(0, 2)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Send(1, 3)
				c.Call(CallSend, 3, 1)
			}
		})
	}
	wg.Go(func() { c.Snapshot() })
	wg.Wait()
	r := c.Snapshot()
	if r.P2P.Msgs[1] != 8000 || r.P2P.Bytes[1] != 24000 || r.Hist[1][2] != 8000 || r.Calls[0].Nanos != 8000 {
		t.Errorf("after 8000 sends: msgs %d bytes %d hist %d nanos %d", r.P2P.Msgs[1], r.P2P.Bytes[1], r.Hist[1][2], r.Calls[0].Nanos)
	}
}

func BenchmarkSend(b *testing.B) {
	c := New(0, 64)
	for i := 0; b.Loop(); i++ {
		c.Send(i&63, 8)
	}
}

func BenchmarkTimer(b *testing.B) {
	c := New(0, 64)
	for b.Loop() {
		c.Start(CallAllreduce).Stop(8)
	}
}

func BenchmarkNilTimer(b *testing.B) {
	var c *Counters
	for b.Loop() {
		c.Start(CallAllreduce).Stop(8)
		c.Send(1, 8)
	}
}

// TestSampledTime gives calls known durations through Begin and End: the first
// ExactCalls are timed exactly, and the estimate of the rest stays within maxErr for
// patterns of several periods, including ones that divide SampleEvery.
func TestSampledTime(t *testing.T) {
	const maxErr = 0.02 // the estimate's relative error
	for _, period := range []int{1, 2, 3, 4, 16, 17, 64} {
		c := New(0, 1)
		const calls = ExactCalls + 200_000
		var want, timed int64
		for i := range calls {
			d := time.Microsecond
			if i%period == 0 {
				d = 4 * time.Microsecond // one slow call per period
			}
			want += int64(d)
			w := c.Begin(CallRecv)
			if i < ExactCalls && w != 1 {
				t.Fatalf("call %d: weight %d, want 1 while exact", i, w)
			}
			if w != 0 {
				timed++
			}
			c.End(CallRecv, 8, d, w)
		}
		r := c.Snapshot()
		got := r.Calls[0].Nanos
		if diff := float64(got-want) / float64(want); diff < -maxErr || diff > maxErr {
			t.Errorf("period %d: estimated %d ns, want %d (off by %.2f%%)", period, got, want, 100*diff)
		}
		if frac := float64(timed-ExactCalls) / (calls - ExactCalls); frac < 0.9/SampleEvery || frac > 1.1/SampleEvery {
			t.Errorf("period %d: timed %.4f of the later calls, want about 1/%d", period, frac, SampleEvery)
		}
		if r.Calls[0].Calls != calls || r.Calls[0].Bytes != 8*calls {
			t.Errorf("period %d: %d calls %d bytes, want %d and %d", period, r.Calls[0].Calls, r.Calls[0].Bytes, calls, 8*calls)
		}
	}
}

// TestLocalFolds counts through a Local and through the Counters: Fold adds the first
// into the second, and the sum is what counting all in one would give.
func TestLocalFolds(t *testing.T) {
	c, all := New(1, 3), New(1, 3)
	l := c.NewLocal()
	for i := range 3000 {
		n := 1 << (i % 12)
		l.Send(i%3, n)
		all.Send(i%3, n)
		w := l.Begin(CallSend)
		l.End(CallSend, n, time.Microsecond, w)
		all.Call(CallSend, n, 0)
	}
	c.Send(2, 5)
	all.Send(2, 5)
	l.Coll(0, 64)
	l.Coll(0, 64)
	all.Coll(0, 128)
	all.Coll(0, 0) // a message more, no bytes
	c.Fold(l)
	c.Fold(l) // a second fold adds nothing
	got, want := c.Snapshot(), all.Snapshot()
	if !reflect.DeepEqual(got.P2P, want.P2P) || !reflect.DeepEqual(got.Hist, want.Hist) || !reflect.DeepEqual(got.Coll, want.Coll) {
		t.Errorf("p2p %+v hist %v coll %+v, want %+v %v %+v", got.P2P, got.Hist, got.Coll, want.P2P, want.Hist, want.Coll)
	}
	if g, w := got.Calls[0], want.Calls[0]; g.Calls != w.Calls || g.Bytes != w.Bytes || g.Nanos <= 0 {
		t.Errorf("calls %+v, want %d calls of %d bytes with a time", g, w.Calls, w.Bytes)
	}
	var nilL *Local
	nilL.Send(0, 1)
	nilL.End(CallSend, 1, 0, nilL.Begin(CallSend))
}

// TestRankCall: Rank.Call finds a kind's totals, and gives zero for a kind not called.
func TestRankCall(t *testing.T) {
	c := New(0, 2)
	d := c.Begin(CallBarrier)
	c.End(CallBarrier, 0, time.Microsecond, d)
	r := c.Snapshot()
	if got := r.Call(CallBarrier); got.Calls != 1 || got.Kind != "Barrier" {
		t.Errorf("Call(Barrier) = %+v, want one call", got)
	}
	if got := r.Call(CallNeighborAlltoall); got.Calls != 0 || got.Kind != "NeighborAlltoall" {
		t.Errorf("Call(NeighborAlltoall) = %+v, want none", got)
	}
}
