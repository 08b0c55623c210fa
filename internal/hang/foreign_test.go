package hang

import (
	"testing"
	"time"
)

// foreign is the report of a Foreign rank: waiting in wait ("" none), after last.
func foreign(rank, pid int, wire, wait, last string) Report {
	return Report{Rank: rank, Pid: pid, State: Foreign, PMI: PMICalls{Wire: wire, Wait: wait, Last: last, Since: time.Second}}
}

func TestForeignSummary(t *testing.T) {
	fin := Report{Rank: 0, Pid: 4241, State: Finalized, End: "exit 0"}
	for _, tt := range []struct {
		reps []Report
		want string
	}{
		{[]Report{fin, foreign(1, 4242, "PMIx", "", "fence")}, "rank 0 finalized (exit 0) and rank 1 (pid 4242) still runs"},
		{[]Report{foreign(0, 4241, "PMIx", "", "get"), foreign(1, 4242, "PMIx", "fence", "fence")},
			"rank 1 (pid 4242) waits in a PMIx fence and rank 0 (pid 4241) still runs"},
		{[]Report{foreign(0, 10, "PMI-1", "barrier_in", "barrier_in"), foreign(1, 11, "PMI-1", "barrier_in", "barrier_in"),
			foreign(2, 12, "PMI-1", "", "get"), {Rank: 3, Pid: 13, State: Finalized, End: "exit 0"}},
			"ranks 0-1 wait in a PMI-1 barrier (barrier_in), rank 3 finalized (exit 0) and rank 2 (pid 12) still runs"},
		{[]Report{foreign(0, 10, "PMIx", "", "get"), foreign(1, 11, "PMIx", "", "get"), {Rank: 2, State: Exited, End: "exit 3"},
			{Rank: 3, State: Stopped}},
			"rank 2 exited (exit 3), ranks 0-1 still run and rank 3 is stopped"},
		{nil, ""},
	} {
		if got := ForeignSummary(tt.reps); got != tt.want {
			t.Errorf("ForeignSummary(%v) =\n%q\nwant\n%q", tt.reps, got, tt.want)
		}
	}
}

// A Foreign rank may act as far as Diagnose knows: its MPI calls are not seen. So no
// deadlock is claimed while one exists, even beside a rank that has finalized or a
// gorma rank that waits for it.
func TestDiagnoseForeign(t *testing.T) {
	for _, reps := range [][]Report{
		{{Rank: 0, State: Finalized}, foreign(1, 4242, "PMIx", "fence", "fence")},
		{blocked(0, p2p("Recv", 1, 0)), foreign(1, 4242, "PMI-1", "barrier_in", "barrier_in")},
		{foreign(0, 1, "PMIx", "fence", "fence"), foreign(1, 2, "PMIx", "fence", "fence")},
	} {
		if causes := Diagnose(reps); len(causes) != 0 {
			t.Errorf("Diagnose(%v) = %q, want no cause", reps, causes)
		}
	}
}
