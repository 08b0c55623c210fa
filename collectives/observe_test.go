package collectives

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/trace"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// observeEnv switches on the profile and the timeline of a test job's ranks.
func observeEnv(t *testing.T) map[string]string {
	return runtimetest.ObserveBoth(t.TempDir())
}

// collStep is one call of TestObserveCounts and the coll bytes it gives rank me's row
// for peer q (-1: no message to q).
type collStep struct {
	kind  prof.CallKind
	run   func(e rankEnv) error
	bytes func(me, q int) int // the call's bytes at me when q < 0
}

// TestObserveCounts: with the profile on, each call counts its data per member as Open
// MPI's coll monitoring does (design.md, "Profile and timeline"), one message per member
// it counts, and one call of its kind with this rank's bytes; the timeline holds a
// Collective event per call, labelled with the call and its algorithm.
func TestObserveCounts(t *testing.T) {
	const p, n = 4, 100
	f64 := elemSize[float64]()
	steps := []collStep{
		{prof.CallAllreduce, func(e rankEnv) error {
			return Allreduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64]())
		}, func(me, q int) int { return n * f64 }},
		{prof.CallBcast, func(e rankEnv) error { return Bcast(e.ctx, e.w, make([]int32, 10), 1) },
			func(me, q int) int {
				if q >= 0 && me != 1 {
					return -1
				}
				return 40
			}},
		{prof.CallReduce, func(e rankEnv) error { // counted at root, as Open MPI does
			return Reduce(e.ctx, e.w, make([]float64, 5), make([]float64, 5), Sum[float64](), 2)
		}, func(me, q int) int {
			if q >= 0 && me != 2 {
				return -1
			}
			return 5 * f64
		}},
		{prof.CallScan, func(e rankEnv) error { // to the ranks above
			return Scan(e.ctx, e.w, make([]int64, 3), make([]int64, 3), Sum[int64]())
		}, func(me, q int) int {
			if q >= 0 && q < me {
				return -1
			}
			return 24
		}},
		{prof.CallAlltoallv, func(e rankEnv) error { // rank d gets d+1 elements
			sc, rc := make([]int, p), make([]int, p)
			for i := range p {
				sc[i], rc[i] = i+1, e.r+1
			}
			return Alltoallv(e.ctx, e.w, make([]int64, 10), sc, make([]int64, p*(e.r+1)), rc)
		}, func(me, q int) int {
			if q < 0 {
				return 80
			}
			return 8 * (q + 1)
		}},
		{prof.CallGatherv, func(e rankEnv) error { // its own kind: rank d gives d+1 elements to root 1
			counts, displs := make([]int, p), make([]int, p)
			for i := range p {
				counts[i], displs[i] = i+1, i*(i+1)/2
			}
			return Gatherv(e.ctx, e.w, make([]int64, e.r+1), make([]int64, p*(p+1)/2), counts, displs, 1)
		}, func(me, q int) int {
			switch {
			case q < 0:
				return 8 * (me + 1)
			case me != 1:
				return -1
			}
			return 8 * (q + 1)
		}},
		{prof.CallAllgatherv, func(e rankEnv) error { // its own kind: rank d gives d+1 elements to all
			counts := make([]int, p)
			for i := range p {
				counts[i] = i + 1
			}
			return Allgatherv(e.ctx, e.w, make([]int64, e.r+1), make([]int64, p*(p+1)/2), counts)
		}, func(me, q int) int { return 8 * (me + 1) }},
		{prof.CallBarrier, func(e rankEnv) error { return Barrier(e.ctx, e.w) },
			func(me, q int) int { return 0 }},
		{prof.CallAllreduce, func(e rankEnv) error { // a queued call counts when it runs
			return Iallreduce(e.ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64]()).Wait(e.ctx)
		}, func(me, q int) int { return n * f64 }},
		{prof.CallAllreduce, func(e rankEnv) error { // a persistent call counts at each start
			r := AllreduceInit(e.w, make([]float64, n), make([]float64, n), Sum[float64]())
			defer r.Free()
			if err := r.Start(e.ctx); err != nil {
				return err
			}
			return r.Wait(e.ctx)
		}, func(me, q int) int { return n * f64 }},
	}
	opt := runtimetest.Options{Transport: "shm", Env: observeEnv(t)}
	runJob(t, p, opt, 30*time.Second, func(e rankEnv) error {
		o, members := substrate.Observe(e.w)
		switch {
		case o == nil || o.Prof == nil || o.Rec == nil:
			return fmt.Errorf("observer %v: want the profile and the timeline on", o)
		case members != nil:
			return fmt.Errorf("members %v of Init's World, want nil", members)
		}
		for i, st := range steps {
			before := o.Profile()
			if err := st.run(e); err != nil {
				return fmt.Errorf("step %d (%v): %w", i, st.kind, err)
			}
			if err := checkStep(before, o.Profile(), st, e.r, p); err != nil {
				return fmt.Errorf("step %d (%v): %w", i, st.kind, err)
			}
		}
		return checkTimeline(o.Timeline(), len(steps))
	})
}

// checkStep checks the coll row and the calls that one step added at rank me.
func checkStep(before, after *prof.Rank, st collStep, me, p int) error {
	for q := range p {
		db := after.Coll.Bytes[q] - before.Coll.Bytes[q]
		dm := after.Coll.Msgs[q] - before.Coll.Msgs[q]
		want, wantMsgs := st.bytes(me, q), uint64(1)
		if q == me || want < 0 {
			want, wantMsgs = 0, 0
		}
		if db != uint64(want) || dm != wantMsgs {
			return fmt.Errorf("rank %d to %d: %d bytes in %d messages, want %d in %d", me, q, db, dm, want, wantMsgs)
		}
	}
	got, was := after.Call(st.kind), before.Call(st.kind)
	if got.Calls-was.Calls != 1 || got.Bytes-was.Bytes != uint64(st.bytes(me, -1)) {
		return fmt.Errorf("rank %d: %d calls of %d bytes added, want 1 of %d", me, got.Calls-was.Calls, got.Bytes-was.Bytes, st.bytes(me, -1))
	}
	return nil
}

// checkTimeline checks that d holds calls Collective events, among them an Allreduce
// whose label names its algorithm, and the queued and persistent ones'.
func checkTimeline(d trace.Dump, calls int) error {
	var labels []string
	for _, ev := range d.Events {
		if ev.Kind == trace.Collective {
			labels = append(labels, d.Labels[ev.Label])
		}
	}
	if len(labels) != calls {
		return fmt.Errorf("%d Collective events %q, want %d", len(labels), labels, calls)
	}
	algos := strings.Join(algoNames[1:], "|")
	for _, pat := range []string{`^Allreduce (` + algos + `)$`, `^Iallreduce (` + algos + `)$`, `^AllreduceInit (` + algos + `)$`, `^Barrier \w+$`, `^Bcast (shm|binomial)$`} {
		if !slices.ContainsFunc(labels, regexp.MustCompile(pat).MatchString) {
			return fmt.Errorf("no Collective event matches %s in %q", pat, labels)
		}
	}
	return nil
}

// TestObserveLabels: a loop of more calls than the state keeps recent labels of (an
// Allreduce and a Barrier, then five kinds in turn) labels every Collective event with its
// own call, in the order of the calls; the events reach the recorder from the state's
// batch.
func TestObserveLabels(t *testing.T) {
	calls := []struct {
		label string
		run   func(e rankEnv) error
	}{
		{"Allreduce shm", func(e rankEnv) error {
			return Allreduce(e.ctx, e.w, make([]float64, 1), make([]float64, 1), Sum[float64]())
		}},
		{"Barrier shm", func(e rankEnv) error { return Barrier(e.ctx, e.w) }},
		{"Bcast shm", func(e rankEnv) error { return Bcast(e.ctx, e.w, make([]int32, 2), 0) }},
		{"Allgather", func(e rankEnv) error { return Allgather(e.ctx, e.w, make([]int32, 1), make([]int32, 2)) }},
		{"Alltoall", func(e rankEnv) error { return Alltoall(e.ctx, e.w, make([]int32, 2), make([]int32, 2)) }},
	}
	var order []int
	for range 3 {
		order = append(order, 0, 1)
	}
	for range 3 {
		for i := range calls {
			order = append(order, i)
		}
	}
	opt := runtimetest.Options{Transport: "shm", Env: runtimetest.ObserveModes(t.TempDir())[2].Env}
	runJob(t, 2, opt, 30*time.Second, func(e rankEnv) error {
		o, _ := substrate.Observe(e.w)
		for _, i := range order {
			if err := calls[i].run(e); err != nil {
				return err
			}
		}
		d := o.Timeline()
		var got []string
		for _, ev := range d.Events {
			if ev.Kind == trace.Collective {
				got = append(got, d.Labels[ev.Label])
			}
		}
		if len(got) != len(order) {
			return fmt.Errorf("%d Collective events %q, want %d", len(got), got, len(order))
		}
		for k, i := range order {
			if !strings.HasPrefix(got[k], calls[i].label) {
				return fmt.Errorf("event %d is %q, want %s...; all: %q", k, got[k], calls[i].label, got)
			}
		}
		return nil
	})
}

// TestSame: same tells a string from an equal one elsewhere in memory.
func TestSame(t *testing.T) {
	a := "Allreduce"
	b := strings.Clone(a)
	for _, c := range []struct {
		x, y string
		want bool
	}{{a, a, true}, {a, b, false}, {a, a[:3], false}, {"", "", true}, {"", b[:0], true}} {
		if got := same(c.x, c.y); got != c.want {
			t.Errorf("same(%q at %p, %q at %p) = %v, want %v", c.x, unsafe.StringData(c.x), c.y, unsafe.StringData(c.y), got, c.want)
		}
	}
}

// TestObserveSubWorld: on a World of some ranks of the job, the counts name the peers
// by their job ranks.
func TestObserveSubWorld(t *testing.T) {
	opt := runtimetest.Options{Transport: "shm", Env: observeEnv(t)}
	runJob(t, 4, opt, 30*time.Second, func(e rankEnv) error {
		odd, err := e.w.Split(e.ctx, e.r%2, -e.r) // reversed: job rank 3 is rank 0 of the odd World
		if err != nil {
			return err
		}
		defer odd.Free()
		o, members := substrate.Observe(odd)
		before := o.Profile()
		if err := Allgather(e.ctx, odd, make([]int32, 3), make([]int32, 6)); err != nil {
			return err
		}
		after := o.Profile()
		peer := e.r ^ 2 // the other rank of the same parity
		if len(members) != 2 || members[odd.Rank()] != e.r {
			return fmt.Errorf("members %v at job rank %d", members, e.r)
		}
		for q := range 4 {
			want := uint64(0)
			if q == peer {
				want = 12
			}
			if got := after.Coll.Bytes[q] - before.Coll.Bytes[q]; got != want {
				return fmt.Errorf("job rank %d to %d: %d bytes, want %d", e.r, q, got, want)
			}
		}
		return nil
	})
}

// TestObserveInternal: the calls on a World a layer marked internal (window's Dup) are
// the layer's: the profile counts neither them nor their data, and the timeline shows
// them.
func TestObserveInternal(t *testing.T) {
	opt := runtimetest.Options{Transport: "shm", Env: observeEnv(t)}
	runJob(t, 3, opt, 30*time.Second, func(e rankEnv) error {
		d, err := e.w.Dup()
		if err != nil {
			return err
		}
		defer d.Free()
		substrate.MarkInternal(d)
		o, _ := substrate.Observe(d)
		events := func() int {
			n := 0
			for _, ev := range o.Timeline().Events {
				if ev.Kind == trace.Collective {
					n++
				}
			}
			return n
		}
		before, ev0 := o.Profile(), events()
		if err := Allreduce(e.ctx, d, nil, make([]uint64, 4), Bor[uint64]()); err != nil {
			return err
		}
		if err := Allgather(e.ctx, d, make([]int32, 1), make([]int32, 3)); err != nil {
			return err
		}
		if err := Barrier(e.ctx, d); err != nil {
			return err
		}
		after := o.Profile()
		for k := range prof.NumCalls {
			if n := after.Call(k).Calls - before.Call(k).Calls; n != 0 {
				return fmt.Errorf("rank %d: %d %v calls counted on an internal World, want none", e.r, n, k)
			}
		}
		for q := range e.p {
			if n := after.Coll.Bytes[q] - before.Coll.Bytes[q]; n != 0 {
				return fmt.Errorf("rank %d: %d collective bytes to rank %d counted on an internal World, want none", e.r, n, q)
			}
		}
		if n := events() - ev0; n != 3 {
			return fmt.Errorf("rank %d: %d Collective events of the internal World's calls, want 3", e.r, n)
		}
		return nil
	})
}

// TestObserveZeroAllocs: observed, a small Allreduce and a Barrier still allocate
// nothing in steady state.
func TestObserveZeroAllocs(t *testing.T) {
	j, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: "shm", Env: observeEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(context.Background())
	buf := [][]float64{{1}, {1}}
	zeroAllocsInStep(t, j, 0, "observed Allreduce and Barrier", func(r int, w *runtime.World) error {
		if err := Allreduce(context.Background(), w, nil, buf[r], Sum[float64]()); err != nil {
			return err
		}
		return Barrier(context.Background(), w)
	})
}

// TestCallKinds: every call begin starts has a profile kind (callKind panics otherwise,
// and only when the rank observes).
func TestCallKinds(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`begin\(ctx, w, "([^"]+)"`)
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			seen++
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: begin(%q): %v", f, m[1], r)
					}
				}()
				callKind(string(m[1]))
			}()
		}
	}
	if seen < 20 {
		t.Errorf("found %d calls of begin, want every collective's", seen)
	}
}

// TestObserveInter: on an intercommunicator, a call counts as one call of its kind, with
// a Collective event "<Call> inter", and the data a rank sends to the other group as
// collective data for each remote rank; the local group's calls within count as their
// own. Job ranks 0 and 1 form one group, 2 and 3 the other.
func TestObserveInter(t *testing.T) {
	opt := runtimetest.Options{Transport: "shm", Env: observeEnv(t)}
	runJob(t, 4, opt, 30*time.Second, func(e rankEnv) error {
		lower := e.r < 2
		color, remoteLeader := 0, 2
		if !lower {
			color, remoteLeader = 1, 0
		}
		half, err := e.w.Split(e.ctx, color, e.r)
		if err != nil {
			return err
		}
		defer half.Free()
		ic, err := half.CreateIntercomm(e.ctx, 0, e.w, remoteLeader, 11)
		if err != nil {
			return err
		}
		defer ic.Free()
		o, _ := substrate.Observe(ic)
		type want struct {
			calls uint64
			bytes map[int]uint64 // by job rank; the others get nothing
		}
		steps := []struct {
			kind prof.CallKind
			run  func() error
			want [4]want
		}{{
			kind: prof.CallBcast,
			run: func() error {
				root := 0 // the root's rank in its group, at the other group
				switch e.r {
				case 0:
					root = runtime.Root
				case 1:
					root = runtime.ProcNull
				}
				return Bcast(e.ctx, ic, make([]float64, 10), root)
			},
			// Job rank 2 receives for its group and broadcasts within it: a second call.
			want: [4]want{{1, map[int]uint64{2: 80}}, {1, nil}, {2, map[int]uint64{3: 80}}, {2, nil}},
		}, {
			kind: prof.CallAlltoall,
			run:  func() error { return Alltoall(e.ctx, ic, make([]int32, 4), make([]int32, 4)) },
			want: [4]want{{1, map[int]uint64{2: 8, 3: 8}}, {1, map[int]uint64{2: 8, 3: 8}},
				{1, map[int]uint64{0: 8, 1: 8}}, {1, map[int]uint64{0: 8, 1: 8}}},
		}}
		for i, st := range steps {
			before := o.Profile()
			if err := st.run(); err != nil {
				return fmt.Errorf("step %d (%v): %w", i, st.kind, err)
			}
			after := o.Profile()
			w := st.want[e.r]
			if d := after.Call(st.kind).Calls - before.Call(st.kind).Calls; d != w.calls {
				return fmt.Errorf("step %d (%v): %d calls counted, want %d", i, st.kind, d, w.calls)
			}
			for q := range 4 {
				if db := after.Coll.Bytes[q] - before.Coll.Bytes[q]; db != w.bytes[q] {
					return fmt.Errorf("step %d (%v): %d bytes to job rank %d, want %d", i, st.kind, db, q, w.bytes[q])
				}
			}
		}
		var labels []string
		d := o.Timeline()
		for _, ev := range d.Events {
			if ev.Kind == trace.Collective {
				labels = append(labels, d.Labels[ev.Label])
			}
		}
		for _, l := range []string{"Bcast inter", "Alltoall inter"} {
			if !slices.Contains(labels, l) {
				return fmt.Errorf("no Collective event %q in %q", l, labels)
			}
		}
		return nil
	})
}
