package window_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// TestHangReportNamesWindowCalls: window calls are named in hang reports, and numbered
// with the collectives among the World's collective calls, so that a rank in Fence and a
// rank in Allreduce at the same point of the program show the same number.
func TestHangReportNamesWindowCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	wins := make([]*window.Win[int64], 2)
	errs := make(chan error, 2)
	for r, w := range j.Worlds {
		go func() {
			var err error
			wins[r], err = window.Allocate[int64](ctx, w, 8)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	stuck, unstick := context.WithCancel(ctx)
	go func() { errs <- wins[0].Fence(stuck, 0) }()
	go func() {
		errs <- collectives.Allreduce(stuck, j.Worlds[1], []float64{1}, make([]float64, 1), collectives.Sum[float64]())
	}()
	time.Sleep(500 * time.Millisecond)
	reps, err := j.AskReports(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range []string{"\nwindow.Fence #2(World) for ", "\nAllreduce #2(World) for "} {
		if !strings.Contains(reps[r], want) {
			t.Errorf("rank %d reported %q, want %q", r, reps[r], want)
		}
	}
	unstick()
	<-errs
	<-errs
}
