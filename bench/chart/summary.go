package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The page opens with a summary: for each machine and family of figures, where gorma
// leads the best peer and where it trails, as gorma / best peer. The ratios come from
// the medians of the tables below it (summary_points.go reads them).

// sumPoint is one figure of a family: gorma's value over the best peer's.
type sumPoint struct {
	group  string  // what the points share in a cell ("16 ranks"); "" for none
	x      float64 // a size in bytes or a rank count, as unit says
	unit   string  // "bytes" or "ranks"; "" when label names the figure
	label  string  // the figure, where unit is ""
	higher bool    // a higher figure is better (a bandwidth, a rate)
	q      float64 // gorma / best peer
}

// Units of a point's x.
const (
	unitBytes = "bytes"
	unitRanks = "ranks"
)

// side is 1 where gorma leads, -1 where it trails, and 0 where the ratio prints as
// 1.00x (a tie).
func (p sumPoint) side() int {
	if ratioText(p.q) == ratioText(1) {
		return 0
	}
	if (p.q < 1) != p.higher {
		return 1
	}
	return -1
}

// sumRow is one family of figures on one machine.
type sumRow struct {
	machine, family, commit string
	points                  []sumPoint
}

// renderSummary writes the section "Where gorma leads and trails": a row per machine
// and family with points, or "" when there is none.
func renderSummary(rep *Report) string {
	rows := reportSummary(rep)
	if rep.Device16 != nil {
		rows = append(rows, device16Summary(rep.Device16)...)
	}
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Where gorma leads and trails\n\n")
	fmt.Fprintf(&b, "For each machine and family of the figures below, where gorma leads and where it trails, as gorma / best peer: "+
		"gorma's median over the best median of the other systems in the figure's table. "+
		"gorma's own variants (gorma-tcp, gorma --manual) are not peers. "+
		"gorma leads below %s for a time and above %s for a bandwidth or a rate; a ratio that prints as %s is in neither column. "+
		"An MPICH run with more ranks than cores gives no ratio, as in its table.", ratioText(1), ratioText(1), ratioText(1))
	if rep.Machine.Cores > 0 && rep.Machine.Cores <= 2 {
		fmt.Fprintf(&b, " On %d cores, a sub-microsecond ratio within %s-%s is a tie (Method).", rep.Machine.Cores, ratioText(0.8), ratioText(1.2))
	}
	b.WriteString(" The last column names the commit that each run measured.\n\n")
	b.WriteString("| machine | figures | gorma leads | gorma trails | measured |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.machine, r.family, sumCell(r.points, 1), sumCell(r.points, -1), commitText(r.commit))
	}
	return b.String() + "\n"
}

// sumCell lists the points on one side (1: leads, -1: trails), by group in the order
// of each group's first point. Within a group, consecutive sizes or rank counts on the
// same side make one range ("8 B–64 MiB (0.45–0.71x)"); a point of the other side
// ends it. It is "-" when no point is on that side.
func sumCell(ps []sumPoint, side int) string {
	var groups []string
	byGroup := map[string][]sumPoint{}
	for _, p := range ps {
		if _, ok := byGroup[p.group]; !ok {
			groups = append(groups, p.group)
		}
		byGroup[p.group] = append(byGroup[p.group], p)
	}
	var parts []string
	for _, g := range groups {
		var items []string
		var run []sumPoint
		flush := func() {
			if len(run) > 0 {
				items = append(items, runText(run))
				run = nil
			}
		}
		for _, p := range byGroup[g] {
			switch {
			case p.side() != side:
				flush()
			case p.unit == "":
				flush()
				items = append(items, p.label+" ("+ratioText(p.q)+")")
			default:
				if len(run) > 0 && run[0].unit != p.unit {
					flush()
				}
				run = append(run, p)
			}
		}
		flush()
		if len(items) == 0 {
			continue
		}
		text := strings.Join(items, ", ")
		if g != "" {
			text = g + ": " + text
		}
		parts = append(parts, text)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// runText writes consecutive points of one unit: the first and the last x and the
// range of their ratios.
func runText(run []sumPoint) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range run {
		lo, hi = min(lo, p.q), max(hi, p.q)
	}
	first, last := run[0], run[len(run)-1]
	var x string
	switch {
	case first.unit == unitRanks && len(run) == 1:
		x = fmt.Sprintf("%d ranks", int(first.x))
	case first.unit == unitRanks:
		x = fmt.Sprintf("%d–%d ranks", int(first.x), int(last.x))
	case len(run) == 1:
		x = bytesText(first.x)
	default:
		x = bytesText(first.x) + "–" + bytesText(last.x)
	}
	return x + " (" + ratioRange(lo, hi) + ")"
}

// bytesText writes a byte count for a reader: "8 B", "64 MiB".
func bytesText(x float64) string { return sizeText(strconv.FormatFloat(x, 'f', -1, 64)) }
