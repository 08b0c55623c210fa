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
	}
	for _, tc := range tests {
		if got := tc.rep.Line(); got != tc.want {
			t.Errorf("Line() = %q, want %q", got, tc.want)
		}
	}
}
