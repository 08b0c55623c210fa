package window_test

import (
	"context"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/hang"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// TestHangReportNamesWindowCalls: window calls are named in hang reports, and numbered
// with the collectives among the World's collective calls, so that a rank in Fence and a
// rank in Allreduce at the same point of the program show the same number; a lazy
// window's Fence (which synchronizes through the collectives' Barrier on the window's own
// World) is named the same way.
func TestHangReportNamesWindowCalls(t *testing.T) {
	t.Run("eager", testHangReportNamesWindowCalls)
	t.Run("lazy", func(t *testing.T) {
		t.Setenv("GORMA_WINDOW_EAGER", "0")
		testHangReportNamesWindowCalls(t)
	})
}

func testHangReportNamesWindowCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
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
	var all []hang.Report
	for r, want := range []string{"window.Fence #2 (win1, World)", "Allreduce #2 (1 float64, sum, World)"} {
		rep, err := hang.ParseReport(reps[r])
		if err != nil || len(rep.Records) != 1 || rep.Records[0].String() != want {
			t.Errorf("rank %d reported %q (%v), want %s", r, reps[r], err, want)
		}
		all = append(all, rep)
	}
	// From these reports the launcher names the mismatch.
	if got := hang.Diagnose(all); len(got) == 0 || got[0] != "mismatch: rank 0 is in window.Fence #2, rank 1 in Allreduce #2 on World" {
		t.Errorf("diagnosis %q", got)
	}
	unstick()
	<-errs
	<-errs
}
