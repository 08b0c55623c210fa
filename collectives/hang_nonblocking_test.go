package collectives

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/hang"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// TestHangReportNamesNonblocking: a rank whose nonblocking call and persistent call
// wait for a peer that never makes them reports each under its own name (Iallreduce,
// AllreduceInit): the nonblocking one with its number on the World, the persistent one,
// which runs on the World's Dup for persistent calls, with its Request's number (1<<12)
// and its Start's (1); each ends when its context does.
func TestHangReportNamesNonblocking(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	w := j.Worlds[0]
	stuck1, unstick1 := context.WithCancel(ctx)
	stuck2, unstick2 := context.WithCancel(ctx)
	nb := Iallreduce(stuck1, w, []float64{1}, make([]float64, 1), Sum[float64]())
	p := AllreduceInit(w, nil, make([]int64, 2), Max[int64]())
	if err := p.Start(stuck2); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		want   string
		unstop context.CancelFunc
		req    *Request
	}{
		{"Iallreduce #1 (1 float64, sum, World)", unstick1, nb},
		{"AllreduceInit #4097 (2 int64, max, World#1)", unstick2, p},
	} {
		got := ""
		for ctx.Err() == nil && got != step.want {
			reps, err := j.AskReports(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := hang.ParseReport(reps[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range rep.Records {
				if rec.String() == step.want {
					got = step.want
				}
			}
			if got != step.want {
				time.Sleep(10 * time.Millisecond) // the worker has not reached the call yet
			}
		}
		if got != step.want {
			t.Fatalf("rank 0 reported %q, want %s", got, step.want)
		}
		step.unstop()
		if err := step.req.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Wait returned %v, want context.Canceled", step.want, err)
		}
	}
}

// TestNonblockingNumberedAtStart: nonblocking calls take their numbers among the World's
// collective calls when they are started, in program order, whether or not the worker
// has reached them: a call numbered after them on the World's count (a window call does
// so) gets the next number at every rank. A persistent Start takes none (its calls run
// on the World's Dup for them). Rank 0's calls wait for rank 1, which makes none of them.
func TestNonblockingNumberedAtStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 2, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	w := j.Worlds[0]
	tr := substrate.NewTrack(w) // as package window's
	defer tr.Close()
	stuck, unstick := context.WithCancel(ctx)
	p := BarrierInit(w)
	reqs := []*Request{Iallreduce(stuck, w, nil, make([]float64, 1), Sum[float64]()), Ibarrier(stuck, w)}
	if err := p.Start(stuck); err != nil {
		t.Fatal(err)
	}
	if n := tr.Next(); n != 3 {
		t.Errorf("the call after two nonblocking ones and a Start is number %d, want 3", n)
	}
	unstick()
	for i, r := range append(reqs, p) {
		if err := r.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("request %d: %v, want context.Canceled", i, err)
		}
	}
	if err := p.Free(); err != nil {
		t.Error(err)
	}
}
