package gorma_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
	_ "github.com/gorma-hpc/gorma/transport/verbs/shm"
	_ "github.com/gorma-hpc/gorma/transport/verbs/tcp"
)

// nameExempt are the places above transport/ that may compare a provider's name, each
// with its reason. A key is a file, or a file and a function ("file:Func" or
// "file:Type.Method"). An entry that no longer matches a comparison fails the test.
var nameExempt = map[string]string{
	"runtime/locality.go":                     "the chooser: it picks each peer's provider",
	"runtime/device.go":                       "opens and configures each provider",
	"collectives/select.go:parseAllreduceEnv": "GORMA_ALLREDUCE=shm names an algorithm",
	"pmi/contract.go:ReadContract":            "parses GOLAUNCH_TRANSPORT, a setting that names a provider",
	"launcher/flags.go:ParseArgs":             "parses --transport, a setting that names a provider",
	"launcher/run.go:Launch":                  "checks --transport shm against the hosts",
	"launcher/agent.go:Agent.prepare":         "starts the idle-role watch when --transport may give tcp",
	"apps/verbsperf":                          "measures each provider, by name, against its own floor",
	"bench/connbench/gorma.go:init":           "\"tcp\" is a network of package net there",
}

// nameAdvice is what the failure says to use instead.
const nameAdvice = "choose by capabilities: above the runtime by substrate.Reach (substrate.ReachOf, " +
	"substrate.ReachBetween), inside it by the device's verbs.Caps (add a Caps flag in " +
	"transport/verbs for what is missing); only runtime/locality.go chooses a provider and " +
	"runtime/device.go opens it. Transport and TransportBetween name the provider for people, " +
	"not for decisions"

// nameHit is a comparison with a provider's name.
type nameHit struct {
	pos  token.Position
	fn   string // the enclosing function ("Func" or "Type.Method"), "" at package level
	what string
}

// providerNames are the names of the registered providers. Every package of deps_test.go's
// providers must be imported above, so that its name is known.
func providerNames(t *testing.T) []string {
	t.Helper()
	names := verbs.Providers()
	if len(names) != len(providers) {
		t.Fatalf("registered providers %v, deps_test.go lists %v: import every provider in caps_test.go", names, providers)
	}
	return names
}

// funcName is the name of a function declaration: "Func" or "Type.Method".
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	typ := d.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + d.Name.Name
		}
		return d.Name.Name
	}
}

// nameChecker finds comparisons with a provider's name in the files of one package.
type nameChecker struct {
	fset      *token.FileSet
	names     []string
	consts    map[string]string // the package's constants and variables whose value is a provider name
	provPkgs  map[string]bool   // the file's local names of provider packages
	transport map[string]bool   // the function's variables assigned a Transport result
	hits      []nameHit
	fn        string
}

// providerName returns the provider name that e spells, or "".
func (c *nameChecker) providerName(e ast.Expr) string {
	switch x := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return ""
		}
		if s, err := strconv.Unquote(x.Value); err == nil && slices.Contains(c.names, s) {
			return strconv.Quote(s)
		}
	case *ast.Ident:
		if v, ok := c.consts[x.Name]; ok {
			return x.Name + " (" + strconv.Quote(v) + ")"
		}
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && c.provPkgs[id.Name] {
			return id.Name + "." + x.Sel.Name
		}
	}
	return ""
}

// transportCall reports whether e is a call of a method Transport or TransportBetween.
func transportCall(e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "Transport" || sel.Sel.Name == "TransportBetween")
}

// transportResult returns a description of e if it is the result of Transport or
// TransportBetween (a call, or a variable assigned one), or "".
func (c *nameChecker) transportResult(e ast.Expr) string {
	if transportCall(e) {
		return "a Transport result"
	}
	if id, ok := ast.Unparen(e).(*ast.Ident); ok && c.transport[id.Name] {
		return "a Transport result (" + id.Name + ")"
	}
	return ""
}

// compared returns what a comparison's operand names, or "".
func (c *nameChecker) compared(e ast.Expr) string {
	if s := c.providerName(e); s != "" {
		return "provider name " + s
	}
	return c.transportResult(e)
}

func (c *nameChecker) hit(n ast.Node, what string) {
	c.hits = append(c.hits, nameHit{pos: c.fset.Position(n.Pos()), fn: c.fn, what: what})
}

// noteAssign records the variables that lhs assigns a Transport result from rhs.
func (c *nameChecker) noteAssign(lhs []ast.Expr, rhs []ast.Expr) {
	if len(lhs) != len(rhs) {
		return
	}
	for i, r := range rhs {
		if id, ok := lhs[i].(*ast.Ident); ok && transportCall(r) {
			c.transport[id.Name] = true
		}
	}
}

func (c *nameChecker) visit(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.AssignStmt:
		c.noteAssign(x.Lhs, x.Rhs)
	case *ast.ValueSpec:
		lhs := make([]ast.Expr, len(x.Names))
		for i, id := range x.Names {
			lhs[i] = id
		}
		c.noteAssign(lhs, x.Values)
	case *ast.BinaryExpr:
		if x.Op == token.EQL || x.Op == token.NEQ {
			for _, side := range []ast.Expr{x.X, x.Y} {
				if what := c.compared(side); what != "" {
					c.hit(x, "compares "+what)
					break
				}
			}
		}
	case *ast.SwitchStmt:
		if x.Tag != nil {
			if what := c.transportResult(x.Tag); what != "" {
				c.hit(x, "switches on "+what)
			}
		}
	case *ast.CaseClause:
		for _, e := range x.List {
			if s := c.providerName(e); s != "" {
				c.hit(e, "has a case of provider name "+s)
			}
		}
	}
	return true
}

// check adds the hits of file f to c.
func (c *nameChecker) check(f *ast.File) {
	c.provPkgs = map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !slices.Contains(providers, strings.TrimPrefix(p, modulePath+"/")) {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		c.provPkgs[name] = true
	}
	for _, d := range f.Decls {
		c.fn, c.transport = "", map[string]bool{}
		if fd, ok := d.(*ast.FuncDecl); ok {
			c.fn = funcName(fd)
		}
		ast.Inspect(d, c.visit)
	}
}

// packageConsts returns the constants and variables of files whose value is a provider
// name.
func packageConsts(files []*ast.File, names []string) map[string]string {
	m := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || (gd.Tok != token.CONST && gd.Tok != token.VAR) {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING || i >= len(vs.Names) {
						continue
					}
					if s, err := strconv.Unquote(lit.Value); err == nil && slices.Contains(names, s) {
						m[vs.Names[i].Name] = s
					}
				}
			}
		}
	}
	return m
}

// nameHits returns the comparisons with a provider's name in srcs (file name to source),
// the files of one package.
func nameHits(fset *token.FileSet, srcs map[string]string, names []string) ([]nameHit, error) {
	var files []*ast.File
	for _, name := range slices.Sorted(maps.Keys(srcs)) {
		f, err := parser.ParseFile(fset, name, srcs[name], parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	c := &nameChecker{fset: fset, names: names, consts: packageConsts(files, names)}
	for _, f := range files {
		c.check(f)
	}
	return c.hits, nil
}

// exemptKey returns the nameExempt key that covers a hit in file rel, or "".
func exemptKey(rel string, h nameHit) string {
	for _, k := range []string{rel + ":" + h.fn, rel} {
		if _, ok := nameExempt[k]; ok {
			return k
		}
	}
	for k := range nameExempt {
		if !strings.HasSuffix(k, ".go") && !strings.Contains(k, ":") && under(rel, k) {
			return k
		}
	}
	return ""
}

// TestNoProviderNames fails on code above transport/ that compares a provider's name
// ("shm", "tcp") or a Transport result, outside the chooser and nameExempt. Test files are
// not checked: they may assert what Transport reports.
func TestNoProviderNames(t *testing.T) {
	root := moduleRoot(t)
	names := providerNames(t)
	used := map[string]bool{}
	err := goDirs(root, func(rel, dir string) error {
		if under(rel, "transport") {
			return filepath.SkipDir
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		srcs := map[string]string{}
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				return err
			}
			srcs[filepath.ToSlash(filepath.Join(rel, n))] = string(b)
		}
		hits, err := nameHits(token.NewFileSet(), srcs, names)
		if err != nil {
			return err
		}
		for _, h := range hits {
			if k := exemptKey(h.pos.Filename, h); k != "" {
				used[k] = true
				continue
			}
			where := h.pos.Filename + ":" + strconv.Itoa(h.pos.Line)
			if h.fn != "" {
				where += " (" + h.fn + ")"
			}
			t.Errorf("%s %s above the transport: %s", where, h.what, nameAdvice)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, why := range nameExempt {
		if !used[k] {
			t.Errorf("nameExempt[%q] (%s) matches no comparison with a provider's name: remove it", k, why)
		}
	}
}

// TestNameChecker proves that the checker finds each form of comparison and leaves other
// uses of the names alone, on synthetic sources.
func TestNameChecker(t *testing.T) {
	names := []string{"shm", "tcp"}
	cases := []struct {
		src  string
		hits int
	}{
		{`if p.name == "shm" {}`, 1},
		{`if "tcp" != p.name {}`, 1},
		{`ok := (p.name) == ("tcp"); _ = ok`, 1},
		{`switch p.name { case "tcp": }`, 1},
		{`switch { case "shm" == x: }`, 1},
		{`switch p.name { case "self", "shm": }`, 1},
		{`if w.Transport(r) == x {}`, 1},
		{`if w.TransportBetween(a, b) != "" {}`, 1},
		{`switch w.Transport(r) { case "self": }`, 1},
		{`tr := w.Transport(r); if tr == "self" {}`, 1},
		{`var tr = w.comm.Transport(r); _ = tr == y`, 1},
		{`if name == provSHM {}`, 1},
		{`if name == shm.Name {}`, 1},
		{`sockets.Listen("shm", addr)`, 0},
		{`m := map[string]int{"tcp": 1}; _ = m["shm"]`, 0},
		{`fmt.Println(w.Transport(r))`, 0},
		{`if name == "self" {}`, 0},
		{`if substrate.ReachOf(w, r).Has(substrate.ReachMap) {}`, 0},
		{`switch algo { case "ring": }`, 0},
	}
	for _, c := range cases {
		src := "package p\n\nimport \"github.com/gorma-hpc/gorma/transport/verbs/shm\"\n\n" +
			"const provSHM = \"shm\"\n\nvar _ = shm.Name\n\nfunc f() {\n\t" + c.src + "\n}\n"
		hits, err := nameHits(token.NewFileSet(), map[string]string{"p.go": src}, names)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if len(hits) != c.hits {
			t.Errorf("%s: %d hits %v, want %d", c.src, len(hits), hitText(hits), c.hits)
		}
	}
}

func hitText(hits []nameHit) []string {
	var s []string
	for _, h := range hits {
		s = append(s, fmt.Sprintf("%d:%s", h.pos.Line, h.what))
	}
	return s
}
