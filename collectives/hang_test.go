package collectives

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/hang"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestHangReportNamesCollectives: a rank blocked in a collective reports the collective
// and its number on the World, not the collective's own point-to-point traffic.
func TestHangReportNamesCollectives(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	stuck, unstick := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- Allreduce(stuck, j.Worlds[0], []float64{1}, make([]float64, 1), Sum[float64]()) }()
	go func() {
		_, err := runtime.Recv(stuck, j.Worlds[1], make([]int64, 1), 0, 5)
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	reps, err := j.AskReports(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range []string{"Allreduce #1 (1 float64, sum, World)", "Recv(src=0, tag=5, World)"} {
		if rep, err := hang.ParseReport(reps[r]); err != nil || len(rep.Records) != 1 || rep.Records[0].String() != want {
			t.Errorf("rank %d reported %q (%v), want %s alone", r, reps[r], err, want)
		}
	}
	unstick()
	<-done
	<-done
}

// TestHangReportDone: a rank's report lists the collective calls it returned from, with
// their numbers and details, so that a rank that returned early from a call that did not
// match shows which call it was.
func TestHangReportDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	done := make(chan error, 2)
	for _, w := range j.Worlds {
		go func() {
			err := Bcast(ctx, w, make([]float64, 4), 0)
			if err == nil {
				err = Reduce(ctx, w, make([]int32, 2), make([]int32, 2), Max[int32](), 1)
			}
			done <- err
		}()
	}
	for range j.Worlds {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	reps, err := j.AskReports(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Bcast #1 (4 float64, root=0, World)", "Reduce #2 (2 int32, max, root=1, World)"}
	for r := range j.Worlds {
		rep, err := hang.ParseReport(reps[r])
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range rep.Done {
			got = append(got, d.String())
		}
		if !slices.Equal(got, want) {
			t.Errorf("rank %d returned from %q, want %q", r, got, want)
		}
	}
}

// TestHangReportDoneBounded: a rank whose Worlds hold more ended calls than a report can
// carry (pmi.MaxReport) leaves the oldest out, and its report still parses.
func TestHangReportDoneBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	const worlds = 80 // 4 ended calls each: 320 Done lines of about 60 bytes
	done := make(chan error, 2)
	for _, w := range j.Worlds {
		go func() {
			for range worlds {
				d, err := w.Dup()
				for k := 0; k < 4 && err == nil; k++ {
					err = Bcast(ctx, d, make([]float64, 4), 0)
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range j.Worlds {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	reps, err := j.AskReports(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for r, text := range reps {
		rep, err := hang.ParseReport(text)
		if err != nil {
			t.Fatalf("rank %d's report of %d bytes: %v", r, len(text), err)
		}
		if len(rep.Done) == 0 || len(rep.Done) >= 4*worlds {
			t.Errorf("rank %d's report holds %d Done records, want some, fewer than %d", r, len(rep.Done), 4*worlds)
		}
	}
}
