package collectives

import (
	"context"
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
