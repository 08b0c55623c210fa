package launcher

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// netnsCluster is a cluster of network-namespace hosts h0, h1, ... each running one
// golaunch agent (gossip on port 7946 of its own address); h1... joined h0.
type netnsCluster struct {
	*netns.Cluster
	testCluster
	agentList []*running // by host index
}

// startNetnsCluster creates one host per entry of slots, starts an agent with those slots
// in each, and waits until every agent reports its gossip address. The namespaces are
// removed when the test ends; ctx bounds the agents' lives.
func startNetnsCluster(t *testing.T, ctx context.Context, slots ...int) *netnsCluster {
	t.Helper()
	c, err := netns.New(len(slots))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	nc := &netnsCluster{Cluster: c, testCluster: testCluster{keyfile: writeKey(t), seed: c.Hosts[0].Addr + ":7946"}}
	for i, h := range c.Hosts {
		args := []string{"agent", "--bind", h.Addr + ":7946", "--slots", strconv.Itoa(slots[i]),
			"--keyfile", nc.keyfile, "--name", fmt.Sprintf("h%d", i)}
		if i > 0 {
			args = append(args, "--join", nc.seed)
		}
		a := startCmd(t, h.Command(ctx, golaunchBin, args...))
		a.line(t, fmt.Sprintf("golaunch agent h%d: gossip %s", i, h.Addr), 10*time.Second)
		nc.agentList = append(nc.agentList, a)
	}
	return nc
}

// submitFrom0 starts golaunch on host h0 as a submitter to the cluster with args.
func (nc *netnsCluster) submitFrom0(t *testing.T, ctx context.Context, args ...string) *running {
	t.Helper()
	return startCmd(t, nc.Hosts[0].Command(ctx, golaunchBin, nc.submit(args...)...))
}
