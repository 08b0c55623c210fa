package prof

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// smallJob is a hand-built job of 4 ranks; rank 3's profile is missing.
//
//	rank 0: Send 100 B to 1 twice, Allreduce 3 calls 30 ms, Coll 8 B to 1 and 2
//	rank 1: Send 5000 B to 2, Allreduce 3 calls 90 ms, Barrier 1 call 1 ms
//	rank 2: Put 64 B to 0, Allreduce 3 calls 60 ms
func smallJob(t *testing.T) *Job {
	t.Helper()
	c := []*Counters{New(0, 4), New(1, 4), New(2, 4)}
	c[0].Send(1, 100)
	c[0].Send(1, 100)
	c[0].Coll(1, 8)
	c[0].Coll(2, 8)
	c[1].Send(2, 5000)
	c[2].PutTo(0, 64)
	for r, ms := range []int{10, 30, 20} {
		for range 3 {
			c[r].Call(CallAllreduce, 8, time.Duration(ms)*time.Millisecond)
		}
	}
	c[1].Call(CallBarrier, 0, time.Millisecond)
	j, err := Merge([]*Rank{c[2].Snapshot(), c[0].Snapshot(), c[1].Snapshot()})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestMerge(t *testing.T) {
	j := smallJob(t)
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(j.Missing, []int{3}) {
		t.Errorf("missing %v, want [3]", j.Missing)
	}
	if j.P2P.Bytes[0][1] != 200 || j.P2P.Msgs[0][1] != 2 || j.P2P.Bytes[1][2] != 5000 || j.Put.Bytes[2][0] != 64 || j.Coll.Bytes[0][2] != 8 {
		t.Errorf("matrices p2p %v put %v coll %v", j.P2P.Bytes, j.Put.Bytes, j.Coll.Bytes)
	}
	if len(j.Calls) != 2 || j.Calls[0].Kind != "Barrier" || j.Calls[1].Kind != "Allreduce" {
		t.Fatalf("calls %+v, want Barrier then Allreduce (CallKind order)", j.Calls)
	}
	if !reflect.DeepEqual(j.Calls[1].Calls, []uint64{3, 3, 3, 0}) {
		t.Errorf("Allreduce calls %v", j.Calls[1].Calls)
	}
	var b bytes.Buffer
	if err := j.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJob(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, j) {
		t.Errorf("JSON round trip:\n%+v\nwant\n%+v", back, j)
	}
}

func TestMergeErrors(t *testing.T) {
	a, b := New(0, 2).Snapshot(), New(0, 3).Snapshot()
	for name, rs := range map[string][]*Rank{
		"none":      nil,
		"twice":     {a, a},
		"two sizes": {a, b},
		"bad row":   {{Rank: 0, Size: 2}},
	} {
		if _, err := Merge(rs); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: Merge = %v, want ErrFormat", name, err)
		}
	}
}

func TestRankJSON(t *testing.T) {
	c := New(2, 3)
	c.Send(0, 9)
	c.Call(CallPut, 9, time.Microsecond)
	r := c.Snapshot()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRank(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("JSON round trip:\n%+v\nwant\n%+v", back, r)
	}
	if _, err := ReadRank(strings.NewReader(`{"rank":0,"size":1,"extra":1}`)); err == nil {
		t.Error("ReadRank took an unknown field")
	}
}

func TestSummary(t *testing.T) {
	j := smallJob(t)
	ks := j.Kinds()
	want := []KindSummary{
		{Kind: "Barrier", Calls: 1, Bytes: 0, Time: time.Millisecond, Slowest: 1, Max: time.Millisecond, Imbalance: 3},
		// 30+90+60 ms over 3 reporting ranks: mean 60 ms, max 90 ms on rank 1.
		{Kind: "Allreduce", Calls: 9, Bytes: 72, Time: 180 * time.Millisecond, Slowest: 1, Max: 90 * time.Millisecond, Imbalance: 1.5},
	}
	if !reflect.DeepEqual(ks, want) {
		t.Errorf("Kinds:\n%+v\nwant\n%+v", ks, want)
	}
	ps := j.Pairs(2)
	if wantP := []Pair{{A: 1, B: 2, Bytes: 5000, Msgs: 1}, {A: 0, B: 1, Bytes: 208, Msgs: 3}}; !reflect.DeepEqual(ps, wantP) {
		t.Errorf("Pairs(2) = %+v, want %+v", ps, wantP)
	}
	if all := j.Pairs(100); len(all) != 3 || all[2] != (Pair{A: 0, B: 2, Bytes: 72, Msgs: 2}) {
		t.Errorf("Pairs(100) = %+v, want 3 pairs, the last 0-2 with the Coll and the Put", all)
	}
	var b strings.Builder
	if err := j.WriteSummary(&b, 3); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	rows := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		rows[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, s := range []string{"Allreduce 9 72 B 180ms 1 90ms 1.50", "Barrier 1 0 B 1ms 1 1ms 3.00", "1 <-> 2 4.9 KiB 1",
		"0 <-> 1 208 B 3", "0 <-> 2 72 B 2", "ranks without a profile: [3]"} {
		if !rows[s] {
			t.Errorf("summary lacks the row %q:\n%s", s, out)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 3 << 30: "3.0 GiB", 1<<64 - 1: "16.0 EiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestFailed: SetFailed takes ranks of Missing only, the JSON keeps them, and the
// summary names them apart from the ranks missing for another reason.
func TestFailed(t *testing.T) {
	c := []*Counters{New(0, 4), New(2, 4)}
	j, err := Merge([]*Rank{c[0].Snapshot(), c[1].Snapshot()})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]int{{0}, {1, 1}, {4}} {
		if err := j.SetFailed(bad); !errors.Is(err, ErrFormat) {
			t.Errorf("SetFailed(%v) = %v, want ErrFormat", bad, err)
		}
	}
	if err := j.SetFailed([]int{3}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := j.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"missing":[1,3],"failed":[3]`) {
		t.Errorf("job.json lacks the failed rank: %s", b.String())
	}
	back, err := ReadJob(&b)
	if err != nil || !reflect.DeepEqual(back.Failed, []int{3}) {
		t.Fatalf("ReadJob: %v, failed %v", err, back)
	}
	var s strings.Builder
	if err := j.WriteSummary(&s, 3); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ranks that failed before Finalize (no profile): [3]\n", "ranks without a profile: [1]\n"} {
		if !strings.Contains(s.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, s.String())
		}
	}
	bad := *j
	bad.Failed = []int{0}
	if err := bad.Validate(); !errors.Is(err, ErrFormat) {
		t.Errorf("Validate of a failed rank that has a profile = %v, want ErrFormat", err)
	}
}
