package gorma_test

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The runtime's parts stay parts. These tests hold package runtime to the limits in
// ARCHITECTURE.md ("Parts of the runtime"): small structs, types with few methods, files that call
// one way, and a user reference that `go doc` keeps short.
const (
	maxStructFields = 25
	maxTypeMethods  = 50
	maxTwoWayShare  = 0.20 // of the file pairs that reference each other at all
	maxDocLines     = 800  // go doc -all ./runtime
)

// runtimeFiles parses package runtime's production files.
func runtimeFiles(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	bp, err := build.ImportDir("runtime", 0) // the files this platform builds
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join("runtime", name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}

// structFields counts the fields of every named struct type; an embedded field counts one.
func structFields(files []*ast.File) map[string]int {
	n := map[string]int{}
	for _, f := range files {
		ast.Inspect(f, func(node ast.Node) bool {
			ts, ok := node.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				for _, fl := range st.Fields.List {
					n[ts.Name.Name] += max(1, len(fl.Names))
				}
			}
			return true
		})
	}
	return n
}

// typeMethods counts the methods declared on every named type, exported or not.
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
	_, files := runtimeFiles(t)
	if bad := over(structFields(files), maxStructFields); len(bad) > 0 {
		t.Errorf("structs in runtime with over %d fields: %s\n"+
			"Give a part its own type that owns its state (ARCHITECTURE.md, \"Parts of the runtime\").",
			maxStructFields, strings.Join(bad, ", "))
	}
}

func TestRuntimeTypeMethods(t *testing.T) {
	_, files := runtimeFiles(t)
	if bad := over(typeMethods(files), maxTypeMethods); len(bad) > 0 {
		t.Errorf("types in runtime with over %d methods: %s\n"+
			"Move the methods that concern one part onto that part's type.",
			maxTypeMethods, strings.Join(bad, ", "))
	}
}

// fileRefs returns the pairs of runtime files where the first uses a package-level name,
// field or method declared in the second.
func fileRefs(t *testing.T) map[[2]string]bool {
	t.Helper()
	fset, files := runtimeFiles(t)
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check("github.com/gorma-hpc/gorma/runtime", fset, files, info)
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

func TestRuntimeOneWayFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks runtime from source")
	}
	refs := fileRefs(t)
	pairs := map[[2]string]bool{}
	var both []string
	for r := range refs {
		a, b := r[0], r[1]
		if a > b {
			a, b = b, a
		}
		if !pairs[[2]string{a, b}] && refs[[2]string{a, b}] && refs[[2]string{b, a}] {
			both = append(both, a+" <-> "+b)
		}
		pairs[[2]string{a, b}] = true
	}
	share := float64(len(both)) / float64(len(pairs))
	t.Logf("runtime: %d file pairs reference each other, %d both ways (%.1f%%)", len(pairs), len(both), 100*share)
	if share > maxTwoWayShare {
		sort.Strings(both)
		t.Errorf("%.1f%% of runtime's referencing file pairs run both ways (limit %.0f%%):\n\t%s\n"+
			"Put a part's code in its own files and let it call down, not back up.",
			100*share, 100*maxTwoWayShare, strings.Join(both, "\n\t"))
	}
}

func TestRuntimeDocLines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go doc")
	}
	gobin := filepath.Join(goroot(t), "bin", "go")
	out, err := exec.Command(gobin, "doc", "-all", "./runtime").Output()
	if err != nil {
		t.Fatalf("go doc -all ./runtime: %v", err)
	}
	if n := strings.Count(string(out), "\n"); n > maxDocLines {
		t.Errorf("go doc -all ./runtime is %d lines (limit %d).\n"+
			"runtime's exported API is what an MPI user calls; what window and collectives\n"+
			"need belongs in runtime/substrate.", n, maxDocLines)
	}
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
