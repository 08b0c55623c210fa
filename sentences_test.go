package gorma_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// A comment sentence says one thing (STYLE.md, "Docs and comments describe the code as it
// is"): net/http's comment sentences average 12 words and almost never pass 40.
// TestSentenceLength reads the comments of the module's production Go files and fails when
// more than longShare of their sentences pass longWords words, or any passes maxWords.
//
// Production files are the .go files that are not _test.go files, outside testdata and
// nested modules, and not generated ("// Code generated ... DO NOT EDIT."). A package's
// doc.go counts: it is read by every user of the package. Every comment counts, inside a
// function or not. Code is not prose: indented blocks that are not list items, `code
// spans` (one word each) and directives (//go:build) are left out of the count.

const (
	longWords = 40   // a sentence over this many words is long
	longShare = 0.02 // the share of long sentences allowed
	maxWords  = 60   // no sentence may pass this many words
)

// sentence is one sentence of a comment.
type sentence struct {
	file  string // module-relative
	line  int
	words int
	text  string
}

// commentLine is one line of a comment, without its // or /* */ markers.
type commentLine struct {
	line int
	text string
}

// listItem matches the start of a list item: a bullet or a number, then a space.
var listItem = regexp.MustCompile(`^(?:[-*+•]|\d+[.)])\s`)

// directive matches the comment lines that are instructions to a tool, not prose.
var directive = regexp.MustCompile(`^(?:go:|line |nolint|export |extern |#nosec|lint:)`)

// commentParagraphs splits a comment group's lines into runs of prose: a blank line, a
// list item and a code block end a run, and code blocks are left out. A code block is an
// indented line that neither starts a list item nor continues one.
func commentParagraphs(lines []commentLine) [][]commentLine {
	var paras [][]commentLine
	var cur []commentLine
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, cur)
		}
		cur = nil
	}
	inList := false // the current run is a list item, so an indented line continues it
	for _, l := range lines {
		trimmed := strings.TrimSpace(l.text)
		indented := strings.HasPrefix(l.text, "\t") || strings.HasPrefix(l.text, "  ")
		switch {
		case trimmed == "":
			flush()
			inList = false
		case directive.MatchString(l.text):
			flush()
		case listItem.MatchString(trimmed):
			flush()
			inList = true
			cur = append(cur, commentLine{l.line, listItem.ReplaceAllString(trimmed, "")})
		case indented && !inList:
			flush() // code
		default:
			cur = append(cur, commentLine{l.line, trimmed})
		}
	}
	flush()
	return paras
}

// codeSpan matches a `code span`, counted as one word.
var codeSpan = regexp.MustCompile("`[^`]*`")

// abbreviations end with a period that does not end a sentence.
var abbreviations = map[string]bool{"e.g.": true, "i.e.": true, "etc.": true, "vs.": true, "cf.": true,
	"approx.": true, "resp.": true, "no.": true, "fig.": true}

// splitSentences splits one run of prose into sentences: a sentence ends at a '.', '!' or
// '?' (and any closing quotes or brackets) followed by a space or the end of the run. A
// period inside a word (a decimal number, a file name, x.Method) does not end one, nor
// do the abbreviations and an ellipsis.
func splitSentences(para []commentLine) []commentLine {
	var out []commentLine
	var cur []string
	start := 0
	for _, l := range para {
		text := codeSpan.ReplaceAllStringFunc(l.text, func(string) string { return "`code`" })
		for _, w := range strings.Fields(text) {
			if len(cur) == 0 {
				start = l.line
			}
			cur = append(cur, w)
			if endsSentence(w) {
				out = append(out, commentLine{start, strings.Join(cur, " ")})
				cur = nil
			}
		}
	}
	if len(cur) > 0 {
		out = append(out, commentLine{start, strings.Join(cur, " ")})
	}
	return out
}

// endsSentence reports whether the word w ends a sentence.
func endsSentence(w string) bool {
	core := strings.TrimRight(w, `"')]*_”’`)
	if core == "" || strings.HasSuffix(core, "...") {
		return false
	}
	switch core[len(core)-1] {
	case '!', '?':
		return true
	case '.':
		return !abbreviations[strings.ToLower(strings.TrimLeft(core, `"'([*_“‘`))]
	}
	return false
}

// countWords counts the words of s: the fields with a letter or a digit in them.
func countWords(s string) int {
	n := 0
	for _, f := range strings.Fields(s) {
		if strings.IndexFunc(f, func(r rune) bool {
			return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '`' || r > 127
		}) >= 0 {
			n++
		}
	}
	return n
}

// fileSentences returns the comment sentences of the Go file at path, or nil for a
// generated file.
func fileSentences(path, rel string) ([]sentence, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	var out []sentence
	for _, g := range f.Comments {
		var lines []commentLine
		for _, c := range g.List {
			first := fset.Position(c.Slash).Line
			text := c.Text
			if strings.HasPrefix(text, "//") {
				text = strings.TrimPrefix(text[2:], " ")
				lines = append(lines, commentLine{first, text})
				continue
			}
			text = strings.TrimSuffix(strings.TrimPrefix(text, "/*"), "*/")
			for i, l := range strings.Split(text, "\n") {
				lines = append(lines, commentLine{first + i, strings.TrimPrefix(l, " ")})
			}
		}
		for _, p := range commentParagraphs(lines) {
			for _, s := range splitSentences(p) {
				out = append(out, sentence{file: rel, line: s.line, words: countWords(s.text), text: s.text})
			}
		}
	}
	return out, nil
}

// productionSentences returns the comment sentences of every production Go file of the
// module at root.
func productionSentences(t *testing.T, root string) []sentence {
	t.Helper()
	var all []sentence
	err := goDirs(root, func(rel, dir string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			ss, err := fileSentences(filepath.Join(dir, name), filepath.ToSlash(filepath.Join(rel, name)))
			if err != nil {
				return err
			}
			all = append(all, ss...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestSentenceLength fails when more than longShare of the production comment sentences
// pass longWords words, or when any passes maxWords, and lists the offenders.
func TestSentenceLength(t *testing.T) {
	all := productionSentences(t, moduleRoot(t))
	if len(all) < 1000 {
		t.Fatalf("found only %d comment sentences; is the walk broken?", len(all))
	}
	var long, over []sentence
	for _, s := range all {
		if s.words > longWords {
			long = append(long, s)
		}
		if s.words > maxWords {
			over = append(over, s)
		}
	}
	share := float64(len(long)) / float64(len(all))
	t.Logf("%d comment sentences; %d (%.2f%%) over %d words, %d over %d",
		len(all), len(long), 100*share, longWords, len(over), maxWords)
	const fix = "split the sentence into short ones or a list, keeping what it says: " +
		"one sentence says one thing (STYLE.md, \"Docs and comments describe the code as it is\")"
	sort.SliceStable(long, func(i, j int) bool { return long[i].words > long[j].words })
	for _, s := range over {
		t.Errorf("%s:%d: a sentence of %d words, over the limit of %d: %s: %s",
			s.file, s.line, s.words, maxWords, preview(s.text), fix)
	}
	if share > longShare {
		var b strings.Builder
		for _, s := range long {
			if s.words <= maxWords {
				fmt.Fprintf(&b, "\n\t%s:%d: %d words: %s", s.file, s.line, s.words, preview(s.text))
			}
		}
		t.Errorf("%d of %d comment sentences (%.2f%%) pass %d words, over the %.0f%% allowed: %s; the long ones:%s",
			len(long), len(all), 100*share, longWords, 100*longShare, fix, b.String())
	}
}

// preview returns the start of a sentence, for a report.
func preview(s string) string {
	const n = 12
	f := strings.Fields(s)
	if len(f) > n {
		return strings.Join(f[:n], " ") + " ..."
	}
	return s
}

// TestSplitSentences checks the splitter on the prose it must handle.
func TestSplitSentences(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []int // the words of each sentence
	}{
		{"two", []string{"It sends. It receives."}, []int{2, 2}},
		{"wrapped", []string{"It sends the", "message. Then it waits."}, []int{4, 3}},
		{"abbreviations", []string{"A peer (e.g. a rank) or a waiter, i.e. a goroutine, etc. waits."}, []int{13}},
		{"decimal", []string{"It takes 1.5 ms on x.Method and docs/a.md too."}, []int{9}},
		{"code span", []string{"Call `a. b. c` then stop. Done!"}, []int{4, 1}},
		{"question", []string{"Why? Because."}, []int{1, 1}},
		{"quoted", []string{`He said "stop." Then left.`}, []int{3, 2}},
		{"paren", []string{"It ends (here.) Next one."}, []int{3, 2}},
		{"ellipsis", []string{"f(a, ...) returns it."}, []int{3}},
		{"list", []string{"It does:", "  - one thing", "    and more", "  - another.", "Then stops."}, []int{2, 4, 1, 2}},
		{"list run on", []string{"- one", "two. Three."}, []int{2, 1}},
		{"code block", []string{"Example:", "", "\tx := f(a. b. c. d)", "\ty := 2", "", "Done."}, []int{1, 1}},
		{"directive", []string{"go:build linux"}, nil},
	}
	for _, tt := range tests {
		var lines []commentLine
		for i, l := range tt.lines {
			lines = append(lines, commentLine{i + 1, l})
		}
		var got []int
		for _, p := range commentParagraphs(lines) {
			for _, s := range splitSentences(p) {
				got = append(got, countWords(s.text))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: sentence words %v, want %v", tt.name, got, tt.want)
		}
	}
}
