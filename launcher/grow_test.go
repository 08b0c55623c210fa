package launcher

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// spawnprogProg is built with -race under -race: its ranks run the runtime's growth.
var spawnprogProg = &program{pkg: "../tests/spawnprog", race: true}

// TestPlanSpawn: new ranks fill the hosts in the order spawnHosts gives (agents that
// joined after the job began first), each up to its free slots; beyond them only with
// --oversubscribe, one per host in turn; otherwise the error says how many are free and
// what to do.
func TestPlanSpawn(t *testing.T) {
	hosts := []slotHost{{name: "new", free: 1, fresh: true}, {name: "h0", free: 0}, {name: "h1", free: 2}}
	for _, tc := range []struct {
		name  string
		hosts []slotHost
		n     int
		over  bool
		join  string
		want  string // the hosts of the new ranks, or the error's text
	}{
		{"the new agent first", hosts, 1, false, "10.0.0.1:7946", "new"},
		{"then free slots", hosts, 3, false, "10.0.0.1:7946", "new h1 h1"},
		{"oversubscribed in turn", hosts, 5, true, "10.0.0.1:7946", "new h1 h1 new h0"},
		{"short", hosts, 4, false, "10.0.0.1:7946",
			"no free slots for 4 ranks: only 3 free on 3 agents; start an agent with `golaunch agent --join 10.0.0.1:7946 ...` or pass --oversubscribe"},
		{"all full", []slotHost{{name: "h0"}, {name: "h1", free: -1}, {name: "h2"}}, 2, false, "seed:7946",
			"no free slots for 2 ranks: 3 agents, all full; start an agent with `golaunch agent --join seed:7946 ...` or pass --oversubscribe"},
		{"one agent, full", []slotHost{{name: "h0"}}, 1, false, "seed:7946",
			"no free slots for 1 rank: 1 agent, full; start an agent with `golaunch agent --join seed:7946 ...` or pass --oversubscribe"},
		{"a local run", []slotHost{{name: "vm"}}, 2, false, "",
			"no free slots for 2 ranks: this host's slots are all taken; give the job more slots (-H localhost:N with N above the job's ranks) or pass --oversubscribe"},
	} {
		seq, err := planSpawn(tc.hosts, tc.n, tc.over, tc.join)
		var got string
		if err != nil {
			got = err.Error()
		} else {
			var names []string
			for _, i := range seq {
				names = append(names, tc.hosts[i].name)
			}
			got = strings.Join(names, " ")
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRosterGrown: the new ranks follow the job's, each host's local ranks continue, and
// a host new to the job comes after its hosts; the grown roster passes Check.
func TestRosterGrown(t *testing.T) {
	r, err := PlanRanks([]HostSlots{{Name: "a", Slots: 2}, {Name: "b", Slots: 1}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	g := r.grown([]string{"c", "a", "c"})
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	if g.Size != 6 || strings.Join(g.Hosts, " ") != "a b c" || fmt.Sprint(g.RankHost) != "[0 0 1 2 0 2]" ||
		fmt.Sprint(g.LocalRank) != "[0 1 0 0 2 1]" || fmt.Sprint(g.LocalSize) != "[3 1 2]" {
		t.Errorf("grown roster %+v", g)
	}
	if r.Size != 3 || len(r.RankHost) != 3 || len(r.Hosts) != 2 {
		t.Errorf("growing changed the roster it grew from: %+v", r)
	}
}

// spawnRun runs spawnprog with golaunch's args and the program's flags, and returns its
// exit code and stdout.
func spawnRun(t *testing.T, args []string, flags ...string) (int, string) {
	t.Helper()
	prog := spawnprogProg.path(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	all := append(append(append([]string{}, args...), "--timeout", testbudget.Scale(40*time.Second).String(), prog), flags...)
	r := startCmd(t, exec.CommandContext(ctx, golaunchBin, all...))
	code := r.wait(t, 50*time.Second)
	var out []string
	for l := range r.lines {
		out = append(out, l)
	}
	stdout := strings.Join(out, "\n")
	if code != 0 {
		t.Logf("golaunch %v: exit %d\nstdout:\n%s\nstderr:\n%s", all, code, stdout, r.stderr.String())
	}
	return code, stdout
}

// TestGrowOneHost: a job of 2 ranks with 4 slots spawns 2 more; the ranks of both sides
// merge the intercommunicator and an Allreduce over the 4 is right at every rank. So is
// a job of 1 rank, which opens its first device for its spawned peer, a spawn beyond
// the slots with --oversubscribe, one over tcp, and one of a job under --ft.
func TestGrowOneHost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		flags []string
		size  int
	}{
		{"2+2", []string{"-H", "localhost:4", "-n", "2"}, nil, 4},
		{"1+1", []string{"-H", "localhost:2", "-n", "1"}, []string{"--spawn", "1"}, 2},
		{"oversubscribed", []string{"-n", "2", "--oversubscribe"}, []string{"--spawn", "3"}, 5},
		{"tcp", []string{"-H", "localhost:4", "-n", "2", "--transport", "tcp"}, nil, 4},
		{"ft", []string{"--ft", "-H", "localhost:4", "-n", "2"}, nil, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout := spawnRun(t, tc.args, tc.flags...)
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			mustContain(t, "spawnprog's output", stdout, fmt.Sprintf("PASS spawnprog %d ranks", tc.size))
			children := regexp.MustCompile(`rank \d+ of \d+, child`).FindAllString(stdout, -1)
			parents := regexp.MustCompile(`rank \d+ of \d+, parent`).FindAllString(stdout, -1)
			if len(children)+len(parents) != tc.size || len(parents) != tc.size-len(children) || len(children) == 0 {
				t.Errorf("%d parents and %d children, want %d ranks in all:\n%s", len(parents), len(children), tc.size, stdout)
			}
		})
	}
}

// TestGrowRefused: a spawn that the job's slots cannot hold fails at every rank of the
// spawning World, with golaunch's account of the slots and what to do, and the job goes
// on to finalize. So does, under --ft, a spawn whose new ranks exit before their Init
// completes, the error naming one; without --ft that aborts the job with the rank's code.
func TestGrowRefused(t *testing.T) {
	code, stdout := spawnRun(t, []string{"-n", "2"}, "--refused")
	if code != 0 {
		t.Fatalf("no free slots: exit %d", code)
	}
	mustContain(t, "spawnprog's output", stdout,
		"asked golaunch for 2 ranks: no free slots for 2 ranks: this host's slots are all taken; give the job more slots (-H localhost:N with N above the job's ranks) or pass --oversubscribe")

	code, stdout = spawnRun(t, []string{"--ft", "-H", "localhost:4", "-n", "2"}, "--refused", "--children-exit", "3")
	if code != 0 {
		t.Fatalf("spawned ranks that exit under --ft: exit %d", code)
	}
	if !regexp.MustCompile(`asked golaunch for 2 ranks: spawned rank [23] \(host [^,]+, pid \d+\) exited with code 3 before it finished Init`).MatchString(stdout) {
		t.Errorf("spawned ranks that exit under --ft: the refusal does not name one:\n%s", stdout)
	}

	prog := spawnprogProg.path(t)
	r := startCmd(t, exec.Command(golaunchBin, "-H", "localhost:4", "-n", "2", "--timeout", testbudget.Scale(40*time.Second).String(),
		prog, "--children-exit", "3"))
	if code := r.wait(t, 50*time.Second); code != 3 {
		t.Errorf("spawned ranks that exit without --ft: exit %d, want 3\n%s", code, r.stderr.String())
	}
	if !regexp.MustCompile(`golaunch: rank [23] \(host [^,]+, pid \d+\) exited with code 3; job aborted`).MatchString(r.stderr.String()) {
		t.Errorf("spawned ranks that exit without --ft: no summary naming one:\n%s", r.stderr.String())
	}
}
