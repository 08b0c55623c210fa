package gorma_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// knobsPage holds the one table of the GORMA_* environment knobs, under knobsHeading: a
// row per knob, "| `GORMA_NAME` | default | effect |".
const (
	knobsPage    = "docs/api.md"
	knobsHeading = "## Environment knobs"
)

// internalKnobs are GORMA_* variables the code reads that users do not set, with the
// reason; the table leaves them out.
var internalKnobs = map[string]string{
	"GORMA_VERBSTEST_ROLE":   "set by the verbstest conformance suite for the helper processes it starts",
	"GORMA_TEST_SLACK":       "scales the time budgets of gorma's own tests (internal/testbudget)",
	"GORMA_TEST_SYSCPU":      "a pretend /sys/devices/system/cpu tree for the cache domains of real ranks in tests (collectives/internal/hostgroup/cachedom.go)",
	"GORMA_TEST_TIMEOUT":     "the package timeout of gorma's own tests at slack 1, under go test -timeout 0 (internal/testbudget)",
	"GORMA_REQUIRE_ENGINES":  "turns gorma's own tests' skips for a missing real engine into failures, in CI (internal/testbudget)",
	"GORMA_TEST_REFUSE_READ": "a fault hook of gorma's own tests: refuses one single-copy read of package collectives (launcher/single_test.go)",
}

var (
	knobName = regexp.MustCompile(`^GORMA_[A-Z0-9_]+$`)
	knobRow  = regexp.MustCompile("^\\|\\s*`(GORMA_[A-Z0-9_]+)`\\s*\\|([^|]*)\\|([^|]*)\\|\\s*$")
)

// codeKnobs returns every GORMA_* name that a non-test .go file of the module spells as a
// whole string literal (the knobs are constants such as runtime.EnvSpin), with the
// position of its first such literal.
func codeKnobs(t *testing.T, root string) map[string]string {
	t.Helper()
	knobs := map[string]string{}
	fset := token.NewFileSet()
	err := goDirs(root, func(rel, dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(node ast.Node) bool {
				lit, ok := node.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				v, err := strconv.Unquote(lit.Value)
				if err == nil && knobName.MatchString(v) {
					if _, seen := knobs[v]; !seen {
						p := fset.Position(lit.Pos())
						knobs[v] = filepath.ToSlash(filepath.Join(rel, n)) + ":" + strconv.Itoa(p.Line)
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return knobs
}

// docKnob is one row of the knob table.
type docKnob struct {
	line             int
	defaults, effect string
}

// tableKnobs returns the rows of the knob table of the page at path.
func tableKnobs(t *testing.T, path string) map[string]docKnob {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]docKnob{}
	in, found := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case l == knobsHeading:
			in, found = true, true
		case in && strings.HasPrefix(l, "## "):
			in = false
		case in:
			if m := knobRow.FindStringSubmatch(l); m != nil {
				if _, dup := rows[m[1]]; dup {
					t.Errorf("%s:%d: %s has a second row in the knob table", knobsPage, n, m[1])
				}
				rows[m[1]] = docKnob{line: n, defaults: strings.TrimSpace(m[2]), effect: strings.TrimSpace(m[3])}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("%s has no %q section: it holds the table of every GORMA_* knob", knobsPage, knobsHeading)
	}
	return rows
}

// TestKnobsDocumented checks the knob table of docs/api.md against the GORMA_* names the
// code reads: every knob has a row with a default and an effect, and every row names a
// knob.
func TestKnobsDocumented(t *testing.T) {
	root := moduleRoot(t)
	code := codeKnobs(t, root)
	if len(code) == 0 {
		t.Fatal("found no GORMA_* literal in the code; is the walk broken?")
	}
	rows := tableKnobs(t, filepath.Join(root, filepath.FromSlash(knobsPage)))
	names := make([]string, 0, len(code))
	for k := range code {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		row, ok := rows[k]
		_, internal := internalKnobs[k]
		switch {
		case internal && ok:
			t.Errorf("%s:%d: %s is internal (%s); drop its row or its entry in internalKnobs", knobsPage, row.line, k, internalKnobs[k])
		case internal:
		case !ok:
			t.Errorf("%s reads %s, which the knob table of %s (%q) lacks: add a row `| `%s` | default | effect |`",
				code[k], k, knobsPage, knobsHeading, k)
		case row.defaults == "" || row.effect == "":
			t.Errorf("%s:%d: the row of %s needs both a default and an effect", knobsPage, row.line, k)
		}
	}
	for k, row := range rows {
		if _, ok := code[k]; !ok {
			t.Errorf("%s:%d: the knob table names %s, which no non-test .go file of the module reads: remove the row", knobsPage, row.line, k)
		}
	}
	for k := range internalKnobs {
		if _, ok := code[k]; !ok {
			t.Errorf("internalKnobs names %s, which the code does not read: remove it", k)
		}
	}
	t.Logf("%d knobs in the table, %d internal", len(rows), len(internalKnobs))
}
