package launcher_test

import (
	"fmt"
	"strings"

	"github.com/gorma-hpc/gorma/launcher"
)

// A hostfile in either spelling, and the rank table golaunch computes from it: host order
// times slots, never negotiated.
func ExamplePlanRanks() {
	hosts, err := launcher.ParseHostfile("hosts", strings.NewReader("# two hosts\nnode1 slots=2\nnode2:2\n"))
	if err != nil {
		panic(err)
	}
	r, err := launcher.PlanRanks(hosts, 3)
	if err != nil {
		panic(err)
	}
	for rank := range r.Size {
		fmt.Printf("rank %d on %s (local rank %d)\n", rank, r.Hosts[r.RankHost[rank]], r.LocalRank[rank])
	}
	// Output:
	// rank 0 on node1 (local rank 0)
	// rank 1 on node1 (local rank 1)
	// rank 2 on node2 (local rank 0)
}
