package gorma_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
)

// No type grows past the size recorded for it. TestRatchetTypeSizes holds every package of
// the module to typeCeilings: a type's method count and a struct's field count stay at or
// below the type's ceiling, or at or below typeFloor for a type without one. A ceiling above
// the count fails too, so the ceilings only come down. Package runtime is left out, as
// parts_test.go holds it to stricter limits; so are window and its subpackages, which get
// limits of their own.
//
// A test for one package reuses the pieces: packageFiles(t, dir), typeSizes(files) and
// checkCeilings(pkg, sizes, ceilings, floor).

// typeSize is the size of a named type: the methods declared on it, or listed by it as an
// interface, and its fields as a struct.
type typeSize struct{ methods, fields int }

// typeFloor is the size any type may reach without a ceiling of its own.
var typeFloor = typeSize{methods: 20, fields: 15}

// typeCeilings holds the exact size of each type over typeFloor, keyed "pkg.Type" with pkg
// the module-relative directory. A zero count means the floor applies to it. Split a type
// that outgrows its ceiling; never raise one.
var typeCeilings = map[string]typeSize{
	"apps/allreducebench.report":      {fields: 19},
	"apps/dht.report":                 {fields: 16},
	"apps/verbsperf.session":          {fields: 16},
	"bench/connbench.Options":         {fields: 16},
	"collectives.Request":             {fields: 17},
	"collectives.localState":          {fields: 18},
	"collectives.state":               {fields: 30},
	"datatype.Type":                   {methods: 28},
	"launcher.Agent":                  {fields: 20},
	"launcher.Options":                {fields: 31},
	"launcher.agentJob":               {methods: 62, fields: 30},
	"launcher.cluster":                {methods: 21, fields: 20},
	"launcher.jobSpec":                {fields: 20},
	"launcher.submitter":              {methods: 56, fields: 42},
	"pmi.Foreign":                     {methods: 50},
	"pmi.PMIxServer":                  {fields: 16},
	"pmi.pmixDec":                     {methods: 21},
	"runtime/internal/subcore.Obs":    {methods: 21},
	"runtime/internal/ulfm.Agreement": {fields: 21},
	"tests/e2eprog.env":               {methods: 34},
	"transport/sockets.Conn":          {methods: 40, fields: 21},
	"transport/verbs/arena.Arena":     {methods: 25, fields: 19},
	"transport/verbs/shm.device":      {fields: 19},
	"transport/verbs/shm.qp":          {methods: 44, fields: 44},
	"transport/verbs/tcp.cq":          {fields: 28},
	"transport/verbs/tcp.device":      {methods: 22, fields: 24},
	"transport/verbs/tcp.qconn":       {methods: 37, fields: 21},
	"transport/verbs/tcp.qp":          {methods: 33, fields: 41},
	"transport/verbs/tcp.sock":        {fields: 21},
	"transport/verbs/tcp.txq":         {fields: 26},
	"transport/verbs/tcp.watch":       {fields: 16},
}

// ratchetSkipped reports whether the package in the module-relative directory rel has limits
// of its own instead of typeCeilings.
func ratchetSkipped(rel string) bool { return rel == "runtime" || under(rel, "window") }

func TestRatchetTypeSizes(t *testing.T) {
	seen := map[string]bool{}
	err := goDirs(moduleRoot(t), func(rel, _ string) error {
		if ratchetSkipped(rel) {
			return nil
		}
		_, files := packageFiles(t, rel)
		if len(files) == 0 {
			return nil
		}
		pkg := ratchetPkg(rel)
		seen[pkg] = true
		for _, msg := range checkCeilings(pkg, typeSizes(files), typeCeilings, typeFloor) {
			t.Error(msg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 {
		t.Fatal("found no package at all; is the walk broken?")
	}
	for _, key := range slices.Sorted(maps.Keys(typeCeilings)) {
		if pkg, _ := splitTypeKey(key); !seen[pkg] {
			t.Errorf("typeCeilings[%q]: package %s is not checked here (absent, or skipped by ratchetSkipped): delete the entry", key, pkg)
		}
	}
}

// ratchetPkg is the package part of a typeCeilings key: the module-relative directory, or
// "gorma" for the root.
func ratchetPkg(rel string) string {
	if rel == "" {
		return "gorma"
	}
	return rel
}

// splitTypeKey splits a typeCeilings key "pkg.Type" at its last dot.
func splitTypeKey(key string) (pkg, typ string) {
	i := strings.LastIndex(key, ".")
	return key[:i], key[i+1:]
}

// typeSizes returns the size of every named type declared in files.
func typeSizes(files []*ast.File) map[string]typeSize {
	sizes := map[string]typeSize{}
	add := func(n map[string]int, methods bool) {
		for name, c := range n {
			s := sizes[name]
			if methods {
				s.methods += c
			} else {
				s.fields += c
			}
			sizes[name] = s
		}
	}
	add(typeMethods(files), true)
	add(interfaceMethods(files), true)
	add(structFields(files), false)
	return sizes
}

// interfaceMethods counts the methods an interface type lists by name; embedded interfaces
// and type terms do not count. Two types of one name count as the larger.
func interfaceMethods(files []*ast.File) map[string]int {
	n := map[string]int{}
	for _, f := range files {
		ast.Inspect(f, func(node ast.Node) bool {
			ts, ok := node.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if it, ok := ts.Type.(*ast.InterfaceType); ok {
				c := 0
				for _, m := range it.Methods.List {
					c += len(m.Names)
				}
				n[ts.Name.Name] = max(n[ts.Name.Name], c)
			}
			return true
		})
	}
	return n
}

// checkCeilings returns a message for each type of package pkg whose size in sizes differs
// from what ceilings (keyed "pkg.Type") and floor allow, and for each entry of ceilings for
// pkg that names no type in sizes. The messages are sorted.
func checkCeilings(pkg string, sizes, ceilings map[string]typeSize, floor typeSize) []string {
	var out []string
	for name, s := range sizes {
		key := pkg + "." + name
		c := ceilings[key]
		if msg := checkCeiling(key, "methods", s.methods, c.methods, floor.methods,
			"move the methods of one concern onto a type that owns that state"); msg != "" {
			out = append(out, msg)
		}
		if msg := checkCeiling(key, "fields", s.fields, c.fields, floor.fields,
			"give the fields of one concern a type of their own"); msg != "" {
			out = append(out, msg)
		}
	}
	for key := range ceilings {
		if p, name := splitTypeKey(key); p == pkg {
			if _, ok := sizes[name]; !ok {
				out = append(out, fmt.Sprintf("package %s: typeCeilings names type %s, which it does not declare: delete the entry", pkg, name))
			}
		}
	}
	sort.Strings(out)
	return out
}

// checkCeiling checks one count n of the type key against its ceiling (0 for none) and the
// floor; split says how to split the type.
func checkCeiling(key, what string, n, ceiling, floor int, split string) string {
	pkg, name := splitTypeKey(key)
	where := fmt.Sprintf("package %s: type %s has %d %s", pkg, name, n, what)
	switch {
	case ceiling == 0 && n > floor:
		return fmt.Sprintf("%s, over the floor of %d for a type without a ceiling: split the type (%s); do not add a ceiling to typeCeilings",
			where, floor, split)
	case ceiling > 0 && n > ceiling:
		return fmt.Sprintf("%s, over its ceiling of %d: split the type (%s); do not raise the ceiling",
			where, ceiling, split)
	case ceiling > 0 && n <= floor:
		return fmt.Sprintf("%s, within the floor of %d: delete its %s ceiling of %d from typeCeilings[%q]",
			where, floor, what, ceiling, key)
	case ceiling > 0 && n < ceiling:
		return fmt.Sprintf("%s, under its ceiling of %d: lower typeCeilings[%q].%s to %d, so the ceiling only comes down",
			where, ceiling, key, what, n)
	}
	return ""
}

func TestRatchetCheck(t *testing.T) {
	floor := typeSize{methods: 20, fields: 15}
	ceilings := map[string]typeSize{
		"p.big":  {methods: 30, fields: 20},
		"p.wide": {fields: 18},
		"p.gone": {methods: 25},
		"q.big":  {methods: 99},
	}
	cases := []struct {
		name  string
		sizes map[string]typeSize
		want  []string // one substring per message, in order
	}{
		{"exact", map[string]typeSize{"big": {30, 20}, "wide": {20, 18}, "gone": {25, 0}, "small": {20, 15}}, nil},
		{"grown", map[string]typeSize{"big": {31, 20}, "wide": {20, 18}, "gone": {25, 0}},
			[]string{"type big has 31 methods, over its ceiling of 30: split the type"}},
		{"shrunk", map[string]typeSize{"big": {29, 20}, "wide": {20, 17}, "gone": {25, 0}},
			[]string{`type big has 29 methods, under its ceiling of 30: lower typeCeilings["p.big"].methods to 29`,
				`type wide has 17 fields, under its ceiling of 18: lower typeCeilings["p.wide"].fields to 17`}},
		{"within floor", map[string]typeSize{"big": {30, 15}, "wide": {20, 18}, "gone": {25, 0}},
			[]string{`type big has 15 fields, within the floor of 15: delete its fields ceiling of 20`}},
		{"no entry", map[string]typeSize{"big": {30, 20}, "wide": {21, 18}, "gone": {25, 0}, "small": {1, 16}},
			[]string{"type small has 16 fields, over the floor of 15 for a type without a ceiling",
				"type wide has 21 methods, over the floor of 20 for a type without a ceiling"}},
		{"deleted", map[string]typeSize{"big": {30, 20}, "wide": {20, 18}},
			[]string{"typeCeilings names type gone, which it does not declare"}},
	}
	for _, c := range cases {
		got := checkCeilings("p", c.sizes, ceilings, floor)
		if len(got) != len(c.want) {
			t.Errorf("%s: got %d messages, want %d:\n\t%s", c.name, len(got), len(c.want), strings.Join(got, "\n\t"))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) || !strings.HasPrefix(got[i], "package p: ") {
				t.Errorf("%s: message %q lacks %q", c.name, got[i], w)
			}
		}
	}
}

func TestPartsGenericTypes(t *testing.T) {
	const src = `package p

type Win[T any] struct{ a, b T; c int; *Win[T] }
func (w *Win[T]) X() {}
func (w Win[T]) Y() {}
func (*Win[_]) Z() {}

type Map[K comparable, V any] struct{ m map[K]V }
func (m *Map[K, V]) Get() {}
func (Map[K, V]) Len() int { return 0 }

type Num interface{ ~int | ~float64; String() string; fmt() }
type Plain int
func (Plain) A() {}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := typeSizes([]*ast.File{f})
	want := map[string]typeSize{
		"Win":   {methods: 3, fields: 4},
		"Map":   {methods: 2, fields: 1},
		"Num":   {methods: 2},
		"Plain": {methods: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("typeSizes = %v, want %v", got, want)
	}
}
