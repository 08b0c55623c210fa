package gorma_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// ownModuleHeading opens the README section that TestReadmeOwnModule follows.
const ownModuleHeading = "## Use it in your own module"

// readmeFence is a fenced code block of the README: its language and its text.
var readmeFence = regexp.MustCompile("(?ms)^```(sh|go)\n(.*?)^```\n")

// cloneLine is the README's clone command: the test links the checkout there instead.
var cloneLine = regexp.MustCompile(`^git clone \S+ (\S+)\s*$`)

// ownModuleScript returns the README section's commands as one bash script, the Go block
// written to main.go where the README says to save it, and the rank count of its golaunch
// line. The clone becomes a symbolic link to repo, so the script needs no network.
func ownModuleScript(readme, repo string) (script string, ranks int, err error) {
	_, sec, ok := strings.Cut(readme, "\n"+ownModuleHeading+"\n")
	if !ok {
		return "", 0, fmt.Errorf("README.md has no %q section", ownModuleHeading)
	}
	if end := strings.Index(sec, "\n## "); end >= 0 {
		sec = sec[:end]
	}
	var b strings.Builder
	b.WriteString("set -euo pipefail\n")
	clones, gos := 0, 0
	for _, m := range readmeFence.FindAllStringSubmatch(sec, -1) {
		if m[1] == "go" {
			gos++
			fmt.Fprintf(&b, "cat > main.go <<'README_GO'\n%sREADME_GO\n", m[2])
			continue
		}
		for _, line := range strings.Split(strings.TrimRight(m[2], "\n"), "\n") {
			if c := cloneLine.FindStringSubmatch(line); c != nil {
				clones++
				fmt.Fprintf(&b, "mkdir -p \"$(dirname %s)\" && ln -s %q %s\n", c[1], repo, c[1])
				continue
			}
			b.WriteString(line + "\n")
		}
	}
	if clones != 1 || gos != 1 {
		return "", 0, fmt.Errorf("%q: %d git clone lines and %d Go blocks, want one of each", ownModuleHeading, clones, gos)
	}
	n := regexp.MustCompile(`golaunch -n (\d+) `).FindStringSubmatch(b.String())
	if n == nil {
		return "", 0, fmt.Errorf("%q runs no golaunch -n N", ownModuleHeading)
	}
	ranks, _ = strconv.Atoi(n[1])
	return b.String(), ranks, nil
}

// TestReadmeOwnModule follows README's "Use it in your own module" to the letter in a
// fresh home directory: the clone (a link to this checkout), golaunch installed into a
// GOPATH of its own and put on PATH, a module outside the repository with a replace
// directive, go mod tidy, the build, and the job. The module cache serves every
// requirement (GOPROXY=off): the test needs no network. Every rank must print its line
// with the sum of the ranks.
func TestReadmeOwnModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds golaunch and a program: not in -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	repo := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, ranks, err := ownModuleScript(string(readme), repo)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, k := range []string{"GOMODCACHE", "GOCACHE"} {
		out, err := exec.Command(goBin, "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		env[k] = strings.TrimSpace(string(out))
	}
	home := t.TempDir()
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	budget := testbudget.Scale(5 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"HOME="+home,
		"GOPATH="+filepath.Join(home, "go"), // golaunch lands in its bin, which PATH must name
		"GOMODCACHE="+env["GOMODCACHE"],     // the repository's requirements, already downloaded
		"GOCACHE="+env["GOCACHE"],
		"GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local",
		"GOFLAGS=-buildvcs=false",
		"PATH="+filepath.Dir(goBin)+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the README's commands had not finished within %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", budget, script, &stdout, &stderr)
	}
	if err != nil {
		t.Fatalf("the README's commands: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, &stdout, &stderr)
	}
	for r := range ranks {
		want := fmt.Sprintf("[%d] rank %d of %d: sum of ranks %d\n", r, r, ranks, ranks*(ranks-1)/2)
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("no line %q in the job's output:\n%s\nstderr:\n%s", want, &stdout, &stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "go", "bin", "golaunch")); err != nil {
		t.Errorf("golaunch is not in $(go env GOPATH)/bin: %v", err)
	}
}
