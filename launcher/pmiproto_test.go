package launcher

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestPMIProtocolError sends each bad form of the PMI wire from rank 1 of a real job
// (pmiprog raw) while rank 0 waits in the fence. The job must end at once with exit 125
// and a summary that names the rank, the command and the reason, and the agent must log
// it. The startup limit is off, so a silent error would hang the job until --timeout.
func TestPMIProtocolError(t *testing.T) {
	binaries(t)
	long := strings.Repeat("k", 80)
	for _, tc := range []struct {
		name, where, line string
		cmd, reason       string // in the summary
	}{
		{"long line", "fd-pre", "long:1048576", "cmd=put", "line too long: no newline within 65536 bytes"},
		{"long line after init", "fd-post", "long:1048576", "cmd=put", "line too long"},
		{"unknown command", "fd-post", `"cmd=frobnicate\n"`, "cmd=frobnicate", `unknown command "frobnicate"`},
		{"pmi_version 99", "fd-pre", `"cmd=init pmi_version=99 pmi_subversion=0\n"`, "cmd=init", `pmi_version="99"`},
		{"pmi_version 2", "fd-pre", `"cmd=init pmi_version=2 pmi_subversion=0\n"`, "cmd=init", "golaunch serves PMI-1"},
		{"init without version", "fd-pre", `"cmd=init\n"`, "cmd=init", `pmi_version=""`},
		{"second init", "fd-post", `"cmd=init pmi_version=1 pmi_subversion=1\n"`, "cmd=init", "second init"},
		{"field without key", "fd-post", `"cmd=put =v key=k\n"`, "cmd=put", "has no key"},
		{"line without cmd", "fd-post", `"key=k value=v\n"`, "a line without cmd=NAME", "does not start with cmd=NAME"},
		{"lone backslash", "fd-post", `"cmd=get key=k\\\n"`, "cmd=get", "lone backslash"},
		{"before init", "fd-pre", `"cmd=get_maxes\n"`, "cmd=get_maxes", "get_maxes before init"},
		{"put long key", "fd-post", strconv.Quote("cmd=put kvsname=k key=" + long + " value=v\n"), "cmd=put", "key of 80 bytes exceeds keylen_max=64"},
		{"put long value", "fd-post", strconv.Quote("cmd=put kvsname=k key=k value=" + strings.Repeat("v", 2000) + "\n"), "cmd=put",
			"value of 2000 bytes exceeds vallen_max=1024"},
		{"put without key", "fd-post", `"cmd=put kvsname=k value=v\n"`, "cmd=put", "put without key="},
		{"get long key", "fd-post", strconv.Quote("cmd=get kvsname=k key=" + long + "\n"), "cmd=get", "key of 80 bytes exceeds keylen_max=64"},
		{"get without key", "fd-post", `"cmd=get kvsname=k\n"`, "cmd=get", "get without key="},
		{"abort exitcode", "fd-post", `"cmd=abort exitcode=x\n"`, "cmd=abort", `exitcode="x" is not an integer`},
		{"garbage", "fd-post", `"\x00\xff\x01garbage\n"`, "a line without cmd=NAME", "not printable ASCII"},
		{"PMI-2 frame", "fd-post", `"44    cmd=fullinit;pmijobid=j;pmirank=1;threaded=FALSE;\n"`, "a line without cmd=NAME", "does not start with cmd=NAME"},
		{"socket before gorma-init", "sock-pre", `"cmd=barrier_in\n"`, "cmd=barrier_in", "barrier_in before init"},
		{"socket gorma version", "sock-pre", `"cmd=gorma-init version=99 rank={rank} job={job}\n"`, "cmd=gorma-init", "rank speaks PMI version 99"},
		{"socket after gorma-init", "sock-post", `"cmd=frobnicate id=7\n"`, "cmd=frobnicate", `unknown command "frobnicate"`},
		{"socket long key", "sock-post", strconv.Quote("cmd=put key=" + long + " value=00 id=7\n"), "cmd=put", "key of 80 bytes exceeds keylen_max=64"},
		{"socket long line", "sock-post", "long:1048576", "cmd=put", "line too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := testbudget.Scale(20 * time.Second)
			r := runGL(t, "", "-v", "-n", "2", "--startup-timeout", "0", "--timeout", budget.String(),
				pmiprogBin, "raw", "1", tc.where, tc.line)
			summary := abortLine(r.stderr)
			if r.code == ExitTimeout {
				t.Fatalf("rank 1's PMI protocol error (%s) did not end the job within %v:\n%s", tc.name, budget, r.stderr)
			}
			if r.code != ExitFailure {
				t.Errorf("exit code %d, want %d", r.code, ExitFailure)
			}
			for _, want := range []string{"golaunch: rank 1 (host ", "PMI protocol error in " + tc.cmd + ": ", tc.reason, "; job aborted"} {
				if !strings.Contains(summary, want) {
					t.Errorf("summary %q lacks %q; stderr:\n%s", summary, want, r.stderr)
				}
			}
			if !strings.Contains(r.stderr, "rank 1: PMI protocol error in "+tc.cmd) {
				t.Errorf("the agent did not log the protocol error; stderr:\n%s", r.stderr)
			}
		})
	}
}

// abortLine returns golaunch's summary line in stderr, or "".
func abortLine(stderr string) string {
	for _, l := range summaryLines(stderr) {
		if strings.HasSuffix(l, "; job aborted") || strings.HasSuffix(l, "; job killed") {
			return l
		}
	}
	return ""
}
