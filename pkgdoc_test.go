package gorma_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs requires a doc.go in every package directory that holds non-test Go
// files, with the package comment in the usual form: "Package name ..." for a library and
// "Command name ..." for a main package.
func TestPackageDocs(t *testing.T) {
	root := moduleRoot(t)
	n := 0
	err := goDirs(root, func(rel, dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		hasCode := false
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				hasCode = true
			}
		}
		if !hasCode {
			return nil
		}
		n++
		if msg := checkDocFile(filepath.Join(dir, "doc.go"), filepath.Base(dir)); msg != "" {
			t.Errorf("package %s: %s", displayPkg(rel), msg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("found no package at all; is the walk broken?")
	}
}

func displayPkg(rel string) string {
	if rel == "" {
		return modulePath
	}
	return modulePath + "/" + rel
}

// checkDocFile returns what is wrong with the doc.go at path of a package in a directory
// called dirName, or "".
func checkDocFile(path, dirName string) string {
	src, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "no doc.go: write one saying what the package owns, how to use it, and its concurrency contract"
	}
	if err != nil {
		return err.Error()
	}
	return checkDoc(src, dirName)
}

// checkDoc checks the package comment of the doc.go source src.
func checkDoc(src []byte, dirName string) string {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return "doc.go: " + err.Error()
	}
	if f.Doc == nil {
		return "doc.go has no package comment"
	}
	text := f.Doc.Text()
	name := f.Name.Name
	want := "Package " + name + " "
	if name == "main" {
		want = "Command " + dirName + " "
	}
	if !strings.HasPrefix(text, want) {
		first, _, _ := strings.Cut(text, "\n")
		return "doc.go's package comment should begin with " + strings.TrimSpace(want) +
			", not " + first
	}
	return ""
}

func TestCheckDoc(t *testing.T) {
	tests := []struct {
		name, src, dir string
		ok             bool
	}{
		{"library", "// Package foo does things.\npackage foo\n", "foo", true},
		{"command", "// Command verbsperf measures.\npackage main\n", "verbsperf", true},
		{"no comment", "package foo\n", "foo", false},
		{"detached comment", "// Package foo does things.\n\npackage foo\n", "foo", false},
		{"wrong name", "// Package bar does things.\npackage foo\n", "foo", false},
		{"command named as package", "// Package main does things.\npackage main\n", "verbsperf", false},
		{"not Go", "Package foo", "foo", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := checkDoc([]byte(tc.src), tc.dir)
			if (msg == "") != tc.ok {
				t.Errorf("checkDoc = %q, want ok=%v", msg, tc.ok)
			}
		})
	}
}

// TestPackageTimeouts requires every directory with tests to run them through
// internal/testbudget.Run (directly, or through slurmtest.Run or verbstest.Main, which
// call it), so that its package timeout scales with the machine's load as its tests'
// budgets do.
func TestPackageTimeouts(t *testing.T) {
	root := moduleRoot(t)
	n := 0
	err := goDirs(root, func(rel, dir string) error {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil || len(files) == 0 {
			return err
		}
		n++
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			_, main, ok := strings.Cut(string(src), "\nfunc TestMain(m *testing.M) {")
			if !ok {
				continue
			}
			body, _, _ := strings.Cut(main, "\n}")
			if !strings.Contains(body, "testbudget.Run(m)") && !strings.Contains(body, "slurmtest.Run(m)") &&
				!strings.Contains(body, "verbstest.Main(m,") && !(rel == "internal/testbudget" && strings.Contains(body, "Run(m)")) {
				t.Errorf("package %s: %s's TestMain does not call testbudget.Run(m)", displayPkg(rel), filepath.Base(f))
			}
			return nil
		}
		t.Errorf("package %s has tests and no TestMain: add func TestMain(m *testing.M) { os.Exit(testbudget.Run(m)) }", displayPkg(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("found no test at all; is the walk broken?")
	}
}
