package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/hang"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestHangReport: asked by the agent (pmi.ReportAsked), each rank reports what its
// goroutines are blocked in: a Recv naming its source, tag and World, a Barrier, a
// Probe of any source on a Dup'd World, with how long; with stacks when asked. Calls
// that return leave the report.
func TestHangReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 3, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	w0, w1 := j.Worlds[0], j.Worlds[1]
	d2, err := dupAll(ctx, j.Worlds)
	if err != nil {
		t.Fatal(err)
	}
	stuck, unstick := context.WithCancel(ctx)
	done := make(chan error, 3)
	go func() { _, err := runtime.Recv(stuck, w0, make([]int64, 1), 1, 7); done <- err }()
	go func() { done <- runtime.Barrier(stuck, w1) }()
	go func() { _, err := runtime.Probe(stuck, d2[2], runtime.AnySource, runtime.AnyTag); done <- err }()
	time.Sleep(500 * time.Millisecond) // blocked for a while: the coarse clock has ticked
	reps, err := j.AskReports(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range []string{"Recv(src=1, tag=7, World)", "Barrier(World)", "Probe(src=any, tag=any, World#1)"} {
		rep, err := hang.ParseReport(reps[r])
		if err != nil || rep.Rank != r || rep.State != hang.Blocked || len(rep.Records) != 1 ||
			rep.Records[0].String() != want || rep.Records[0].Since < 300*time.Millisecond || !strings.Contains(rep.Stacks, "goroutine ") {
			t.Errorf("rank %d reported %.300q (%v, %v), want %s blocked for 0.3 s or more, with stacks", r, reps[r], rep.Records, err, want)
		}
	}
	unstick()
	for range 3 {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("a blocked call ended with %v, want context.Canceled", err)
		}
	}
	reps, err = j.AskReports(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for r, text := range reps {
		if rep, err := hang.ParseReport(text); err != nil || rep.State != hang.Running || len(rep.Records) != 0 || rep.Stacks != "" {
			t.Errorf("rank %d, no longer blocked, reported %q (%v)", r, text, err)
		}
	}
}

// dupAll runs Dup on every World at once.
func dupAll(ctx context.Context, ws []*runtime.World) ([]*runtime.World, error) {
	out := make([]*runtime.World, len(ws))
	errs := make(chan error, len(ws))
	for r, w := range ws {
		go func() {
			var err error
			out[r], err = w.Dup()
			errs <- err
		}()
	}
	var err error
	for range ws {
		err = errors.Join(err, <-errs)
	}
	return out, err
}

// TestHangReportNamesCall: a hang report names the call the program made, not the
// engine's kind of request: Ssend, Rsend and Sendrecv as such, a Wait on an Issend's
// Request as Issend, BufferDetach's wait for a Bsend as Bsend, WaitSome and Mprobe. The
// calls return once rank 1 makes the other side of each.
func TestHangReportNamesCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	w0, w1 := j.Worlds[0], j.Worlds[1]
	const big = 1 << 20 // a rendezvous: a blocking send waits for the receiver
	if err := runtime.BufferAttach(w0, make([]byte, big+runtime.BsendOverhead)); err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		want string
		run  func() error
	}{
		{"Ssend(dst=1, tag=3, World)", func() error { return runtime.Ssend(ctx, w0, []int64{1}, 1, 3) }},
		{"Rsend(dst=1, tag=4, World)", func() error { return runtime.Rsend(ctx, w0, make([]byte, big), 1, 4) }},
		{"Sendrecv(peer=1, tag=6, World)", func() error {
			_, err := runtime.Sendrecv(ctx, w0, []int64{1}, 1, 5, make([]int64, 1), 1, 6)
			return err
		}},
		{"Issend(dst=1, tag=7, World)", func() error {
			r, err := runtime.Issend(w0, []int64{1}, 1, 7)
			if err == nil {
				_, err = r.Wait(ctx)
			}
			return err
		}},
		{"Bsend(dst=1, tag=8, World)", func() error {
			if err := runtime.Bsend(w0, make([]byte, big), 1, 8); err != nil {
				return err
			}
			_, err := runtime.BufferDetach(ctx, w0)
			return err
		}},
		{"Mprobe(src=1, tag=9, World)", func() error {
			m, _, err := runtime.Mprobe(ctx, w0, 1, 9)
			if err == nil {
				_, err = runtime.Mrecv(ctx, m, make([]int64, 1))
			}
			return err
		}},
		{"WaitSome(World)", func() error {
			r, err := runtime.Irecv(w0, make([]int64, 1), 1, 10)
			if err == nil {
				_, err = runtime.WaitSome(ctx, []*runtime.Request{r}, nil)
			}
			return err
		}},
	}
	done := make(chan error, len(calls))
	for _, c := range calls {
		go func() { done <- c.run() }()
	}
	var want []string
	for _, c := range calls {
		want = append(want, c.want)
	}
	slices.Sort(want)
	var got []string
	for !slices.Equal(got, want) { // until every call is blocked
		if ctx.Err() != nil {
			t.Fatalf("rank 0 reported %q, want the records %q", got, want)
		}
		reps, err := j.AskReports(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := hang.ParseReport(reps[0])
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, r := range rep.Records {
			got = append(got, r.String())
		}
		slices.Sort(got)
		time.Sleep(10 * time.Millisecond)
	}
	// Rank 1 makes the other side of each call.
	peer := []func() error{
		func() error { _, err := runtime.Recv(ctx, w1, make([]int64, 1), 0, 3); return err },
		func() error { _, err := runtime.Recv(ctx, w1, make([]byte, big), 0, 4); return err },
		func() error { _, err := runtime.Recv(ctx, w1, make([]int64, 1), 0, 5); return err },
		func() error { return runtime.Send(ctx, w1, []int64{1}, 0, 6) },
		func() error { _, err := runtime.Recv(ctx, w1, make([]int64, 1), 0, 7); return err },
		func() error { _, err := runtime.Recv(ctx, w1, make([]byte, big), 0, 8); return err },
		func() error { return runtime.Send(ctx, w1, []int64{1}, 0, 9) },
		func() error { return runtime.Send(ctx, w1, []int64{1}, 0, 10) },
	}
	for i, f := range peer {
		if err := f(); err != nil {
			t.Fatalf("rank 1, step %d: %v", i, err)
		}
	}
	for range calls {
		if err := <-done; err != nil {
			t.Errorf("a call of rank 0 failed: %v", err)
		}
	}
}
