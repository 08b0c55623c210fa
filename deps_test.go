package gorma_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the module's import path, as in go.mod.
const modulePath = "github.com/gorma-hpc/gorma"

// layers is the import order of DESIGN.md ("Packages and import direction"): a package may
// import packages of its own layer and of the layers above it, never below. A package
// belongs to the layer with the longest matching prefix, so window/coherence/x is in
// window/coherence and launcher/cmd/golaunch is in launcher.
var layers = []string{
	"transport/verbs",
	"transport/verbs/arena",
	"transport/verbs/idlewatch",
	"transport/verbs/shm",
	"transport/verbs/tcp",
	"transport/verbs/sim",
	"transport/verbs/verbstest",
	"pmi",
	"runtime",
	"collectives",
	"window/coherence",
	"window",
	"launcher",
	"internal/testprog",
	"apps",
}

// externalModules are the third-party modules DESIGN.md admits. Anything else must earn
// its place: add it here in the commit that argues for it.
var externalModules = []string{
	"github.com/hashicorp/memberlist",
	"github.com/spf13/pflag",
	"golang.org/x/sys",
	"gonum.org/v1/plot", // bench/chart only: the comparison's SVG charts (DESIGN.md: "a plotting library for benchmark charts is reasonable")
}

// layerOf returns the index in layers of the module-relative package path rel, or -1.
func layerOf(rel string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		if (rel == l || strings.HasPrefix(rel, l+"/")) && len(l) > bestLen {
			best, bestLen = i, len(l)
		}
	}
	return best
}

// under reports whether rel is the package dir or one of its sub-packages.
func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

func isStdlib(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

// checkImport returns why the package at module-relative path from ("" for the root) may
// not import imp (a full import path), or nil. test is true for imports of _test.go files:
// they may import down the list (a provider's tests run verbstest) and transport/verbs's
// tests may use more than the standard library, but the explicit "never" rules, the list
// of admitted modules and the ban on cgo hold for them too.
func checkImport(from, imp string, test bool) error {
	if imp == "C" {
		return fmt.Errorf("cgo (import \"C\"): DESIGN.md allows no cgo")
	}
	verbsCore := from != "" && layerOf(from) == 0 && !test // transport/verbs itself, not its tests
	if imp != modulePath && !strings.HasPrefix(imp, modulePath+"/") {
		if isStdlib(imp) {
			return nil
		}
		if verbsCore {
			return fmt.Errorf("transport/verbs imports only the standard library")
		}
		for _, mod := range externalModules {
			if under(imp, mod) {
				return nil
			}
		}
		return fmt.Errorf("third-party module not admitted by DESIGN.md (admitted: %s)",
			strings.Join(externalModules, ", "))
	}
	to := strings.TrimPrefix(strings.TrimPrefix(imp, modulePath), "/")
	// The explicit rules of DESIGN.md.
	switch {
	case to == "":
		return fmt.Errorf("the root package holds only documentation and tests")
	case under(to, "apps") && from != to && !(under(to, "apps/internal") && under(from, "apps")):
		// The benchmark programs share apps/internal (the timing method, flag types);
		// nothing outside apps/ imports anything of it.
		return fmt.Errorf("nothing imports apps/...")
	case under(from, "transport") && (under(to, "runtime") || under(to, "window") ||
		under(to, "collectives") || under(to, "launcher") || under(to, "pmi")):
		return fmt.Errorf("transport/... never imports runtime, window, collectives, launcher or pmi")
	case under(from, "collectives") && (under(to, "window") || under(to, "transport")):
		return fmt.Errorf("collectives never imports window or transport")
	case under(from, "window/coherence") && !under(to, "window/coherence"):
		return fmt.Errorf("window/coherence imports nothing of the module")
	case verbsCore && layerOf(to) != 0:
		return fmt.Errorf("transport/verbs imports only the standard library")
	}
	if from == "" {
		return nil // the root package's tests may look at anything but apps
	}
	fl, tl := layerOf(from), layerOf(to)
	if fl < 0 {
		return fmt.Errorf("package %s is in no layer of DESIGN.md; add it to the list in deps_test.go", from)
	}
	if tl < 0 {
		return fmt.Errorf("package %s is in no layer of DESIGN.md; add it to the list in deps_test.go", to)
	}
	if tl > fl && !test {
		return fmt.Errorf("imports point down the list only: %s (layer %d) is below %s (layer %d)",
			layers[tl], tl, layers[fl], fl)
	}
	return nil
}

// importEdge is one import of one package.
type importEdge struct {
	From string // module-relative package dir, "" for the root
	Imp  string // full import path
	Test bool   // from a _test.go file
	Pos  string // file:line
}

// moduleRoot returns the directory holding go.mod (the test runs in the root package).
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("root tests must run at the module root: %v", err)
	}
	return dir
}

// goDirs calls fn for every directory of the module that the go tool would consider,
// skipping testdata, hidden and underscore directories and nested modules.
func goDirs(root string, fn func(rel, dir string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root {
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") ||
				strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if rel == "." {
			rel = ""
		}
		return fn(filepath.ToSlash(rel), path)
	})
}

// moduleImports parses the imports of every Go file of the module.
func moduleImports(t *testing.T, root string) []importEdge {
	t.Helper()
	var edges []importEdge
	fset := token.NewFileSet()
	err := goDirs(root, func(rel, dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, is := range f.Imports {
				imp, err := strconv.Unquote(is.Path.Value)
				if err != nil {
					return err
				}
				p := fset.Position(is.Pos())
				r, _ := filepath.Rel(root, p.Filename)
				edges = append(edges, importEdge{From: rel, Imp: imp,
					Test: strings.HasSuffix(e.Name(), "_test.go"),
					Pos:  fmt.Sprintf("%s:%d", filepath.ToSlash(r), p.Line)})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return edges
}

func TestImportDirection(t *testing.T) {
	root := moduleRoot(t)
	edges := moduleImports(t, root)
	if len(edges) == 0 {
		t.Fatal("found no imports at all; is the walk broken?")
	}
	for _, e := range edges {
		if err := checkImport(e.From, e.Imp, e.Test); err != nil {
			t.Errorf("%s: forbidden import %q: %v", e.Pos, e.Imp, err)
		}
	}
}

// TestCheckImport proves that the checker catches forbidden edges and lets allowed ones
// through, on synthetic edges.
func TestCheckImport(t *testing.T) {
	m := func(rel string) string { return modulePath + "/" + rel }
	tests := []struct {
		from, imp string
		test      bool
		ok        bool
	}{
		// Allowed: down the list, standard library, admitted modules.
		{"transport/verbs/arena", m("transport/verbs"), false, true},
		{"transport/verbs/shm", m("transport/verbs/arena"), false, true},
		{"transport/verbs/shm", "golang.org/x/sys/unix", false, true},
		{"transport/verbs/tcp", m("transport/verbs"), false, true},
		{"transport/verbs/verbstest", m("transport/verbs/sim"), false, true},
		{"runtime", m("transport/verbs/shm"), false, true},
		{"runtime", m("pmi"), false, true},
		{"collectives", m("runtime"), false, true},
		{"window", m("window/coherence"), false, true},
		{"window", m("collectives"), false, true},
		{"launcher", m("pmi"), false, true},
		{"launcher/cmd/golaunch", m("launcher"), false, true},
		{"launcher", "github.com/hashicorp/memberlist", false, true},
		{"apps/verbsperf", m("transport/verbs/tcp"), false, true},
		{"apps/verbsperf", "github.com/spf13/pflag", false, true},
		{"transport/verbs", "sync/atomic", false, true},
		{"window/coherence", "math/rand/v2", false, true},
		{"transport/verbs/shm/internal/ring", m("transport/verbs/shm"), false, true},
		{"transport/verbs/shm", m("transport/verbs/shm/internal/ring"), false, true},
		// Tests may reach down for shared suites, but keep the explicit rules.
		{"transport/verbs/shm", m("transport/verbs/verbstest"), true, true},
		{"pmi", m("runtime"), true, true},
		{"", m("apps/verbsperf"), true, false},
		{"", m("runtime"), true, true},

		// Forbidden: up the list.
		{"transport/verbs/arena", m("transport/verbs/shm"), false, false},
		{"transport/verbs/shm", m("transport/verbs/tcp"), false, false},
		{"transport/verbs/shm", m("transport/verbs/verbstest"), false, false},
		{"pmi", m("runtime"), false, false},
		{"runtime", m("collectives"), false, false},
		{"window/coherence", m("window"), false, false},
		{"runtime", m("launcher"), false, false},
		// Forbidden: the explicit rules, also from test files.
		{"transport/verbs/tcp", m("runtime"), true, false},
		{"transport/verbs/shm", m("window"), true, false},
		{"transport/verbs/sim", m("collectives"), true, false},
		{"transport/verbs/verbstest", m("pmi"), true, false},
		{"collectives", m("window"), true, false},
		{"collectives", m("transport/verbs"), false, false},
		{"collectives", m("transport/verbs/shm"), true, false},
		{"window/coherence", m("transport/verbs"), false, false},
		{"window/coherence", m("runtime"), true, false},
		{"launcher", m("apps/verbsperf"), false, false},
		{"apps/other", m("apps/verbsperf"), false, false},
		{"apps/rmabench", m("apps/internal/benchkit"), false, true},
		{"runtime", m("apps/internal/benchkit"), false, false},
		{"transport/verbs", m("transport/verbs/arena"), false, false},
		{"transport/verbs/internal/x", m("transport/verbs/shm"), false, false},
		{"transport/verbs", "golang.org/x/sys/unix", false, false},
		{"transport/verbs", m("transport/verbs/sim"), true, true}, // verbs_test may use sim
		{"transport/verbs", m("runtime"), true, false},
		{"window", m(""), false, false},
		// Forbidden: unlisted dependencies, cgo, packages outside every layer.
		{"runtime", "github.com/pkg/errors", false, false},
		{"transport/verbs/shm", "C", false, false},
		{"internal/x", m("transport/verbs"), false, false},
		{"runtime", m("internal/x"), false, false},
	}
	for _, tc := range tests {
		err := checkImport(tc.from, tc.imp, tc.test)
		if (err == nil) != tc.ok {
			t.Errorf("checkImport(%q, %q, test=%v) = %v, want ok=%v", tc.from, tc.imp, tc.test, err, tc.ok)
		}
	}
}

// TestLayersAreDistinct guards the list itself against a bad edit.
func TestLayersAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range layers {
		if seen[l] || l == "" || strings.HasSuffix(l, "/") {
			t.Errorf("bad or duplicate layer %q", l)
		}
		seen[l] = true
	}
	if !slices.Contains(layers, "transport/verbs") || layerOf("transport/verbs") != 0 {
		t.Error("transport/verbs must be the first layer")
	}
}
