package gorma_test

import (
	"errors"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The runtime's parts stay parts. These tests hold package runtime to the limits in
// ARCHITECTURE.md ("Parts of the runtime"): small structs, types with few methods, files that call
// one way, and a user reference that `go doc` keeps short.
// The helpers take a package's module-relative directory, so that ratchet_test.go and the
// limits of another package reuse them.
const (
	maxStructFields = 25
	maxTypeMethods  = 50
	maxTwoWayShare  = 0.20 // of the file pairs that reference each other at all
	maxDocLines     = 800  // go doc -all ./runtime
)

// packageFiles parses the production files of the package in the module-relative directory
// dir ("" for the root): the files `go build` compiles on this platform, cgo files included
// when cgo is on. A directory without such files yields none.
func packageFiles(t *testing.T, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	bp, err := build.ImportDir(filepath.FromSlash("./"+dir), 0)
	var noGo *build.NoGoError
	if errors.As(err, &noGo) {
		return fset, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range slices.Concat(bp.GoFiles, bp.CgoFiles) {
		f, err := parser.ParseFile(fset, filepath.Join(bp.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}

// structFields counts the fields of every named struct type; an embedded field counts one.
// Two types of one name (local to different functions) count as the larger.
func structFields(files []*ast.File) map[string]int {
	n := map[string]int{}
	for _, f := range files {
		ast.Inspect(f, func(node ast.Node) bool {
			ts, ok := node.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				c := 0
				for _, fl := range st.Fields.List {
					c += max(1, len(fl.Names))
				}
				n[ts.Name.Name] = max(n[ts.Name.Name], c)
			}
			return true
		})
	}
	return n
}

// typeMethods counts the methods declared on every named type, exported or not. A method of a
// generic type counts for the type: recvName drops the type parameters.
func typeMethods(files []*ast.File) map[string]int {
	n := map[string]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			n[recvName(fd.Recv.List[0].Type)]++
		}
	}
	return n
}

// recvName is the name of the type in the receiver expression e: T, *T, T[P] and *T[K, V]
// all name T.
func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.IndexListExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}

// over returns "name (n)" for each entry of n above limit, sorted.
func over(n map[string]int, limit int) []string {
	var out []string
	for name, c := range n {
		if c > limit {
			out = append(out, name+" ("+strconv.Itoa(c)+")")
		}
	}
	sort.Strings(out)
	return out
}

func TestRuntimeStructFields(t *testing.T) {
	_, files := packageFiles(t, "runtime")
	if bad := over(structFields(files), maxStructFields); len(bad) > 0 {
		t.Errorf("structs in runtime with over %d fields: %s\n"+
			"Give a part its own type that owns its state (ARCHITECTURE.md, \"Parts of the runtime\").",
			maxStructFields, strings.Join(bad, ", "))
	}
}

func TestRuntimeTypeMethods(t *testing.T) {
	_, files := packageFiles(t, "runtime")
	if bad := over(typeMethods(files), maxTypeMethods); len(bad) > 0 {
		t.Errorf("types in runtime with over %d methods: %s\n"+
			"Move the methods that concern one part onto that part's type.",
			maxTypeMethods, strings.Join(bad, ", "))
	}
}

// fileRefs returns the pairs of files of the package in the module-relative directory dir
// where the first uses a package-level name, field or method declared in the second.
func fileRefs(t *testing.T, dir string) map[[2]string]bool {
	t.Helper()
	fset, files := packageFiles(t, dir)
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check(displayPkg(dir), fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	refs := map[[2]string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		if p := obj.Parent(); p != nil && p != pkg.Scope() {
			continue // a local name
		}
		from := filepath.Base(fset.File(id.Pos()).Name())
		to := filepath.Base(fset.File(obj.Pos()).Name())
		if from != to {
			refs[[2]string{from, to}] = true
		}
	}
	return refs
}

// twoWay returns the number of file pairs in refs that reference each other at all, and
// those that do so both ways as "a <-> b", sorted.
func twoWay(refs map[[2]string]bool) (pairs int, both []string) {
	seen := map[[2]string]bool{}
	for r := range refs {
		a, b := r[0], r[1]
		if a > b {
			a, b = b, a
		}
		if !seen[[2]string{a, b}] && refs[[2]string{a, b}] && refs[[2]string{b, a}] {
			both = append(both, a+" <-> "+b)
		}
		seen[[2]string{a, b}] = true
	}
	sort.Strings(both)
	return len(seen), both
}

func TestRuntimeOneWayFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks runtime from source")
	}
	pairs, both := twoWay(fileRefs(t, "runtime"))
	share := float64(len(both)) / float64(pairs)
	t.Logf("runtime: %d file pairs reference each other, %d both ways (%.1f%%)", pairs, len(both), 100*share)
	if share > maxTwoWayShare {
		t.Errorf("%.1f%% of runtime's referencing file pairs run both ways (limit %.0f%%):\n\t%s\n"+
			"Put a part's code in its own files and let it call down, not back up.",
			100*share, 100*maxTwoWayShare, strings.Join(both, "\n\t"))
	}
}

func TestRuntimeDocLines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go doc")
	}
	if n := docLines(t, "runtime"); n > maxDocLines {
		t.Errorf("go doc -all ./runtime is %d lines (limit %d).\n"+
			"runtime's exported API is what an MPI user calls; what window and collectives\n"+
			"need belongs in runtime/substrate.", n, maxDocLines)
	}
}

// docLines counts the lines of `go doc -all` for the package in the module-relative
// directory dir.
func docLines(t *testing.T, dir string) int {
	t.Helper()
	gobin := filepath.Join(goroot(t), "bin", "go")
	out, err := exec.Command(gobin, "doc", "-all", "./"+dir).Output()
	if err != nil {
		t.Fatalf("go doc -all ./%s: %v", dir, err)
	}
	return strings.Count(string(out), "\n")
}

// goroot is the toolchain's root: GOROOT, or where `go env` says.
func goroot(t *testing.T) string {
	if r := os.Getenv("GOROOT"); r != "" {
		return r
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	return strings.TrimSpace(string(out))
}
