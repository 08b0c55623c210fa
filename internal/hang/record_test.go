package hang

import (
	"testing"
	"time"
)

func TestRecordString(t *testing.T) {
	allreduce := coll("Allreduce", 2)
	allreduce.Count, allreduce.Type, allreduce.Op = 8, "float64", "sum"
	fence := coll("window.Fence", 3)
	fence.Win = "win2"
	bcast := coll("Bcast", 1)
	bcast.Root, bcast.Count, bcast.Comm = 0, 3, "World.dup1"
	tests := []struct {
		rec  Record
		want string
	}{
		{p2p("Recv", 1, 0), "Recv(src=1, tag=0, World)"},
		{api(p2p("Recv", 1, 7), "MPI_Recv"), "MPI_Recv(src=1, tag=7, World)"},
		{api(coll("Barrier", 1), "MPI_Barrier"), "MPI_Barrier #1 (World)"},
		{p2p("Recv", AnyRank, -1), "Recv(src=any, tag=any, World)"},
		{p2p("Isend", 3, 7), "Isend(dst=3, tag=7, World)"},
		{p2p("Sendrecv", 2, 1), "Sendrecv(peer=2, tag=1, World)"},
		{allreduce, "Allreduce #2 (8 float64, sum, World)"},
		{fence, "window.Fence #3 (win2, World)"},
		{bcast, "Bcast #1 (count=3, root=0, World.dup1)"},
		{finalize, "Finalize"},
		{Record{Call: "Barrier", Seq: 4, Peer: NoRank, Root: -1, Count: -1}, "Barrier #4"},
	}
	for _, tc := range tests {
		if got := tc.rec.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestReportLine(t *testing.T) {
	recv := p2p("Recv", 1, 0)
	tests := []struct {
		rep  Report
		want string
	}{
		{blocked(0, recv), "rank 0: Recv(src=1, tag=0, World) for 31.2s"},
		{blocked(3, recv, p2p("Send", 2, 0), finalize), "rank 3: Recv(src=1, tag=0, World) for 31.2s (+2 more)"},
		{Report{Rank: 3, State: Blocked, Records: []Record{recv}, Omitted: 5}, "rank 3: Recv(src=1, tag=0, World) for 31.2s (+5 more)"},
		{blocked(2, Record{Call: "Finalize", Peer: NoRank, Root: -1, Count: -1, Since: 90 * time.Second}), "rank 2: Finalize for 90.0s"},
		{Report{Rank: 1, State: Blocked}, "rank 1: blocked"},
		{state(1, Running), "rank 1: running (in no gorma call)"},
		{state(1, Finalized), "rank 1: finalized"},
		{state(1, Exited), "rank 1: exited"},
		{state(1, Silent), "rank 1: silent (no answer)"},
		{state(1, Stopped), "rank 1: stopped (SIGSTOP or a debugger)"},
		{state(1, State(9)), "rank 1: State(9)"},
		{Report{Rank: 0, Pid: 4241, State: Finalized, End: "exit 0"}, "rank 0 (pid 4241): finalized (exit 0)"},
		{Report{Rank: 2, Pid: 7, State: Exited, End: "signal 9 (SIGKILL)"}, "rank 2 (pid 7): exited (signal 9 (SIGKILL))"},
		{Report{Rank: 1, Pid: 4242, State: Foreign, PMI: PMICalls{Wire: "PMIx", Wait: "fence", Last: "fence", Since: 31 * time.Second}},
			"rank 1 (pid 4242): in PMIx fence (MPI_Init or MPI_Finalize) for 31.0s"},
		{Report{Rank: 1, Pid: 4242, State: Foreign, PMI: PMICalls{Wire: "PMI-1", Wait: "barrier_in", Since: 3 * time.Second}},
			"rank 1 (pid 4242): in PMI-1 barrier_in (MPI_Init or MPI_Finalize) for 3.0s"},
		{Report{Rank: 0, Pid: 4241, State: Foreign, PMI: PMICalls{Wire: "PMIx", Last: "fence", Since: 40200 * time.Millisecond}},
			"rank 0 (pid 4241): runs MPI code (not a gorma rank: golaunch sees only its PMI calls); last PMIx request fence 40.2s ago"},
		{Report{Rank: 0, Pid: 9, State: Foreign, PMI: PMICalls{Wire: "PMIx", Last: "finalize", Finalized: true, Since: 2 * time.Second}},
			"rank 0 (pid 9): called PMIx finalize 2.0s ago and runs on"},
		{Report{Rank: 3, Pid: 9, State: Foreign},
			"rank 3 (pid 9): runs (no PMI or PMIx request yet: golaunch cannot see inside it)"},
	}
	for _, tc := range tests {
		if got := tc.rep.Line(); got != tc.want {
			t.Errorf("Line() = %q, want %q", got, tc.want)
		}
	}
}
