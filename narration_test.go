package gorma_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository describes the code, not the history of its development: that lives in
// git log and commit messages (STYLE.md, "Docs and comments describe the code as it is").
// TestNarration reads the prose of the module — every comment of every .go file and every
// line of every .md file — and fails on the signs of a lab notebook listed in
// narrationRules. TestNarrationDocBudget keeps each package's doc.go short.

// docBudget is the most lines a package's doc.go may have: what the package owns, how to
// use it and its concurrency contract. Design reasoning goes to a design.md beside it.
const docBudget = 80

// narrationRule is one sign of narration. A match of re is a hit unless keep (if set)
// accepts its submatches as a legitimate use.
type narrationRule struct {
	name string
	re   *regexp.Regexp
	keep func(sub []string) bool
	fix  string
}

// ordinals are the ordinal words a work period is counted with.
const ordinals = `first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|` +
	`twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|` +
	`(?:twenty|thirty|forty|fifty)-(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)|` +
	`twentieth|thirtieth|fortieth|fiftieth|\d+(?:st|nd|rd|th)`

// beForms are the words before "used to" that make it passive ("is used to hold", "get
// used to"), not the habitual past.
var beForms = map[string]bool{"is": true, "are": true, "was": true, "were": true, "be": true,
	"been": true, "being": true, "get": true, "gets": true, "got": true, "getting": true}

// narrationRules is the word list. Each rule is deliberately narrow, so that the words a
// description of the code needs stay free: a process session (setsid, session leader),
// verbsperf's session type, "an earlier write" in the sense of order, "compare-and-swap".
var narrationRules = []narrationRule{
	{
		name: "work period",
		re:   regexp.MustCompile(`(?i)\b(?:` + ordinals + `)\s+(?:session|compare|sitting)s?(?:[^-\w]|$)`),
		fix:  "a numbered work period or run (\"the twelfth session\", \"the 3rd compare\") is history: state what is true of the code, and leave the history to git log",
	},
	{
		name: "late ordinal",
		re: regexp.MustCompile(`(?i)\b(?:(?:twenty|thirty|forty|fifty)-(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)|` +
			`twentieth|thirtieth|fortieth|fiftieth)\b`),
		fix: "an ordinal this high counts work periods (\"the twenty-fifth figures\"): name the benchmark command that measures the figure instead",
	},
	{
		// Comments on verbsperf's session type name it by its receiver ("connect to s"), as
		// "this session" reads as a work period.
		name: "session reference",
		re:   regexp.MustCompile(`(?i)\b(?:this|last|previous|prior|earlier|later|next|that)\s+(?:work\s+)?sessions?\b`),
		fix:  "a reference to a work session is history: describe the code as it is",
	},
	{
		name: "used to",
		re:   regexp.MustCompile(`(?i)(?:\b([a-z']+)\s+)?\bused\s+to\b`),
		keep: func(sub []string) bool { return beForms[strings.ToLower(sub[1])] },
		fix:  "\"X used to do Y\" narrates a change: state what the code does (a passive \"is used to\" is fine; for \"the key used to sign\", write \"the key that signs\")",
	},
	{
		name: "date",
		re:   regexp.MustCompile(`\b20\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b`),
		fix:  "a date dates the text: the commit that changes it carries the date",
	},
	{
		name: "clock time",
		re:   regexp.MustCompile(`\b(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?\s*UTC\b`),
		fix:  "the time of a run is history: name the command that reproduces it",
	},
	{
		name: "commit hash",
		// A value after "=" is data (an example key or id in a format), not a reference.
		re: regexp.MustCompile(`(=?)\b([0-9a-f]{7,40})\b`),
		keep: func(sub []string) bool {
			return sub[1] == "=" || !strings.ContainsAny(sub[2], "0123456789") || !strings.ContainsAny(sub[2], "abcdef")
		},
		fix: "a commit hash points into history: describe the code, or name the test or benchmark that shows it",
	},
}

// narrationHit is one rule broken by one line.
type narrationHit struct {
	rule  *narrationRule
	match string
}

// narrationHits returns the rules broken by the prose line s, whose following line in the
// same block is next ("" if none). Matches may run into next, so that a phrase wrapped
// over two lines is caught, but only those that start in s count: the next line reports
// its own.
func narrationHits(s, next string) []narrationHit {
	text := s
	if next != "" {
		text = s + " " + next
	}
	var hits []narrationHit
	var spans [][2]int // of the hits so far: a phrase one rule caught is not reported again
	covered := func(at int) bool {
		for _, sp := range spans {
			if at >= sp[0] && at < sp[1] {
				return true
			}
		}
		return false
	}
	for i := range narrationRules {
		r := &narrationRules[i]
		for _, loc := range r.re.FindAllStringSubmatchIndex(text, -1) {
			if loc[0] >= len(s) {
				break
			}
			sub := make([]string, len(loc)/2)
			for j := range sub {
				if loc[2*j] >= 0 {
					sub[j] = text[loc[2*j]:loc[2*j+1]]
				}
			}
			if (r.keep == nil || !r.keep(sub)) && !covered(loc[0]) {
				hits = append(hits, narrationHit{rule: r, match: strings.TrimSpace(sub[0])})
				spans = append(spans, [2]int{loc[0], loc[1]})
			}
		}
	}
	return hits
}

// proseLine is one line of prose: a line of a Go comment or of a Markdown file.
type proseLine struct {
	line int
	text string
}

// goProse returns the comment lines of the Go file at path.
func goProse(path string) ([]proseLine, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var lines []proseLine
	for _, g := range f.Comments {
		for _, c := range g.List {
			first := fset.Position(c.Slash).Line
			text := strings.TrimPrefix(strings.TrimPrefix(c.Text, "//"), "/*")
			text = strings.TrimSuffix(text, "*/")
			for i, l := range strings.Split(text, "\n") {
				lines = append(lines, proseLine{line: first + i, text: l})
			}
		}
	}
	return lines, nil
}

// mdProse returns the lines of the Markdown file at path.
func mdProse(path string) ([]proseLine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []proseLine
	for i, l := range strings.Split(string(b), "\n") {
		lines = append(lines, proseLine{line: i + 1, text: l})
	}
	return lines, nil
}

// proseSkip names the directories TestNarration does not read: git's, build output,
// benchmark output and test inputs.
var proseSkip = map[string]bool{".git": true, "bin": true, "results": true, "testdata": true}

// proseSelf is this file, which must quote the phrases it looks for.
const proseSelf = "narration_test.go"

// proseFiles returns the module-relative paths of every .go and .md file under root but
// proseSelf.
func proseFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (proseSkip[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); rel != proseSelf {
				files = append(files, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestNarration(t *testing.T) {
	root := moduleRoot(t)
	files := proseFiles(t, root)
	if len(files) < 50 {
		t.Fatalf("found only %d .go and .md files; is the walk broken?", len(files))
	}
	for _, rel := range files {
		read := mdProse
		if strings.HasSuffix(rel, ".go") {
			read = goProse
		}
		lines, err := read(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		for i, l := range lines {
			next := ""
			if i+1 < len(lines) && lines[i+1].line == l.line+1 {
				next = lines[i+1].text
			}
			for _, h := range narrationHits(l.text, next) {
				t.Errorf("%s:%d: narration (%s) %q: %s", rel, l.line, h.rule.name, h.match, h.rule.fix)
			}
		}
	}
}

// TestNarrationDocBudget fails on a package doc.go of more than docBudget lines.
func TestNarrationDocBudget(t *testing.T) {
	root := moduleRoot(t)
	err := goDirs(root, func(rel, dir string) error {
		b, err := os.ReadFile(filepath.Join(dir, "doc.go"))
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if n := strings.Count(string(b), "\n"); n > docBudget {
			t.Errorf("%s: %d lines, over the doc.go budget of %d: keep what the package owns, how to use it "+
				"(with Example functions) and its concurrency contract; move design reasoning to a design.md beside it",
				filepath.ToSlash(filepath.Join(rel, "doc.go")), n, docBudget)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNarrationRules checks the word list on lines it must catch and lines it must let
// through.
func TestNarrationRules(t *testing.T) {
	tests := []struct {
		line, next string
		rule       string // "" for no hit
	}{
		{"// measured in the twelfth session: 3 us", "", "work period"},
		{"twenty-fifth session).", "", "work period"},
		{"(docs/benchmarks.md, twenty-third", " session). Each attempt", "work period"},
		{"## The fourteenth compare", "", "work period"},
		{"the 3rd compare showed it", "", "work period"},
		{"status table's twenty-fifth figures", "", "late ordinal"},
		{"as measured this session", "", "session reference"},
		{"(see the last session's table)", "", "session reference"},
		{"a cut used to take 30 s", "", "used to"},
		{"// the children", "used to live on", "used to"},
		{"docs: make compare of 21:19 UTC", "", "clock time"},
		{"measured on 2025-03-14", "", "date"},
		{"fixed in 3f9c2ab, see", "", "commit hash"},
		{"(commit d62aae3e0b1c4f2a9d8e7c6b5a4f3e2d1c0b9a8f)", "", "commit hash"},

		{"// setsid makes the rank a session leader in a new session", "", ""},
		{"// session is one side's connected queue pair", "", ""},
		{"// Both processes build the same session; only the parent measures.", "", ""},
		{"// a fenced write waits for an earlier RDMA read on the QP", "", ""},
		{"// no earlier store is seen after it", "", ""},
		{"// the first compare-and-swap takes the lock", "", ""},
		{"// the second compare-swap fails", "", ""},
		{"// the buffer is used to hold the header", "", ""},
		{"// scratch can be used to stage", "", ""},
		{"// 0x9e3779b97f4a7c15 is the golden ratio", "", ""},
		{"// the page is deadbeef or cafebabe", "", ""},
		{"// waits 100 ms, then 1234567 bytes", "", ""},
		{"// e2eprog runs the first rank", "", ""},
		{"// a Go duration from 1us to 1s (default 50us)", "", ""},
		{"// the first, second and third rank", "", ""},
		{"// the session's window", "", ""},
		{"// Encode formats m as `v=1 boot=9f2c41d07be3a815`.", "", ""},
	}
	for _, tt := range tests {
		hits := narrationHits(tt.line, tt.next)
		switch {
		case tt.rule == "" && len(hits) > 0:
			t.Errorf("%q: hit %q (%s), want none", tt.line, hits[0].match, hits[0].rule.name)
		case tt.rule != "" && (len(hits) == 0 || hits[0].rule.name != tt.rule):
			t.Errorf("%q + %q: hits %v, want rule %q", tt.line, tt.next, ruleNames(hits), tt.rule)
		}
	}
}

func ruleNames(hits []narrationHit) []string {
	var names []string
	for _, h := range hits {
		names = append(names, fmt.Sprintf("%s %q", h.rule.name, h.match))
	}
	return names
}
