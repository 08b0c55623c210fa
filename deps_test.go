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
	"sync"
	"testing"
)

// modulePath is the module's import path, as in go.mod.
const modulePath = "github.com/gorma-hpc/gorma"

// archFile is the document whose fenced "layers" block is the layer list.
const archFile = "ARCHITECTURE.md"

// providers are the transport providers: the launcher imports none of them. Every
// package that registers a provider (verbs.Register) must be listed (TestProviders).
var providers = []string{"transport/verbs/shm", "transport/verbs/tcp"}

// leaves are the packages that import nothing of the module and that every layer may
// import: the accept loop of every listener, the tests' time budgets, the hang report
// that ranks produce and the launcher prints, the communication profile that ranks
// count and the launcher merges, the pooled packing buffers, the attribute sets of
// Worlds and windows, the shared futex of every shared-memory wait, and the writes of
// observation files that follow no other user's link, and the waits' yield to the rank's
// other goroutines.
// ARCHITECTURE.md lists them first, before transport/verbs. Every package under
// internal/ is one (TestInternalLeaves).
var leaves = []string{"internal/accept", "internal/testbudget", "internal/hang", "internal/trace", "internal/prof", "internal/packpool", "internal/attrset", "internal/futex", "internal/safefile", "internal/gosched"}

// cgoIsland is the one package that may import "C": gorma as a C library for MPICH
// programs (libmpich.so.12). Nothing of the module imports it; golaunch and Go rank
// programs stay static.
const cgoIsland = "abi/mpich"

// testsDir holds the rank programs and helpers of the tests. Only test files and tests/
// itself import it; Go would let any package do so, since it is not under internal/.
const testsDir = "tests"

// externalModules are the third-party modules ARCHITECTURE.md admits. Anything else must earn
// its place: add it here in the commit that argues for it.
var externalModules = []string{
	"github.com/hashicorp/memberlist",
	"github.com/spf13/pflag",
	"golang.org/x/sys",
	"gonum.org/v1/plot",      // bench/chart only: the comparison's SVG charts
	"golang.org/x/net",       // transport/sockets tests only: the nettest conformance suite
	"google.golang.org/grpc", // transport/sockets tests only: gRPC over upgraded connections
}

// layering is the layer list of ARCHITECTURE.md: a package may import packages of its
// own layer and of the layers above it, never below. A package belongs to the layer with
// the longest matching prefix, so window/coherence/x is in window/coherence and
// launcher/cmd/golaunch is in launcher.
type layering struct {
	layers []string        // module-relative paths, in order; a group's without "/..."
	groups map[string]bool // layers written "path/...": a group of packages, not a package
	pkgs   []string        // every package the list names
}

// parseLayers reads the fenced block that opens with "```layers" in the Markdown src. A
// line at the left margin is a layer, an indented one a package inside the layer above;
// the first field is the path, the rest a description.
func parseLayers(src string) (*layering, error) {
	_, block, ok := strings.Cut(src, "\n```layers\n")
	if !ok {
		return nil, fmt.Errorf("no fenced block opening with ```layers")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		return nil, fmt.Errorf("the ```layers block is not closed")
	}
	l := &layering{groups: map[string]bool{}}
	seen := map[string]bool{}
	for n, line := range strings.Split(block, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		path, indented := f[0], line[0] == ' ' || line[0] == '\t'
		group := strings.HasSuffix(path, "/...")
		path = strings.TrimSuffix(path, "/...")
		if path == "" || path == "." || strings.HasSuffix(path, "/") || strings.HasPrefix(path, "/") || seen[path] {
			return nil, fmt.Errorf("layers line %d: bad or duplicate path %q", n+1, f[0])
		}
		seen[path] = true
		switch {
		case indented && group:
			return nil, fmt.Errorf("layers line %d: a package line cannot be a group (%s)", n+1, f[0])
		case indented:
			if len(l.layers) == 0 {
				return nil, fmt.Errorf("layers line %d: package %s before any layer", n+1, path)
			}
			if top := l.layers[len(l.layers)-1]; l.layerOf(path) != len(l.layers)-1 {
				return nil, fmt.Errorf("layers line %d: package %s is not inside layer %s above it", n+1, path, top)
			}
			l.pkgs = append(l.pkgs, path)
		default:
			l.layers = append(l.layers, path)
			if group {
				l.groups[path] = true
			} else {
				l.pkgs = append(l.pkgs, path)
			}
		}
	}
	first := l.layers
	for len(first) > 0 && slices.Contains(leaves, first[0]) {
		first = first[1:] // the leaves every layer may use sit above the transport
	}
	if len(first) == 0 || first[0] != "transport/verbs" {
		return nil, fmt.Errorf("the first layer must be transport/verbs (only the leaves %s may come before it)",
			strings.Join(leaves, ", "))
	}
	return l, nil
}

// archLayers parses ARCHITECTURE.md at the module root (the test's directory).
var archLayers = sync.OnceValues(func() (*layering, error) {
	src, err := os.ReadFile(archFile)
	if err != nil {
		return nil, err
	}
	l, err := parseLayers(string(src))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archFile, err)
	}
	return l, nil
})

// mustLayers returns the layer list of ARCHITECTURE.md or fails the test.
func mustLayers(t *testing.T) *layering {
	t.Helper()
	l, err := archLayers()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// layerOf returns the index in l.layers of the module-relative package path rel, or -1.
func (l *layering) layerOf(rel string) int {
	best, bestLen := -1, -1
	for i, p := range l.layers {
		if under(rel, p) && len(p) > bestLen {
			best, bestLen = i, len(p)
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

// explicitRule returns the explicit rule of ARCHITECTURE.md ("Import rules") that forbids
// the package at from to import the module package to, or nil. They hold for test files
// too.
// testBudget is the package every package's tests run under (TestPackageTimeouts).
const testBudget = "internal/testbudget"

func explicitRule(from, to string) error {
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
	case under(from, "launcher") && slices.ContainsFunc(providers, func(p string) bool { return under(to, p) }):
		return fmt.Errorf("launcher imports no transport provider (the idle watcher is transport/verbs/idlewatch)")
	case under(from, "runtime") && under(to, "launcher"):
		return fmt.Errorf("runtime imports nothing under launcher/; it reaches its agent through pmi")
	case slices.ContainsFunc(leaves, func(p string) bool { return under(from, p) && !under(to, p) }):
		return fmt.Errorf("the leaves (%s) import nothing of the module", strings.Join(leaves, ", "))
	case under(from, "pmi") && !under(to, "pmi") && !under(to, "transport") &&
		!slices.ContainsFunc(leaves, func(p string) bool { return under(to, p) }):
		return fmt.Errorf("pmi imports nothing of the layers that use it (runtime and those after it)")
	case under(from, "collectives") && (under(to, "window") || under(to, "transport")):
		return fmt.Errorf("collectives never imports window or transport")
	case under(from, "collectives/internal/hostgroup") && under(to, "collectives") &&
		!under(to, "collectives/internal/hostgroup"):
		return fmt.Errorf("collectives/internal/hostgroup imports nothing of collectives")
	case under(from, "window/coherence") && !under(to, "window/coherence"):
		return fmt.Errorf("window/coherence imports nothing of the module")
	}
	return nil
}

// checkImport returns why the package at module-relative path from ("" for the root) may
// not import imp (a full import path), or nil. test is true for imports of _test.go files:
// they may import down the list (a provider's tests run verbstest) and transport/verbs's
// tests may use more than the standard library, and every package's tests may use
// internal/testbudget (a leaf of the standard library alone, which runs each package's
// tests), but the other explicit rules, the list of admitted modules and the ban on cgo
// hold for them too.
func (l *layering) checkImport(from, imp string, test bool) error {
	if imp == "C" {
		if from == cgoIsland && !test {
			return nil
		}
		return fmt.Errorf("cgo (import \"C\"): only %s has cgo (ARCHITECTURE.md)", cgoIsland)
	}
	if imp == modulePath+"/"+cgoIsland && from != cgoIsland+"/libmpich" && from != cgoIsland {
		return fmt.Errorf("only %s/libmpich imports the cgo island %s: the rest stays static", cgoIsland, cgoIsland)
	}
	verbs := slices.Index(l.layers, "transport/verbs")
	verbsCore := from != "" && l.layerOf(from) == verbs && !test // transport/verbs itself, not its tests
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
		return fmt.Errorf("third-party module not admitted by ARCHITECTURE.md (admitted: %s)",
			strings.Join(externalModules, ", "))
	}
	to := strings.TrimPrefix(strings.TrimPrefix(imp, modulePath), "/")
	if test && to == testBudget {
		return nil
	}
	if err := explicitRule(from, to); err != nil {
		return err
	}
	if !test && under(to, testsDir) && !under(from, testsDir) {
		return fmt.Errorf("only test files import %s/... (the tests' programs and helpers)", testsDir)
	}
	if verbsCore && l.layerOf(to) != verbs {
		return fmt.Errorf("transport/verbs imports only the standard library")
	}
	if from == "" {
		return nil // the root package's tests may look at anything but apps
	}
	fl, tl := l.layerOf(from), l.layerOf(to)
	if fl < 0 {
		return fmt.Errorf("package %s is in no layer of %s; add it to the list there", from, archFile)
	}
	if tl < 0 {
		return fmt.Errorf("package %s is in no layer of %s; add it to the list there", to, archFile)
	}
	if tl > fl && !test {
		return fmt.Errorf("imports point down the list of %s only: %s (layer %d) is below %s (layer %d)",
			archFile, l.layers[tl], tl, l.layers[fl], fl)
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
	l := mustLayers(t)
	root := moduleRoot(t)
	edges := moduleImports(t, root)
	if len(edges) == 0 {
		t.Fatal("found no imports at all; is the walk broken?")
	}
	for _, e := range edges {
		if err := l.checkImport(e.From, e.Imp, e.Test); err != nil {
			t.Errorf("%s: forbidden import %q: %v", e.Pos, e.Imp, err)
		}
	}
}

// modulePackages returns the module-relative directories of the module's packages (those
// holding Go files), the root excepted.
func modulePackages(t *testing.T, root string) []string {
	t.Helper()
	var pkgs []string
	err := goDirs(root, func(rel, dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
				if rel != "" {
					pkgs = append(pkgs, rel)
				}
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestLayerList holds ARCHITECTURE.md's list to the tree: every package of the module is
// on it (in a layer, on a line of its own), every package it names exists, and every
// layer holds a package.
func TestLayerList(t *testing.T) {
	l := mustLayers(t)
	pkgs := modulePackages(t, moduleRoot(t))
	if len(pkgs) == 0 {
		t.Fatal("found no package at all; is the walk broken?")
	}
	for _, p := range pkgs {
		switch {
		case l.layerOf(p) < 0:
			t.Errorf("package %s is in no layer of %s: add it to the list there", p, archFile)
		case !slices.Contains(l.pkgs, p):
			t.Errorf("package %s has no line of its own in %s's layer list", p, archFile)
		}
	}
	for _, p := range l.pkgs {
		if !slices.Contains(pkgs, p) {
			t.Errorf("%s lists package %s, which does not exist", archFile, p)
		}
	}
	for i, layer := range l.layers {
		if !slices.ContainsFunc(pkgs, func(p string) bool { return l.layerOf(p) == i }) {
			t.Errorf("layer %s of %s holds no package", layer, archFile)
		}
	}
}

// TestInternalLeaves: every package under internal/ is a leaf, so that internal/ is the
// ground floor and no import points from it back up. Test programs and helpers go to tests/.
func TestInternalLeaves(t *testing.T) {
	for _, p := range modulePackages(t, moduleRoot(t)) {
		if under(p, "internal") && !slices.Contains(leaves, p) {
			t.Errorf("package %s is under internal/ but is not a leaf of deps_test.go "+
				"(a leaf imports nothing of the module; test programs and helpers go to %s/)", p, testsDir)
		}
	}
}

// TestProviders: every package that registers a verbs provider is in providers, so the
// launcher's rule covers it.
func TestProviders(t *testing.T) {
	root := moduleRoot(t)
	err := goDirs(filepath.Join(root, "transport"), func(_, dir string) error {
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			src, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return err
			}
			if strings.Contains(string(src), "verbs.Register(") && !slices.Contains(providers, rel) {
				t.Errorf("%s registers a verbs provider but is not in deps_test.go's providers", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckImport proves that the checker catches forbidden edges and lets allowed ones
// through, on synthetic edges, with ARCHITECTURE.md's list.
func TestCheckImport(t *testing.T) {
	l := mustLayers(t)
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
		{"transport/verbs/tcp", m("transport/verbs/idlewatch"), false, true},
		{"transport/verbs/idlewatch", "golang.org/x/sys/unix", false, true},
		{"runtime", m("transport/verbs/shm"), false, true},
		{"runtime", m("pmi"), false, true},
		{"collectives", m("runtime"), false, true},
		{"collectives", m("collectives/internal/hostgroup"), false, true},
		{"collectives/internal/hostgroup", m("runtime/substrate"), false, true},
		{"collectives/internal/hostgroup", m("collectives"), false, false},
		{"collectives/internal/hostgroup", m("collectives"), true, false},
		{"window", m("window/coherence"), false, true},
		{"window", m("collectives"), false, true},
		{"launcher", m("pmi"), false, true},
		{"launcher", m("transport/verbs/idlewatch"), false, true},
		{"launcher/cmd/golaunch", m("launcher"), false, true},
		{"launcher", "github.com/hashicorp/memberlist", false, true},
		{"tests/rmaprog", m("window"), false, true},
		{"tests/rmaprog", m("tests/stalecheck"), false, true},
		{"tests/pmiprog", m("pmi"), false, true},
		{"tests/e2eprog", m("launcher"), false, true},
		{"tests/slurmtest", m("internal/testbudget"), false, true},
		{"apps/sockbench", m("bench/connbench"), false, true},
		{"bench/connbench", m("transport/sockets"), false, true},
		{"runtime", m("internal/packpool"), false, true},
		{"window", m("internal/attrset"), false, true},
		{"apps/verbsperf", m("transport/verbs/tcp"), false, true},
		{"apps/verbsperf", "github.com/spf13/pflag", false, true},
		{"bench/chart", "gonum.org/v1/plot", false, true},
		{"transport/verbs", "sync/atomic", false, true},
		{"window/coherence", "math/rand/v2", false, true},
		{"transport/verbs/shm/internal/ring", m("transport/verbs/shm"), false, true},
		{"transport/verbs/shm", m("transport/verbs/shm/internal/ring"), false, true},
		{"runtime", m("internal/hang"), false, true},
		{"launcher", m("internal/hang"), false, true},
		{"pmi", m("internal/hang"), false, true},
		{"pmi", m("internal/accept"), false, true},
		{"transport/sockets", m("internal/accept"), false, true},
		{"collectives", m("internal/futex"), false, true},
		{"transport/verbs/shm", m("internal/futex"), false, true},
		{"internal/futex", m("transport/verbs"), false, false},
		{"internal/hang", m("internal/hang"), true, true}, // its examples
		// Tests may reach down for shared suites and programs, but keep the explicit rules.
		{"transport/verbs/shm", m("transport/verbs/verbstest"), true, true},
		{"window", m("tests/stalecheck"), true, true},
		{"runtime", m("tests/slurmtest"), true, true},
		{"apps/sockbench", m("tests/rmaprog"), true, true},
		{"runtime", m("runtime/runtimetest"), true, true},
		{"", m("apps/verbsperf"), true, false},
		{"", m("runtime"), true, true},

		// Forbidden: up the list.
		{"transport/verbs/arena", m("transport/verbs/shm"), false, false},
		{"transport/verbs/shm", m("transport/verbs/tcp"), false, false},
		{"transport/verbs/shm", m("transport/verbs/verbstest"), false, false},
		{"transport/verbs/idlewatch", m("transport/verbs/tcp"), false, false},
		{"runtime", m("collectives"), false, false},
		{"window/coherence", m("window"), false, false},
		{"window", m("tests/stalecheck"), false, false},
		{"launcher", m("tests/pmiprog"), false, false},
		{"runtime", m("tests/slurmtest"), false, false},
		{"bench/connbench", m("apps/sockbench"), false, false},
		// Forbidden: only test files import tests/..., wherever the list puts it.
		{"apps/sockbench", m("tests/rmaprog"), false, false},
		{"bench/connbench", m("tests/slurmtest"), false, false},
		// Forbidden: the explicit rules, also from test files.
		{"transport/verbs/tcp", m("runtime"), true, false},
		{"transport/verbs/shm", m("window"), true, false},
		{"transport/verbs/verbstest", m("pmi"), true, false},
		{"transport/verbs/verbstest", m("launcher"), true, false},
		{"launcher", m("transport/verbs/tcp"), false, false},
		{"launcher", m("transport/verbs/shm"), true, false},
		{"launcher/internal/netns", m("transport/verbs/tcp"), true, false},
		{"runtime", m("launcher"), true, false},
		{"runtime/runtimetest", m("launcher"), false, false},
		{"pmi", m("runtime"), true, false},
		{"pmi", m("launcher"), false, false},
		{"collectives", m("window"), true, false},
		{"collectives", m("transport/verbs"), false, false},
		{"collectives", m("transport/verbs/shm"), true, false},
		{"window/coherence", m("transport/verbs"), false, false},
		{"window/coherence", m("runtime"), true, false},
		{"internal/hang", m("runtime"), false, false},
		{"internal/hang", m("internal/accept"), false, false},
		{"internal/accept", m("transport/verbs"), true, false},
		{"internal/packpool", m("runtime"), false, false},
		{"internal/attrset", m("tests/stalecheck"), true, false},
		{"launcher", m("apps/verbsperf"), false, false},
		{"apps/other", m("apps/verbsperf"), false, false},
		{"apps/rmabench", m("apps/internal/benchkit"), false, true},
		{"runtime", m("apps/internal/benchkit"), false, false},
		{"transport/verbs", m("transport/verbs/arena"), false, false},
		{"transport/verbs/internal/x", m("transport/verbs/shm"), false, false},
		{"transport/verbs", "golang.org/x/sys/unix", false, false},
		{"transport/verbs", m("transport/verbs/shm"), true, true}, // verbs_test may use a provider
		{"transport/verbs", m("runtime"), true, false},
		{"window", m(""), false, false},
		// Forbidden: unlisted dependencies, cgo, packages outside every layer.
		{"runtime", "github.com/pkg/errors", false, false},
		{"transport/verbs/shm", "C", false, false},
		{"abi/mpich", "C", false, true},
		{"abi/mpich", "C", true, false}, // its tests run C programs; they have no cgo
		{"apps/hello", m("abi/mpich"), false, false},
		{"abi/mpich/libmpich", m("abi/mpich"), false, true},
		{"internal/x", m("transport/verbs"), false, false},
		{"runtime", m("internal/x"), false, false},
		{"tools/x", m("runtime"), false, false},
	}
	for _, tc := range tests {
		err := l.checkImport(tc.from, tc.imp, tc.test)
		if (err == nil) != tc.ok {
			t.Errorf("checkImport(%q, %q, test=%v) = %v, want ok=%v", tc.from, tc.imp, tc.test, err, tc.ok)
		}
	}
}

// TestParseLayers checks the reader of the layers block on good and bad blocks.
func TestParseLayers(t *testing.T) {
	doc := func(block string) string { return "# x\n\n```layers\n" + block + "```\n" }
	good := doc("transport/verbs   the API\n  transport/verbs/internal/x  inside\nruntime  World\napps/...  programs\n  apps/hello  hello\n")
	l, err := parseLayers(good)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"transport/verbs", "runtime", "apps"}; !slices.Equal(l.layers, want) {
		t.Errorf("layers %q, want %q", l.layers, want)
	}
	if want := []string{"transport/verbs", "transport/verbs/internal/x", "runtime", "apps/hello"}; !slices.Equal(l.pkgs, want) {
		t.Errorf("packages %q, want %q", l.pkgs, want)
	}
	if !l.groups["apps"] || l.groups["runtime"] {
		t.Errorf("groups %v, want apps only", l.groups)
	}
	if l.layerOf("transport/verbs/internal/x") != 0 || l.layerOf("apps/hello") != 2 || l.layerOf("window") != -1 {
		t.Error("layerOf does not take the longest matching layer")
	}
	leaves := doc("internal/accept  loop\ninternal/hang  report\ntransport/verbs  the API\n")
	if l, err := parseLayers(leaves); err != nil || l.layerOf("internal/hang") != 1 {
		t.Errorf("leaves before transport/verbs: %v", err)
	}
	bad := map[string]string{
		"no block":          "# x\n",
		"not closed":        "```layers\ntransport/verbs\n",
		"package first":     doc("  transport/verbs/x\ntransport/verbs\n"),
		"package outside":   doc("transport/verbs\n  runtime/x\n"),
		"duplicate":         doc("transport/verbs\nruntime\nruntime\n"),
		"indented group":    doc("transport/verbs\n  transport/verbs/x/...\n"),
		"trailing slash":    doc("transport/verbs\nruntime/\n"),
		"wrong first layer": doc("runtime\ntransport/verbs\n"),
		"empty":             doc(""),
	}
	for name, src := range bad {
		if _, err := parseLayers("\n" + src); err == nil {
			t.Errorf("%s: parseLayers accepted %q", name, src)
		}
	}
}
