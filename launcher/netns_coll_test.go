package launcher

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// collprogProg is the collectives' rank program, built once (without -race) on first use.
var collprogProg = &program{pkg: "../collectives/internal/collprog"}

// Every collective across real processes on uneven hosts: 3 network-namespace hosts, one
// agent each with 2, 2 and 1 slots, so the 5 ranks reach each other through shm on a host
// and tcp between hosts, and Allreduce's automatic selection picks the hierarchical
// algorithm. collprog checks every result against a sequential reference and prints the
// PASS line at rank 0 when every rank agreed.
func TestNetnsCollectives(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		t.Skip(why)
	}
	binaries(t)
	collprog := collprogProg.path(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startNetnsCluster(t, ctx, 2, 2, 1)
	start := time.Now()
	stdout := runCollprog(t, ctx, c, 5, 40*time.Second, collprog)
	// The layout must be the uneven one the test is about: 3 hosts, 2 of them with 2 ranks.
	m := regexp.MustCompile(`collprog: 5 ranks on hosts (.*)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no hosts line in the output:\n%s", stdout)
	}
	perHost := map[string]int{}
	for _, h := range strings.Fields(m[1]) {
		perHost[h]++
	}
	if len(perHost) != 3 || perHost["h0"] != 2 || perHost["h1"] != 2 || perHost["h2"] != 1 {
		t.Errorf("ranks per host %v, want h0:2 h1:2 h2:1", perHost)
	}
	t.Logf("%s; took %v", m[0], time.Since(start).Round(time.Millisecond))
}

// Direct and pipelined direct Allreduce across real processes: 3 network-namespace hosts
// of 1 rank each, so the automatic selection takes the direct algorithm over tcp for the
// commutative operators. At 800003 elements per rank an int64 or float64 vector's blocks
// are 2.1 MiB, which the direct algorithm sends in two segments
// (allreduceDirectPipelined), in place and not; the int32 vector's 1.1 MiB blocks and the
// count of 7 take its two plain rounds, and the non-commutative operator Rabenseifner.
// collprog checks every result, and every other collective, against a sequential
// reference.
func TestNetnsCollectivesDirect(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		t.Skip(why)
	}
	binaries(t)
	collprog := collprogProg.path(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startNetnsCluster(t, ctx, 1, 1, 1)
	start := time.Now()
	stdout := runCollprog(t, ctx, c, 3, 70*time.Second, collprog, "--counts", "7,800003")
	mustContain(t, "collprog output", stdout, "collprog: 3 ranks on hosts h0 h1 h2")
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// Lanes across real processes: 2 network-namespace hosts of 2 ranks each, so the
// automatic selection takes lanes for long vectors of a commutative operator: an on-host
// reduce-scatter through shm, direct across the hosts over tcp, an on-host allgather,
// at 300003 elements per rank (2.4 MB of int64 or float64, 1.2 MB of int32: over the
// 1 MiB from which lanes applies), in place and not; the count of 7 takes recursive
// doubling, the non-commutative operator Rabenseifner. collprog checks every result, and
// every other collective, against a sequential reference.
func TestNetnsCollectivesLanes(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		t.Skip(why)
	}
	binaries(t)
	collprog := collprogProg.path(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startNetnsCluster(t, ctx, 2, 2)
	start := time.Now()
	stdout := runCollprog(t, ctx, c, 4, 70*time.Second, collprog, "--counts", "7,300003")
	mustContain(t, "collprog output", stdout, "collprog: 4 ranks on hosts h0 h0 h1 h1")
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// runCollprog runs collprog (args: its path and flags) on n ranks of cluster c with a job
// timeout of timeout, fails the test unless it exits 0 with the PASS line of n ranks, and
// returns its standard output.
func runCollprog(t *testing.T, ctx context.Context, c *netnsCluster, n int, timeout time.Duration, args ...string) string {
	t.Helper()
	gl := c.submitFrom0(t, ctx, append([]string{"-n", fmt.Sprint(n), "--timeout", timeout.String()}, args...)...)
	code := gl.wait(t, timeout+5*time.Second)
	var out []string
	for l := range gl.lines {
		out = append(out, l)
	}
	stdout := strings.Join(out, "\n")
	if code != 0 {
		t.Fatalf("golaunch collprog: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, gl.stderr.String())
	}
	mustContain(t, "collprog output", stdout, fmt.Sprintf("PASS collprog %d ranks", n))
	return stdout
}
