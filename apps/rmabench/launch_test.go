package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestGolaunch runs rmabench through golaunch as scripts/compare-rma.sh does: a quick
// subset of the cases at four ranks, whose text and JSON must parse, then a job of three
// ranks, which must fail naming its rank count and the fix.
func TestGolaunch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds golaunch and runs jobs")
	}
	dir := t.TempDir()
	golaunch, prog := filepath.Join(dir, "golaunch"), filepath.Join(dir, "rmabench")
	for _, args := range [][]string{
		{"build", "-o", golaunch, "../../launcher/cmd/golaunch"},
		{"build", "-o", prog, "."},
	} {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	job := func(n string, args ...string) (string, error) {
		ctx, cancel := testbudget.Context(context.Background(), 2*time.Minute, "the end of the job of "+n+" ranks")
		defer cancel()
		cmd := exec.CommandContext(ctx, golaunch, append([]string{"-n", n, "--tag-output=false", prog}, args...)...)
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("golaunch -n %s: %v\n%s", n, context.Cause(ctx), out)
		}
		return string(out), err
	}

	doc := filepath.Join(dir, "rma.json")
	names := []string{"put_lat.lock_all", "put_lat.fence", "get_lat.pscw", "put_bw", "fop_lat", "busy_get", "fence", "alloc_free.allocate"}
	out, err := job("4", "--test", strings.Join(names, ","), "--max-size", "16", "--iters", "20", "--bw-iters", "2",
		"--alloc-iters", "2", "--busy", "20ms", "--busy-reps", "1", "--json="+doc)
	if err != nil {
		t.Fatalf("golaunch -n 4: %v\n%s", err, out)
	}
	checkTables(t, out, names)
	if !strings.Contains(out, pairsLine(4)) {
		t.Errorf("no line %q in:\n%s", pairsLine(4), out)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Ranks != 4 || len(rep.Tables) != len(names) {
		t.Errorf("JSON document: %d ranks and %d tables, want 4 and %d", rep.Ranks, len(rep.Tables), len(names))
	}

	out, err = job("3", "--test", "fence", "--iters", "20")
	if want := checkRanks(3).Error(); err == nil || !strings.Contains(out, want) {
		t.Errorf("golaunch -n 3: %v, want a failure saying %q; output:\n%s", err, want, out)
	}
}
