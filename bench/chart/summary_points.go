package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// reportFamilies are the summary's families of docs/benchmarks.json, in page order:
// the section each reads, its name on the summary, and how it reads its points.
var reportFamilies = []struct {
	id, name string
	points   func(Machine, Section) []sumPoint
}{
	{"startup", "Startup, whole hello job", startupPoints},
	{"launchers", "Startup under each launcher", launcherPoints},
	{"p2p", "Point-to-point, 2 ranks", p2pPoints},
	{"rma", "One-sided (RMA), 2 ranks, each case", rmaPoints},
	{"allreduce", "Allreduce and Barrier", allreducePoints},
	{"sockets", "net.Conn, gorma-shm", socketsPoints},
	{"halo", "Halo exchange, 2 ranks", haloPoints},
	{"overlap", "Iallreduce beside a computation, 2 ranks", overlapPoints},
	{"scale", "One job on one host", scalePoints},
}

// reportSummary is a row per family of the report with points. A section's commit is
// its own where it has one, else the report's.
func reportSummary(rep *Report) []sumRow {
	machine := fmt.Sprintf("%d cores, %s", rep.Machine.Cores, rep.Machine.CPU)
	var rows []sumRow
	for _, f := range reportFamilies {
		for _, s := range rep.Sections {
			if s.ID != f.id || s.Failed != "" {
				continue
			}
			commit := s.Commit
			if commit == "" {
				commit = rep.Commit
			}
			if ps := f.points(rep.Machine, s); len(ps) > 0 {
				rows = append(rows, sumRow{machine: machine, family: f.name, commit: commit, points: ps})
			}
		}
	}
	return rows
}

// device16Summary is a row per family of the 16-core node's document with points.
func device16Summary(d *Device16) []sumRow {
	machine := fmt.Sprintf("%d cores, %s", d.Machine.Cores, d.Machine.CPU)
	var rows []sumRow
	add := func(family string, ps []sumPoint) {
		if len(ps) > 0 {
			rows = append(rows, sumRow{machine: machine, family: family, commit: d.Commit, points: ps})
		}
	}
	sized := func(group string, rows []D16Row) []sumPoint {
		var ps []sumPoint
		for _, row := range rows {
			if q, ok := d16Quotient(row); ok {
				ps = append(ps, sumPoint{group: group, x: float64(row.Bytes), unit: unitBytes, q: q})
			}
		}
		return ps
	}
	var ranks []D16Ranks
	for _, r := range d.Ranks {
		if !r.OneFree {
			ranks = append(ranks, r)
		}
	}
	var ps []sumPoint
	for _, r := range ranks {
		g := fmt.Sprintf("%d ranks", r.P)
		ps = append(ps, sized(g, r.Allreduce)...)
		if q, ok := d16Quotient(r.Barrier); ok {
			ps = append(ps, sumPoint{group: g, label: "Barrier", q: q})
		}
	}
	add("Allreduce and Barrier", ps)
	for _, c := range d16Colls {
		ps = nil
		for _, r := range ranks {
			ps = append(ps, sized(fmt.Sprintf("%d ranks", r.P), *c.rows(&r))...)
		}
		add(c.name, ps)
	}
	ps = nil
	for _, r := range d.Perf {
		if q, ok := perfQuotient(r); ok {
			ps = append(ps, sumPoint{group: fmt.Sprintf("%d ranks", r.P), x: float64(r.Bytes), unit: unitBytes, q: q})
		}
	}
	add("Context switches per Allreduce call, whole machine", ps)
	if x := d.Extras; x != nil {
		var pp, sc []sumPoint
		for _, f := range d16Extras {
			q, ok := x.quotient(f)
			if !ok || f.scale && len(x.Scale) == 0 {
				continue
			}
			p := sumPoint{label: f.short, higher: f.higher, q: q}
			if f.scale {
				sc = append(sc, p)
			} else {
				pp = append(pp, p)
			}
		}
		add("Point-to-point, 2 ranks", pp)
		add(fmt.Sprintf("Windows and startup, %d ranks", x.ScaleP), sc)
		var rma []sumPoint
		for _, c := range x.RMA {
			if q, ok := rmaQuotient(c); ok {
				rma = append(rma, sumPoint{label: fmt.Sprintf("%s %d B", c.Case, c.Bytes), higher: c.Higher, q: q})
			}
		}
		add("One-sided operations, 2 ranks", rma)
	}
	return rows
}

// quotient is g over the best of peers (the lowest, or the highest where higher is
// better); false when g or every peer is missing.
func quotient(g *float64, peers []float64, higher bool) (float64, bool) {
	if g == nil || *g <= 0 || len(peers) == 0 {
		return 0, false
	}
	best := peers[0]
	for _, v := range peers[1:] {
		if higher && v > best || !higher && v < best {
			best = v
		}
	}
	return *g / best, true
}

// peerValues are row r's values in columns cols that ran as documented (not an MPICH
// run with more ranks than cores) and are above 0.
func peerValues(m Machine, s Section, t Table, r Row, cols ...int) []float64 {
	var out []float64
	for _, c := range cols {
		if c < len(r.Values) && r.Values[c] != nil && *r.Values[c] > 0 && oversubscribed(m, s, t, r, c) == "" {
			out = append(out, *r.Values[c])
		}
	}
	return out
}

// higherBetter reports whether a higher value of row r is better: the table says so,
// or, where it does not, the row's unit is a rate ("MB/s", "req/s").
func higherBetter(t Table, r Row) bool {
	if t.Better != "" {
		return t.Better == "higher"
	}
	unit := r.Unit
	if unit == "" {
		unit = t.Unit
	}
	return strings.HasSuffix(unit, "/s")
}

// peerColumns are the value columns of t in [from, to) that hold a peer: not gorma's
// (its variants, such as gorma-tcp or gorma --manual) and not a ratio.
func peerColumns(t Table, from, to int) []int {
	var cols []int
	for i := from; i < to && i < len(t.Columns); i++ {
		if c := t.Columns[i]; !strings.HasPrefix(c, "gorma") && !ratioColumn(c) {
			cols = append(cols, i)
		}
	}
	return cols
}

// columnPoints reads the rows of t that point accepts: gorma's value in column 0 over
// the best of the peer columns.
func columnPoints(m Machine, s Section, t Table, point func(Row) (sumPoint, bool)) []sumPoint {
	peers := peerColumns(t, 1, len(t.Columns))
	var out []sumPoint
	for _, r := range t.Rows {
		p, ok := point(r)
		if !ok || len(r.Values) == 0 {
			continue
		}
		p.higher = higherBetter(t, r)
		if q, ok := quotient(r.Values[0], peerValues(m, s, t, r, peers...), p.higher); ok {
			p.q = q
			out = append(out, p)
		}
	}
	return out
}

// pairPoints reads tables of one peer per row (gorma's value, then the peer's): the rows
// that point maps to the same point are one figure, gorma's value over the best of
// their peers. The points come in the order of their first peer.
func pairPoints(m Machine, s Section, tables []Table, point func(Table, Row) (sumPoint, bool)) []sumPoint {
	var order []sumPoint
	gorma := map[sumPoint]*float64{}
	peers := map[sumPoint][]float64{}
	for _, t := range tables {
		for _, r := range t.Rows {
			p, ok := point(t, r)
			if !ok || len(r.Values) < 2 {
				continue
			}
			p.higher = higherBetter(t, r)
			if _, seen := gorma[p]; !seen {
				gorma[p] = r.Values[0]
			}
			v := peerValues(m, s, t, r, 1)
			if len(peers[p]) == 0 && len(v) > 0 {
				order = append(order, p)
			}
			peers[p] = append(peers[p], v...)
		}
	}
	var out []sumPoint
	for _, p := range order {
		if q, ok := quotient(gorma[p], peers[p], p.higher); ok {
			p.q = q
			out = append(out, p)
		}
	}
	return out
}

// sizePoint is a point of a row labelled by a size ("8", "1K", "64 B").
func sizePoint(group string) func(Row) (sumPoint, bool) {
	return func(r Row) (sumPoint, bool) {
		x, ok := labelX(r.Label)
		return sumPoint{group: group, x: x, unit: unitBytes}, ok
	}
}

// splitLabel is a row label's group and figure: "stream, 64 KiB writes" is the figure
// "64 KiB writes" of the group "stream"; a label without ", " is a figure alone.
func splitLabel(label string) (group, figure string) {
	if i := strings.LastIndex(label, ", "); i >= 0 {
		return label[:i], label[i+2:]
	}
	return "", label
}

func startupPoints(m Machine, s Section) []sumPoint {
	t, ok := findTable(s, "Medians")
	if !ok {
		return nil
	}
	return pairPoints(m, s, []Table{t}, func(t Table, r Row) (sumPoint, bool) {
		n := rankCount(s, t, r)
		return sumPoint{x: float64(n), unit: unitRanks}, n > 0
	})
}

// launcherPoints: gorma's hello against the MPIs' under each launcher, and golaunch
// against the MPIs' launchers with their own hello.
func launcherPoints(m Machine, s Section) []sumPoint {
	var ranks, launchers []Table
	for _, t := range s.Tables {
		if strings.HasPrefix(t.Title, "gorma ranks against ") {
			ranks = append(ranks, t)
		} else if strings.Contains(t.Title, ": golaunch against ") {
			launchers = append(launchers, t)
		}
	}
	ps := pairPoints(m, s, ranks, func(t Table, r Row) (sumPoint, bool) {
		launcher, _, ok := strings.Cut(r.Label, ", ")
		return sumPoint{group: fmt.Sprintf("gorma's hello, %d ranks", rankCount(s, t, r)), label: launcher}, ok
	})
	return append(ps, pairPoints(m, s, launchers, func(t Table, r Row) (sumPoint, bool) {
		n := rankCount(s, t, r)
		return sumPoint{group: strings.Replace(t.Title, ": ", ", ", 1), x: float64(n), unit: unitRanks}, n > 0
	})...)
}

// p2pPoints: the shm rows against Open MPI and MPICH ("8 B half RTT, shm vs MPICH").
func p2pPoints(m Machine, s Section) []sumPoint {
	t, ok := findTable(s, "Targets")
	if !ok {
		return nil
	}
	return pairPoints(m, s, []Table{t}, func(t Table, r Row) (sumPoint, bool) {
		fig, peer, ok := strings.Cut(r.Label, " vs ")
		g, f := splitLabel(fig)
		return sumPoint{group: g, label: f}, ok && (peer == "Open MPI" || peer == "MPICH")
	})
}

func rmaPoints(m Machine, s Section) []sumPoint {
	t, ok := findTable(s, "Every case")
	if !ok {
		return nil
	}
	return columnPoints(m, s, t, func(r Row) (sumPoint, bool) {
		c, _, _ := strings.Cut(r.Label, ", ")
		return sumPoint{label: c}, true
	})
}

// allreducePoints: the latency of each rank count by size, and its Barrier.
func allreducePoints(m Machine, s Section) []sumPoint {
	var ps, barrier []sumPoint
	for _, t := range s.Tables {
		if g, ok := strings.CutPrefix(t.Title, "Allreduce, "); ok {
			if g, ok := strings.CutSuffix(g, ": latency"); ok {
				ps = append(ps, columnPoints(m, s, t, sizePoint(g))...)
			}
			continue
		}
		barrier = append(barrier, columnPoints(m, s, t, func(r Row) (sumPoint, bool) {
			g, ok := strings.CutPrefix(r.Label, "Barrier, ")
			return sumPoint{group: g, label: "Barrier"}, ok
		})...)
	}
	return append(ps, barrier...)
}

// socketsPoints: gorma-shm against Unix and TCP sockets and shmipc-go.
func socketsPoints(m Machine, s Section) []sumPoint {
	var ps []sumPoint
	for _, t := range s.Tables {
		ps = append(ps, columnPoints(m, s, t, func(r Row) (sumPoint, bool) {
			if x, ok := labelX(r.Label); ok {
				return sumPoint{group: strings.ToLower(t.Title), x: x, unit: unitBytes}, true
			}
			g, f := splitLabel(r.Label)
			return sumPoint{group: g, label: f}, true
		})...)
	}
	return ps
}

// haloPoints: a point per matrix ("N=256").
func haloPoints(m Machine, s Section) []sumPoint {
	t, ok := findTable(s, "One exchange")
	if !ok {
		return nil
	}
	return columnPoints(m, s, t, func(r Row) (sumPoint, bool) {
		n, _, _ := strings.Cut(r.Label, " (")
		return sumPoint{label: n}, true
	})
}

// overlapPoints: the Iallreduce with the computation beside it (t_ovl). The other rows
// are its parts, the computation alone, or a percentage.
func overlapPoints(m Machine, s Section) []sumPoint {
	var ps []sumPoint
	for _, t := range s.Tables {
		ps = append(ps, columnPoints(m, s, t, func(r Row) (sumPoint, bool) {
			f, _, _ := strings.Cut(r.Label, " (")
			return sumPoint{label: f}, strings.HasSuffix(r.Label, "(t_ovl)")
		})...)
	}
	return ps
}

// scalePoints: each column group of the scale tables ("job wall (s): gorma", then its
// peers) by rank count.
func scalePoints(m Machine, s Section) []sumPoint {
	var ps []sumPoint
	for _, t := range s.Tables {
		for i, c := range t.Columns {
			head, sys, ok := strings.Cut(c, ": ")
			if !ok || sys != "gorma" {
				continue
			}
			end := i + 1
			for end < len(t.Columns) && !strings.Contains(t.Columns[end], ": ") {
				end++
			}
			group, _, _ := strings.Cut(head, " (")
			peers := peerColumns(t, i+1, end)
			for _, r := range t.Rows {
				n, err := strconv.Atoi(r.Label)
				q, ok := quotient(r.Values[i], peerValues(m, s, t, r, peers...), higherBetter(t, r))
				if err == nil && ok && !math.IsNaN(q) {
					ps = append(ps, sumPoint{group: group, x: float64(n), unit: unitRanks, q: q})
				}
			}
		}
	}
	return ps
}
