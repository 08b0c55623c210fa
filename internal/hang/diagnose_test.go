package hang

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// p2p returns a point-to-point record on World.
func p2p(call string, peer, tag int) Record {
	return Record{Call: call, Comm: "World", Peer: peer, Tag: tag, Root: -1, Count: -1, Since: 31200 * time.Millisecond}
}

// coll returns a collective record on World.
func coll(call string, seq uint64) Record {
	return Record{Call: call, Comm: "World", Seq: seq, Peer: NoRank, Tag: -1, Root: -1, Count: -1, Since: time.Second}
}

// api returns r as a C program's call named name.
func api(r Record, name string) Record {
	r.API = name
	return r
}

var finalize = Record{Call: "Finalize", Comm: "World", Peer: NoRank, Tag: -1, Root: -1, Count: -1}

func blocked(rank int, recs ...Record) Report {
	return Report{Rank: rank, State: Blocked, Records: recs}
}

func state(rank int, s State) Report { return Report{Rank: rank, State: s} }

// everyone returns n reports of ranks blocked in f(rank).
func everyone(n int, f func(rank int) Record) []Report {
	reps := make([]Report, n)
	for i := range reps {
		reps[i] = blocked(i, f(i))
	}
	return reps
}

func TestDiagnose(t *testing.T) {
	allreduce := func(count int) Record {
		r := coll("Allreduce", 2)
		r.Count, r.Type, r.Op = count, "float64", "sum"
		return r
	}
	split := func(call string, seq uint64, members ...int) Record {
		r := coll(call, seq)
		r.Comm, r.Members = "World.split1", members
		return r
	}
	tests := []struct {
		name string
		reps []Report
		want []string
	}{
		{"recv without send, peer in Finalize",
			[]Report{blocked(0, p2p("Recv", 1, 0)), blocked(1, finalize)},
			[]string{"deadlock: rank 0 waits for rank 1 in Recv; rank 1 waits in Finalize"}},
		{"C programs' names: a mixed Go and C job",
			[]Report{blocked(0, api(p2p("Recv", 1, 7), "MPI_Recv")), blocked(1, api(coll("Barrier", 1), "MPI_Barrier")), blocked(2, coll("Barrier", 1))},
			[]string{"deadlock: rank 0 waits for rank 1 in MPI_Recv; rank 1 waits for rank 0 in MPI_Barrier #1"}},
		{"C programs' names in a mismatch",
			[]Report{blocked(0, api(coll("Bcast", 1), "MPI_Bcast")), blocked(1, api(coll("Allreduce", 1), "MPI_Allreduce"))},
			[]string{"mismatch: rank 0 is in MPI_Bcast #1, rank 1 in MPI_Allreduce #1 on World",
				"deadlock: rank 0 waits for rank 1 in MPI_Bcast #1; rank 1 waits for rank 0 in MPI_Allreduce #1"}},
		{"recv without send, peer finalized",
			[]Report{blocked(0, p2p("Recv", 1, 0)), state(1, Finalized)},
			[]string{"deadlock: rank 0 waits for rank 1 in Recv; rank 1 has finalized"}},
		{"two recvs wait for each other",
			[]Report{blocked(0, p2p("Recv", 1, 0)), blocked(1, p2p("Recv", 0, 0))},
			[]string{"deadlock: rank 0 waits for rank 1 in Recv; rank 1 waits for rank 0 in Recv"}},
		{"send to a rank in Finalize",
			[]Report{blocked(0, p2p("Send", 1, 5)), blocked(1, finalize)},
			[]string{"deadlock: rank 0 waits for rank 1 in Send; rank 1 waits in Finalize"}},
		{"send and recv that match are slow, not stuck",
			[]Report{blocked(0, p2p("Recv", 1, 0)), blocked(1, p2p("Send", 0, 0))},
			nil},
		{"send and recv with different tags",
			[]Report{blocked(0, p2p("Recv", 1, 0)), blocked(1, p2p("Send", 0, 1))},
			[]string{"deadlock: rank 0 waits for rank 1 in Recv; rank 1 waits for rank 0 in Send"}},
		{"collective mismatch at 2 ranks",
			[]Report{blocked(0, coll("window.Allocate", 2)), blocked(1, coll("Allreduce", 2))},
			[]string{
				"mismatch: rank 0 is in window.Allocate #2, rank 1 in Allreduce #2 on World",
				"deadlock: rank 0 waits for rank 1 in window.Allocate #2; rank 1 waits for rank 0 in Allreduce #2",
			}},
		{"collective mismatch at 64 ranks",
			everyone(64, func(r int) Record {
				if r == 5 {
					return coll("Barrier", 2)
				}
				return coll("Allreduce", 2)
			}),
			[]string{
				"mismatch: ranks 0-4,6-63 are in Allreduce #2, rank 5 in Barrier #2 on World",
				"deadlock: rank 0 waits for rank 5 in Allreduce #2; rank 5 waits for rank 0 in Barrier #2",
			}},
		{"count mismatch at 64 ranks",
			everyone(64, func(r int) Record {
				if r%16 == 3 {
					return allreduce(4)
				}
				return allreduce(8)
			}),
			[]string{
				"mismatch: ranks 0-2,4-18,20-34,36-50,52-63 are in Allreduce #2 (8 float64, sum), ranks 3,19,35,51 in Allreduce #2 (4 float64, sum) on World",
			}},
		{"sequence skew on one communicator",
			[]Report{blocked(0, coll("Barrier", 3)), blocked(1, coll("Barrier", 4)), blocked(2, coll("Barrier", 4))},
			[]string{
				"mismatch: rank 0 is in Barrier #3, ranks 1-2 in Barrier #4 on World",
				"deadlock: rank 0 waits for rank 1 in Barrier #3; rank 1 waits for rank 0 in Barrier #4",
			}},
		{"sub-communicator with Members",
			// Evens and odds share the name World.split1 but are different communicators:
			// the odds are both in Barrier #1 (in progress), the evens disagree.
			[]Report{
				blocked(0, split("Bcast", 1, 0, 2)), blocked(1, split("Barrier", 1, 1, 3)),
				blocked(2, split("Barrier", 1, 0, 2)), blocked(3, split("Barrier", 1, 1, 3)),
			},
			[]string{"mismatch: rank 0 is in Bcast #1, rank 2 in Barrier #1 on World.split1"}},
		{"sub-communicator member stuck in a recv cycle",
			[]Report{
				blocked(0, split("Barrier", 1, 0, 1)), blocked(1, p2p("Recv", 2, 0)),
				blocked(2, p2p("Recv", 1, 0)),
			},
			[]string{"deadlock: rank 1 waits for rank 2 in Recv; rank 2 waits for rank 1 in Recv"}},
		{"sub-communicator waits for an exited member",
			[]Report{blocked(0, split("Barrier", 1, 0, 2)), blocked(1, p2p("Recv", 0, 0)), state(2, Exited)},
			[]string{"deadlock: rank 0 waits for rank 2 in Barrier #1 on World.split1; rank 2 has exited"}},
		{"any source, one sender finalized",
			[]Report{blocked(0, p2p("Recv", AnyRank, -1)), blocked(1, p2p("Recv", 0, 3)), state(2, Finalized)},
			[]string{"deadlock: rank 0 waits for rank 1 in Recv from any source; rank 1 waits for rank 0 in Recv"}},
		{"any source, every sender gone",
			[]Report{blocked(0, p2p("Recv", AnyRank, -1)), state(1, Exited), state(2, Finalized)},
			[]string{"deadlock: rank 0 waits for rank 1 in Recv from any source; rank 1 has exited"}},
		{"any source matched by a send",
			[]Report{blocked(0, p2p("Recv", AnyRank, -1)), blocked(1, p2p("Recv", 0, 3)), blocked(2, p2p("Send", 0, 9))},
			nil},
		{"a running rank suppresses the deadlock verdict",
			[]Report{blocked(0, p2p("Recv", 1, 0)), state(1, Running)},
			nil},
		{"a running rank leaves mismatches",
			[]Report{blocked(0, coll("Allreduce", 1)), blocked(1, coll("Bcast", 1)), state(2, Running)},
			[]string{"mismatch: rank 0 is in Allreduce #1, rank 1 in Bcast #1 on World"}},
		{"a silent rank suppresses the deadlock verdict",
			[]Report{blocked(0, p2p("Recv", 1, 0)), state(1, Silent)},
			nil},
		{"a missing report counts as silent",
			[]Report{blocked(0, p2p("Recv", 7, 0)), blocked(1, finalize)},
			nil},
		{"an exited rank",
			[]Report{blocked(0, p2p("Recv", 1, 0)), state(1, Exited)},
			[]string{"deadlock: rank 0 waits for rank 1 in Recv; rank 1 has exited"}},
		{"a stopped rank in a barrier",
			[]Report{blocked(0, coll("Barrier", 1)), state(1, Stopped), blocked(2, coll("Barrier", 1))},
			[]string{"deadlock: rank 0 waits for rank 1 in Barrier #1; rank 1 is stopped"}},
		{"everyone finalizing is no deadlock",
			[]Report{blocked(0, finalize), state(1, Finalized)},
			nil},
		{"a goroutine that can complete keeps its rank alive",
			[]Report{blocked(0, p2p("Recv", 1, 0), p2p("Send", 1, 4)), blocked(1, p2p("Recv", 0, 4))},
			nil},
		{"a long cycle is cut in the middle",
			everyone(20, func(r int) Record { return p2p("Recv", (r+1)%20, 0) }),
			[]string{"deadlock: rank 0 waits for rank 1 in Recv; rank 1 waits for rank 2 in Recv; " +
				"rank 2 waits for rank 3 in Recv; rank 3 waits for rank 4 in Recv; rank 4 waits for rank 5 in Recv; " +
				"rank 5 waits for rank 6 in Recv; ... (13 more); rank 19 waits for rank 0 in Recv"}},
		{"the shortest cycle is named",
			// 0 -> 1 -> 2 -> 3 -> 1: the cycle 1, 2, 3 is found from rank 1.
			[]Report{blocked(0, p2p("Recv", 1, 0)), blocked(1, p2p("Recv", 2, 0)),
				blocked(2, p2p("Recv", 3, 0)), blocked(3, p2p("Recv", 1, 0))},
			[]string{"deadlock: rank 1 waits for rank 2 in Recv; rank 2 waits for rank 3 in Recv; rank 3 waits for rank 1 in Recv"}},
		{"no reports", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Diagnose(tc.reps)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Diagnose =\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}

// TestDiagnoseBounded: many disagreeing groups give a bounded number of lines.
func TestDiagnoseBounded(t *testing.T) {
	var reps []Report
	for r := range 256 {
		rec := coll("Allreduce", 1)
		rec.Comm = "World.split" + string(rune('a'+r%16))
		rec.Members = []int{r % 16}
		for m := r % 16; m < 256; m += 16 {
			if m != r%16 {
				rec.Members = append(rec.Members, m)
			}
		}
		if r%3 == 0 {
			rec.Call = "Bcast"
		}
		reps = append(reps, blocked(r, rec))
	}
	got := Diagnose(reps)
	if len(got) > maxMismatches+2 {
		t.Errorf("%d lines, want at most %d:\n%s", len(got), maxMismatches+2, strings.Join(got, "\n"))
	}
	for _, l := range got {
		if len(l) > 400 {
			t.Errorf("line of %d bytes: %s", len(l), l)
		}
	}
}

func TestRankList(t *testing.T) {
	tests := []struct {
		ranks []int
		want  string
	}{
		{[]int{3}, "rank 3"},
		{[]int{0, 1}, "ranks 0-1"},
		{[]int{0, 1, 2, 4, 6, 7}, "ranks 0-2,4,6-7"},
		{[]int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 19}, "ranks 0,2,4,6,8,10,12,14 and 3 more"},
	}
	for _, tc := range tests {
		if got := rankList(tc.ranks); got != tc.want {
			t.Errorf("rankList(%v) = %q, want %q", tc.ranks, got, tc.want)
		}
	}
}

// TestMismatched: only groups at one call number count. Ranks at different numbers may be
// a deadlock around a rooted call that returned early: Diagnose names them, Mismatched
// does not.
func TestMismatched(t *testing.T) {
	reduce := func(root int) Record {
		r := coll("Reduce", 1)
		r.Count, r.Type, r.Op, r.Root = 1, "float64", "sum", root
		return r
	}
	roots := []Report{blocked(0, reduce(0)), blocked(1, reduce(1)), blocked(2, reduce(1))}
	want := "mismatch: rank 0 is in Reduce #1 (1 float64, sum, root=0), ranks 1-2 in Reduce #1 (1 float64, sum, root=1) on World"
	if got := Mismatched(roots); got != want {
		t.Errorf("Mismatched(two roots) = %q, want %q", got, want)
	}
	if got := Diagnose(roots); len(got) == 0 || got[0] != want {
		t.Errorf("Diagnose(two roots) = %q, want it to begin with %q", got, want)
	}
	kinds := []Report{blocked(0, coll("Bcast", 3)), blocked(1, coll("Allreduce", 3))}
	if got := Mismatched(kinds); !strings.HasPrefix(got, "mismatch: rank 0 is in Bcast #3, rank 1 in Allreduce #3") {
		t.Errorf("Mismatched(Bcast against Allreduce) = %q", got)
	}
	early := []Report{blocked(0, reduce(0)), blocked(1, coll("Bcast", 2)), blocked(2, p2p("Recv", 1, 0))}
	if got := Mismatched(early); got != "" {
		t.Errorf("Mismatched(ranks at calls #1 and #2) = %q, want none", got)
	}
	if got := Diagnose(early); len(got) == 0 || !strings.HasPrefix(got[0], "mismatch: ") {
		t.Errorf("Diagnose(ranks at calls #1 and #2) = %q, want a mismatch line", got)
	}
	same := everyone(3, func(int) Record { return reduce(0) })
	if got := Mismatched(same); got != "" {
		t.Errorf("Mismatched(one call) = %q, want none", got)
	}
}

// TestMismatchedDone: a rank's Done records are its calls of their numbers. A call that
// a rank returned from and another rank is in, or returned from, as another call is a
// mismatch at one call number; calls that agree are none.
func TestMismatchedDone(t *testing.T) {
	reduce := func(seq uint64, root int) Record {
		r := coll("Reduce", seq)
		r.Count, r.Type, r.Op, r.Root = 1, "float64", "sum", root
		return r
	}
	returned := func(rep Report, done ...Record) Report {
		rep.Done = done
		return rep
	}
	for _, tt := range []struct {
		name string
		reps []Report
		want string // Mismatched's line, also among Diagnose's
	}{
		{"the root returned, the other is in another call",
			[]Report{returned(blocked(0, coll("Barrier", 2)), coll("Bcast", 1)), blocked(1, coll("Allreduce", 1))},
			"mismatch: rank 0 returned from Bcast #1, rank 1 in Allreduce #1 on World"},
		{"both returned, one waits for the other",
			[]Report{returned(blocked(0, coll("Barrier", 2)), coll("Bcast", 1)), returned(blocked(1, finalize), coll("Allreduce", 1))},
			"mismatch: rank 0 returned from Bcast #1, rank 1 returned from Allreduce #1 on World"},
		{"returned from another root",
			[]Report{blocked(0, reduce(1, 0)), returned(blocked(1, coll("Barrier", 2)), reduce(1, 1)),
				returned(blocked(2, coll("Barrier", 2)), reduce(1, 1))},
			"mismatch: rank 0 is in Reduce #1 (1 float64, sum, root=0), ranks 1-2 returned from Reduce #1 (1 float64, sum, root=1) on World"},
		{"the oldest of several returned",
			[]Report{blocked(0, coll("Allreduce", 1)), returned(blocked(1, coll("Barrier", 4)), coll("Bcast", 1), reduce(2, 1), reduce(3, 1))},
			"mismatch: rank 0 is in Allreduce #1, rank 1 returned from Bcast #1 on World"},
		{"some of a group returned",
			[]Report{blocked(0, coll("Gather", 1)), returned(blocked(1, coll("Barrier", 2)), coll("Gather", 1)),
				returned(blocked(2, coll("Barrier", 2)), coll("Gather", 1)), blocked(3, coll("Bcast", 1))},
			"mismatch: ranks 0-2 are in or returned from Gather #1, rank 3 in Bcast #1 on World"},
		{"calls that agree",
			[]Report{returned(blocked(0, p2p("Recv", 1, 0)), reduce(1, 0)), returned(blocked(1, coll("Barrier", 2)), reduce(1, 0))},
			""},
		{"another communicator",
			[]Report{returned(blocked(0, coll("Barrier", 2)), coll("Bcast", 1)),
				returned(blocked(1, coll("Barrier", 2)), Record{Call: "Allreduce", Comm: "World#1", Seq: 1, Peer: NoRank, Root: -1, Count: -1})},
			""},
	} {
		got := Mismatched(tt.reps)
		if got != tt.want {
			t.Errorf("%s: Mismatched = %q, want %q", tt.name, got, tt.want)
		}
		if lines := Diagnose(tt.reps); tt.want != "" && !slices.Contains(lines, tt.want) {
			t.Errorf("%s: Diagnose = %q, want it to hold %q", tt.name, lines, tt.want)
		}
	}
}
