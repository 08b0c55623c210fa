package launcher

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// Rank programs of the RMA jobs across hosts, built once (without -race) on first use.
var (
	rmaprogProg = &program{pkg: "../tests/rmaprog"}
	dhtProg     = &program{pkg: "../apps/dht"}
)

// RMA across real processes and hosts: 4 network-namespace hosts, one agent each, 2 ranks
// per host (shm within a host, tcp between), so that the window page cache is on and
// serves Gets from the other hosts.
//
//   - rmaprog stale: the stale-read checker; it must pass with 0 stale reads, and the
//     cache must have served some Gets (else the check proved nothing about the cache);
//   - apps/dht with small counts and the cache on: a correctness run, every lookup's
//     value verified, with hits.
func TestNetnsRMA(t *testing.T) {
	if ok, why := netns.Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	binaries(t)
	rmaprog, dht := rmaprogProg.path(t), dhtProg.path(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	c := startNetnsCluster(t, ctx, 2, 2, 2, 2)
	// job runs a job of 8 ranks from host 0 and returns its stdout once it exited 0.
	job := func(t *testing.T, args ...string) string {
		t.Helper()
		gl := c.submitFrom0(t, ctx, append([]string{"-n", "8", "--timeout", testbudget.Scale(30 * time.Second).String()}, args...)...)
		code := gl.wait(t, 35*time.Second)
		var out []string
		for l := range gl.lines {
			out = append(out, l)
		}
		stdout := strings.Join(out, "\n")
		if code != 0 {
			t.Fatalf("golaunch %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, gl.stderr.String())
		}
		return stdout
	}

	t.Run("stale", func(t *testing.T) {
		out := job(t, rmaprog, "stale", "--rounds", "200")
		mustContain(t, "rmaprog stale output", out, "PASS stale 8 ranks")
		m := regexp.MustCompile(`stale: 8 ranks, (\d+) ops, (\d+) gets, (\d+) stale reads; cache hits (\d+), misses (\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no counts line in the output:\n%s", out)
		}
		if m[3] != "0" {
			t.Errorf("%s stale reads:\n%s", m[3], out)
		}
		if hits, _ := strconv.Atoi(m[4]); hits == 0 {
			t.Errorf("no cache hits across hosts: the checker did not exercise the cache:\n%s", out)
		}
		t.Logf("%s", m[0])
	})

	t.Run("dht", func(t *testing.T) {
		out := job(t, dht, "--keys", "4096", "--lookups", "400", "--zipf", "1.1", "--update-frac", "0.01", "--batch", "64", "--cache", "on")
		mustContain(t, "dht output", out, "every lookup's value verified")
		mustContain(t, "dht output", out, "8 ranks on 4 host(s), rank 0's peers by transport map[shm:1 tcp:6]")
		m := regexp.MustCompile(`\[0\] on\s+\S+\s+\S+\s+\S+\s+\S+\s+(\d+)\s+(\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no row for the cache on in the output:\n%s", out)
		}
		if hits, _ := strconv.Atoi(m[1]); hits == 0 {
			t.Errorf("no cache hits with hot keys across hosts:\n%s", out)
		}
		t.Logf("\n%s", out)
	})
}
