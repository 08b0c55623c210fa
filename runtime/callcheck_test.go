package runtime_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// TestCallCheck runs GORMA_CHECK=1's exchange of collective call signatures on 5 ranks
// and on a Split of them: equal calls pass at every rank; one rank's other operator, and
// one rank's other call, fail at every rank with a *MismatchError that names this rank's
// call and one of the differing rank's (or, at that rank, one of the others'), in job
// ranks.
func TestCallCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	j, err := runtimetest.Start(ctx, 5, runtimetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	sum := substrate.CallSig{Call: "Allreduce", Count: 4, Type: "float64", Op: "sum", Root: -1}
	max := sum
	max.Op = "max"
	bcast := substrate.CallSig{Call: "Bcast", Count: 4, Type: "float64", Root: 2}
	tracks := make([]*substrate.Track, len(j.Worlds))
	for r, w := range j.Worlds {
		tracks[r] = substrate.NewTrack(w)
	}
	var seq uint64
	check := func(name string, tracks []*substrate.Track, jobRank []int, sigOf func(r int) substrate.CallSig, odd int) {
		t.Helper()
		seq++
		errs := make([]error, len(tracks))
		var wg sync.WaitGroup
		for r, tr := range tracks {
			wg.Go(func() {
				sig := sigOf(r)
				errs[r] = runtime.CheckCall(ctx, tr, seq, &sig)
			})
		}
		wg.Wait()
		for r, err := range errs {
			if odd < 0 {
				if err != nil {
					t.Errorf("%s: rank %d: %v, want nil", name, r, err)
				}
				continue
			}
			var me *runtime.MismatchError
			if !errors.As(err, &me) || !errors.Is(err, runtime.ErrMismatch) {
				t.Errorf("%s: rank %d: %v, want a *MismatchError", name, r, err)
				continue
			}
			wantOther := jobRank[odd]
			if r == odd {
				wantOther = me.Other // any other rank: its call is the others'
				if wantOther == jobRank[odd] {
					t.Errorf("%s: rank %d names itself as the other rank", name, r)
				}
			}
			if me.Rank != jobRank[r] || me.Other != wantOther || me.Seq != seq || me.Mine != sigOf(r) ||
				me.Theirs != sigOf(slices.Index(jobRank, me.Other)) {
				t.Errorf("%s: rank %d: %+v, want rank %d against rank %d", name, r, me, jobRank[r], wantOther)
			}
		}
	}
	all := []int{0, 1, 2, 3, 4}
	check("equal", tracks, all, func(int) substrate.CallSig { return sum }, -1)
	check("operator", tracks, all, func(r int) substrate.CallSig {
		if r == 3 {
			return max
		}
		return sum
	}, 3)
	check("call", tracks, all, func(r int) substrate.CallSig {
		if r == 0 {
			return bcast
		}
		return sum
	}, 0)
	check("equal again", tracks, all, func(int) substrate.CallSig { return bcast }, -1)

	// A Split: the odd ranks, members 0 and 1 are job ranks 1 and 3.
	subs := make([]*runtime.World, 5)
	errs := make(chan error, 5)
	for r, w := range j.Worlds {
		go func() {
			var err error
			subs[r], err = w.Split(ctx, r%2, r)
			errs <- err
		}()
	}
	for range 5 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	odd := []*substrate.Track{substrate.NewTrack(subs[1]), substrate.NewTrack(subs[3])}
	check("split", odd, []int{1, 3}, func(r int) substrate.CallSig {
		if r == 1 {
			return max
		}
		return sum
	}, 1)
	if err := (&runtime.MismatchError{Comm: "World", Seq: 2, Rank: 3, Other: 0, Mine: max, Theirs: bcast}).Error(); err !=
		"rank 0 is in Bcast #2 (4 float64, root=2, World), rank 3 in Allreduce #2 (4 float64, max, World): "+
			"every rank of World must make its collective calls in the same order, with the same count, type, operator and root" {
		t.Errorf("MismatchError text: %s", err)
	}
}
