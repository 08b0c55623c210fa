package gorma_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Every Go block of the documentation compiles. TestDocsGoBlocks reads each ```go block of
// README.md and docs/*.md and type-checks it against the packages of this checkout, as
// the compiler's front end does:
//
//   - a block that starts with a package clause (after comments) is a whole file, checked
//     as it is;
//   - any other block is a fragment of statements (and local declarations). The test
//     wraps it in `func _(ctx context.Context, w *runtime.World, PARAMS) error { BLOCK;
//     return nil }`, importing the packages its selectors name (docImports). A fragment's
//     results are for the code a reader writes after it, so its variables may go unused:
//     that error alone is forgiven in fragments;
//   - a comment `<!-- go: NAME TYPE, NAME TYPE -->` on the line before a fragment's fence
//     declares the names the fragment takes from the code around it, as PARAMS;
//   - a comment `<!-- go: not compiled: REASON -->` there leaves the block out. Keep it
//     rare: a block that cannot compile is one a reader cannot paste.

// docImports are the packages a fragment may name, by the name it uses.
var docImports = map[string]string{
	"collectives": "github.com/gorma-hpc/gorma/collectives",
	"context":     "context",
	"datatype":    "github.com/gorma-hpc/gorma/datatype",
	"errors":      "errors",
	"fmt":         "fmt",
	"grpc":        "google.golang.org/grpc",
	"http":        "net/http",
	"insecure":    "google.golang.org/grpc/credentials/insecure",
	"log":         "log",
	"net":         "net",
	"os":          "os",
	"runtime":     "github.com/gorma-hpc/gorma/runtime",
	"sockets":     "github.com/gorma-hpc/gorma/transport/sockets",
	"time":        "time",
	"topo":        "github.com/gorma-hpc/gorma/topo",
	"window":      "github.com/gorma-hpc/gorma/window",
}

// docBlock is a ```go block of a Markdown file.
type docBlock struct {
	file   string // the Markdown file
	line   int    // the line of the block's first code line
	code   string
	params string // the fragment's parameters from its <!-- go: --> comment
	skip   string // why the block is not compiled, from its comment
}

// docMarker is the comment before a fence that declares a fragment's parameters or
// leaves the block out.
var docMarker = regexp.MustCompile(`^<!-- go: (.*) -->$`)

// docBlocks returns the ```go blocks of the Markdown file at path.
func docBlocks(path string) ([]docBlock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	var blocks []docBlock
	for i := 0; i < len(lines); i++ {
		if m := docMarker.FindStringSubmatch(lines[i]); m != nil && (i+1 >= len(lines) || lines[i+1] != "```go") {
			return nil, fmt.Errorf("%s:%d: %q is not on the line before a ```go fence", path, i+1, lines[i])
		}
		if lines[i] != "```go" {
			continue
		}
		blk := docBlock{file: path, line: i + 2}
		if i > 0 {
			if m := docMarker.FindStringSubmatch(lines[i-1]); m != nil {
				if reason, ok := strings.CutPrefix(m[1], "not compiled:"); ok {
					blk.skip = strings.TrimSpace(reason)
					if blk.skip == "" {
						return nil, fmt.Errorf("%s:%d: a block left out of compilation must say why", path, i)
					}
				} else {
					blk.params = m[1]
				}
			}
		}
		end := slices.Index(lines[i+1:], "```")
		if end < 0 {
			return nil, fmt.Errorf("%s:%d: a ```go block that does not end", path, i+1)
		}
		blk.code = strings.Join(lines[i+1:i+1+end], "\n") + "\n"
		blocks = append(blocks, blk)
		i += end + 1
	}
	return blocks, nil
}

// wholeFile reports whether code is a whole Go file: its first line that is not a
// comment or blank is a package clause.
func wholeFile(code string) bool {
	for _, l := range strings.Split(code, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		return strings.HasPrefix(l, "package ")
	}
	return false
}

// fragmentFile wraps fragment blk in a function of a file that imports what its
// selectors name. It returns the file and the number of lines before the block's first.
func fragmentFile(blk docBlock) (string, int, error) {
	head := "func _(ctx context.Context, w *runtime.World"
	if blk.params != "" {
		head += ", " + blk.params
	}
	head += ") error {\n"
	body := head + blk.code + "return nil\n}\n"
	// The selectors' package names, from a parse without imports.
	f, err := parser.ParseFile(token.NewFileSet(), "", "package doc\n"+body, parser.SkipObjectResolution)
	if err != nil {
		return "", 0, err
	}
	used := map[string]bool{"context": true, "runtime": true}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok && docImports[id.Name] != "" {
				used[id.Name] = true
			}
		}
		return true
	})
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("package doc\n\nimport (\n")
	for _, n := range names {
		fmt.Fprintf(&b, "\t%s %q\n", n, docImports[n])
	}
	b.WriteString(")\n\n")
	offset := strings.Count(b.String(), "\n") + 1 // the function's first line
	b.WriteString(body)
	return b.String(), offset, nil
}

// exportImporter returns an importer of the compiled packages of paths and their
// dependencies, from `go list -export`.
func exportImporter(t *testing.T, fset *token.FileSet, paths []string) types.Importer {
	t.Helper()
	gobin := filepath.Join(goroot(t), "bin", "go")
	cmd := exec.Command(gobin, append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
}

func TestDocsGoBlocks(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	for _, f := range append([]string{"README.md"}, files...) {
		bs, err := docBlocks(f)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) < 10 {
		t.Fatalf("found %d Go blocks in README.md and docs/*.md, want every one", len(blocks))
	}
	type unit struct {
		blk    docBlock
		src    string
		offset int // lines of src before the block's first
		frag   bool
	}
	var units []unit
	paths := map[string]bool{}
	for _, blk := range blocks {
		if blk.skip != "" {
			t.Logf("%s:%d: not compiled: %s", blk.file, blk.line, blk.skip)
			continue
		}
		u := unit{blk: blk, src: blk.code, offset: 0}
		if !wholeFile(blk.code) {
			u.frag = true
			if u.src, u.offset, err = fragmentFile(blk); err != nil {
				t.Errorf("%s:%d: the fragment does not parse: %v", blk.file, blk.line, err)
				continue
			}
		}
		f, err := parser.ParseFile(token.NewFileSet(), "", u.src, parser.ImportsOnly)
		if err != nil {
			t.Errorf("%s:%d: the block does not parse: %v", blk.file, blk.line, err)
			continue
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			paths[p] = true
		}
		units = append(units, u)
	}
	var list []string
	for p := range paths {
		list = append(list, p)
	}
	sort.Strings(list)
	fset := token.NewFileSet()
	imp := exportImporter(t, fset, list)
	for _, u := range units {
		name := fmt.Sprintf("%s:%d", u.blk.file, u.blk.line)
		f, err := parser.ParseFile(fset, name, u.src, 0)
		if err != nil {
			t.Errorf("%s: the block does not parse: %v", name, err)
			continue
		}
		var errs []string
		conf := types.Config{Importer: imp, Error: func(err error) {
			var te types.Error
			if errors.As(err, &te) {
				if u.frag && te.Soft && strings.Contains(te.Msg, "declared and not used") {
					return // a fragment's results are the reader's to use
				}
				pos := te.Fset.Position(te.Pos)
				errs = append(errs, fmt.Sprintf("%s:%d: %s", u.blk.file, u.blk.line+pos.Line-1-u.offset, te.Msg))
				return
			}
			errs = append(errs, err.Error())
		}}
		conf.Check("doc", fset, []*ast.File{f}, nil)
		if len(errs) > 0 {
			t.Errorf("%s: the Go block does not compile:\n\t%s", name, strings.Join(errs, "\n\t"))
		}
	}
}
