package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A ratio compares gorma with a peer run the way the page's Method documents it. MPICH's
// ranks busy-poll: with more ranks than cores they take turns on the cores, and its
// figures measure the oversubscription, not MPICH. Such a cell stays in the table, but
// no ratio is taken from it and a target that depends on it is not judged; a footnote
// says why. A failed run has no value and so no ratio.

var ranksOf = regexp.MustCompile(`\b(\d+) ranks\b`)

// oversubscribed returns the footnote of column col of row r when that column holds an
// MPICH run (or a ratio to one) with more ranks than the machine's cores, or "".
func oversubscribed(m Machine, s Section, t Table, r Row, col int) string {
	if m.Cores <= 0 || col >= len(t.Columns) {
		return ""
	}
	name := t.Columns[col]
	if _, peer, ok := strings.Cut(name, " / "); ok {
		name = peer
	}
	mpich := strings.Contains(strings.ToLower(name), "mpich") ||
		name == "peer" && strings.Contains(strings.ToLower(r.Label), "mpich") ||
		strings.Contains(t.Title, "MPICH's")
	if !mpich {
		return ""
	}
	n := rankCount(s, t, r)
	if n <= m.Cores {
		return ""
	}
	return fmt.Sprintf("MPICH with more ranks than the %d cores: its ranks busy-poll and take turns on the cores, "+
		"which is not how MPICH is documented to run (a core per rank). Its figures are shown as measured; "+
		"no ratio is taken from them, and a target against them is not judged.", m.Cores)
}

// rankCount is the rank count of a row: its label ("4 ranks", or a bare number in a
// table keyed by ranks), else the table's title, else the section's; 0 if none says.
func rankCount(s Section, t Table, r Row) int {
	if t.Key == "ranks" {
		if n, err := strconv.Atoi(r.Label); err == nil {
			return n
		}
	}
	for _, text := range []string{r.Label, t.Title, s.Title} {
		if g := ranksOf.FindStringSubmatch(text); g != nil {
			n, _ := strconv.Atoi(g[1])
			return n
		}
	}
	return 0
}

// ratioColumn reports whether value column name is itself a ratio ("gorma / MPICH").
func ratioColumn(name string) bool { return strings.Contains(name, " / ") }
