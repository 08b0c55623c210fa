package topo_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/hang"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/topo"
)

// TestNeighborHangReport: a rank blocked in a neighbourhood collective whose neighbour
// never makes it reports the call, numbered among its World's collective calls, and
// not the messages it waits for; when its ctx ends the call returns ctx's error.
func TestNeighborHangReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	carts := make([]*topo.Cart, 2)
	errs := make(chan error, 2)
	for r, w := range j.Worlds {
		go func() {
			var err error
			carts[r], err = topo.NewCart(ctx, w, []int{2}, []bool{true}, false)
			errs <- err
		}()
	}
	if err := errors.Join(<-errs, <-errs); err != nil {
		t.Fatal(err)
	}
	stuck, unstick := context.WithCancel(ctx)
	go func() { errs <- topo.NeighborAllgather(stuck, carts[0], []int64{1}, make([]int64, 2)) }()
	go func() {
		_, err := runtime.Recv(stuck, j.Worlds[1], make([]int64, 1), 0, 5)
		errs <- err
	}()
	// The Cart's World is named by its context, which the test does not fix.
	want := regexp.MustCompile(`^\[topo\.NeighborAllgather #1 \(int64, World#[0-9]+\) Recv\(src=0, tag=5, World\)\]$`)
	var got []string
	for ctx.Err() == nil && !want.MatchString(fmt.Sprint(got)) {
		reps, err := j.AskReports(ctx, false)
		if err != nil {
			t.Fatal(err, got)
		}
		got = got[:0]
		for _, text := range reps {
			rep, err := hang.ParseReport(text)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range rep.Records {
				got = append(got, rec.String())
			}
		}
	}
	if !want.MatchString(fmt.Sprint(got)) {
		t.Errorf("reports name %q, want %s", got, want)
	}
	unstick()
	for range 2 {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("a call unstuck by its ctx returned %v", err)
		}
	}
	for _, c := range carts {
		if err := c.World().Free(); err != nil {
			t.Error(err)
		}
	}
}
