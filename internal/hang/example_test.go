package hang_test

import (
	"fmt"
	"time"

	"github.com/gorma-hpc/gorma/internal/hang"
)

func ExampleReport_Line() {
	rep := hang.Report{Rank: 0, State: hang.Blocked, Records: []hang.Record{{
		Call: "Recv", Comm: "World", Peer: 1, Tag: 0, Root: -1, Count: -1, Since: 31200 * time.Millisecond,
	}}}
	fmt.Println(rep.Line())
	fmt.Println(hang.Report{Rank: 1, State: hang.Finalized}.Line())
	// Output:
	// rank 0: Recv(src=1, tag=0, World) for 31.2s
	// rank 1: finalized
}

func ExampleDiagnose() {
	recv := hang.Record{Call: "Recv", Comm: "World", Peer: 1, Tag: 0, Root: -1, Count: -1, Since: 31200 * time.Millisecond}
	finalize := hang.Record{Call: "Finalize", Comm: "World", Peer: hang.NoRank, Tag: -1, Root: -1, Count: -1}
	allocate := hang.Record{Call: "window.Allocate", Comm: "World", Seq: 2, Peer: hang.NoRank, Root: -1, Count: -1}
	allreduce := hang.Record{Call: "Allreduce", Comm: "World", Seq: 2, Peer: hang.NoRank, Root: -1, Count: 8, Type: "float64", Op: "sum"}

	for _, job := range [][]hang.Report{
		{{Rank: 0, State: hang.Blocked, Records: []hang.Record{recv}}, {Rank: 1, State: hang.Blocked, Records: []hang.Record{finalize}}},
		{{Rank: 0, State: hang.Blocked, Records: []hang.Record{allocate}}, {Rank: 1, State: hang.Blocked, Records: []hang.Record{allreduce}}},
		{{Rank: 0, State: hang.Blocked, Records: []hang.Record{recv}}, {Rank: 1, State: hang.Running}},
	} {
		for _, rep := range job {
			fmt.Println(rep.Line())
		}
		for _, cause := range hang.Diagnose(job) {
			fmt.Println(cause)
		}
		fmt.Println()
	}
	// Output:
	// rank 0: Recv(src=1, tag=0, World) for 31.2s
	// rank 1: Finalize for 0.0s
	// deadlock: rank 0 waits for rank 1 in Recv; rank 1 waits in Finalize
	//
	// rank 0: window.Allocate #2 (World) for 0.0s
	// rank 1: Allreduce #2 (8 float64, sum, World) for 0.0s
	// mismatch: rank 0 is in window.Allocate #2, rank 1 in Allreduce #2 on World
	// deadlock: rank 0 waits for rank 1 in window.Allocate #2; rank 1 waits for rank 0 in Allreduce #2
	//
	// rank 0: Recv(src=1, tag=0, World) for 31.2s
	// rank 1: running (in no gorma call)
}

func ExampleParseReport() {
	rep := hang.Report{Rank: 2, Host: "node1", State: hang.Blocked, Progress: 40, Records: []hang.Record{{
		Call: "Barrier", Comm: "World.split1", Members: []int{0, 2, 4}, Seq: 3, Peer: hang.NoRank, Tag: -1, Root: -1, Count: -1, Since: 2 * time.Second,
	}}}
	text := hang.AppendReport(nil, rep)
	fmt.Print(string(text))
	back, err := hang.ParseReport(string(text))
	fmt.Println(back.Line(), err)
	// Output:
	// rank=2 host=node1 state=blocked progress=40 omitted=0 records=1 stacks=0
	// call=Barrier comm=World.split1 members=0,2,4 seq=3 since=2000000000
	// rank 2: Barrier #3 (World.split1) for 2.0s <nil>
}
