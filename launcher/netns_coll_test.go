package launcher

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// collprogProg is the collectives' rank program, built once (without -race) on first use.
var collprogProg = &program{pkg: "../tests/collprog"}

// Every collective across real processes on uneven hosts: 3 network-namespace hosts, one
// agent each with 2, 2 and 1 slots, so the 5 ranks reach each other through shm on a host
// and tcp between hosts, and Allreduce's automatic selection picks the hierarchical
// algorithm. collprog checks every result against a sequential reference and prints the
// PASS line at rank 0 when every rank agreed.
func TestNetnsCollectives(t *testing.T) {
	start := time.Now()
	stdout := collprogOnNetns(t, []int{2, 2, 1}, 40*time.Second)
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
	start := time.Now()
	stdout := collprogOnNetns(t, []int{1, 1, 1}, 70*time.Second, "--counts", "7,800003")
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
	start := time.Now()
	stdout := collprogOnNetns(t, []int{2, 2}, 70*time.Second, "--counts", "7,300003")
	mustContain(t, "collprog output", stdout, "collprog: 4 ranks on hosts h0 h0 h1 h1")
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// collprogOnNetns starts a cluster of network-namespace hosts with the given slots (one
// agent each; the test is skipped where namespaces are not available), runs collprog
// with flags on every slot with a job timeout of timeout, fails the test unless it exits
// 0 with the PASS line of every rank, and returns its standard output.
func collprogOnNetns(t *testing.T, slots []int, timeout time.Duration, flags ...string) string {
	t.Helper()
	if ok, why := netns.Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	binaries(t)
	collprog := collprogProg.path(t)
	timeout = testbudget.Scale(timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+testbudget.Scale(20*time.Second))
	defer cancel()
	c := startNetnsCluster(t, ctx, slots...)
	n := 0
	for _, k := range slots {
		n += k
	}
	args := append([]string{"-n", fmt.Sprint(n), "--timeout", timeout.String(), collprog}, flags...)
	gl := c.submitFrom0(t, ctx, args...)
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
