package runtime_test

import (
	"context"
	"errors"
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
