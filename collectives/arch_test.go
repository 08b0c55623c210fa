package collectives

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// callCycleMost bounds the largest set of the package's files that all reach each other
// through calls (a strongly connected component of fileGraph). A file whose functions
// call into an algorithm file that calls back into it ties the two together; the host
// group's engine lives in internal/hostgroup, so the algorithms do not call back into it.
const callCycleMost = 25

// TestFileCycles fails when more than callCycleMost of the package's non-test files all
// reach each other through calls, and prints the largest such set.
func TestFileCycles(t *testing.T) {
	g, err := fileGraph(".")
	if err != nil {
		t.Fatal(err)
	}
	big := largestSCC(g)
	t.Logf("largest set of files that reach each other through calls: %d of %d", len(big), len(g))
	if len(big) > callCycleMost {
		t.Errorf("%d files reach each other through calls (at most %d): %s",
			len(big), callCycleMost, strings.Join(big, " "))
	}
}

// fileGraph type-checks the non-test Go files of dir (its imports from source) and
// returns, for each file, the files that declare a function, method, type or
// package-level var that one of its function or method bodies refers to.
func fileGraph(dir string) (map[string][]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	ctx := build.Default
	var files []*ast.File
	for _, p := range paths {
		name := filepath.Base(p)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := ctx.MatchFile(dir, name); err != nil || !ok {
			continue // a build-constrained twin for another platform
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("collectives", fset, files, info)
	if err != nil {
		return nil, err
	}
	fileOf := func(pos token.Pos) string { return filepath.Base(fset.Position(pos).Filename) }
	g := map[string][]string{}
	for _, f := range files {
		name := fileOf(f.Pos())
		to := map[string]bool{}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if !ok {
					return true
				}
				obj := info.Uses[id]
				if obj == nil || obj.Pkg() != pkg {
					return true
				}
				switch o := obj.(type) {
				case *types.Func:
				case *types.TypeName:
				case *types.Var:
					if o.IsField() || o.Parent() != pkg.Scope() {
						return true // a field or a local
					}
				default:
					return true
				}
				to[fileOf(obj.Pos())] = true
				return true
			})
		}
		delete(to, name)
		var out []string
		for m := range to {
			out = append(out, m)
		}
		slices.Sort(out)
		g[name] = out
	}
	return g, nil
}

// largestSCC returns the largest strongly connected component of g (Tarjan's
// algorithm), its files sorted.
func largestSCC(g map[string][]string) []string {
	index, low := map[string]int{}, map[string]int{}
	on := map[string]bool{}
	var stack, best []string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		for _, w := range g[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var comp []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			on[w] = false
			comp = append(comp, w)
			if w == v {
				break
			}
		}
		if len(comp) > len(best) {
			best = comp
		}
	}
	names := make([]string, 0, len(g))
	for v := range g {
		names = append(names, v)
	}
	slices.Sort(names)
	for _, v := range names {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	slices.Sort(best)
	return best
}
