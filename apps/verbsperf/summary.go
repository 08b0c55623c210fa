package main

import (
	"bufio"
	"fmt"
	"math"
)

// Check is one line of the summary: a figure the project's targets name, next to its
// target. Met is nil when the figures it needs were not measured in this run.
type Check struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target"`
	Met    *bool   `json:"met,omitempty"`
	Detail string  `json:"detail,omitempty"`
}

// ratioFloor is the size from which bandwidth is compared with its floor.
const ratioFloor = 1 << 20

// summarize computes the summary checks from the collected results.
func summarize(r *reporter) []Check {
	var out []Check
	add := func(c Check, ok bool, have bool) {
		if have {
			c.Met = &ok
		}
		out = append(out, c)
	}

	for _, op := range []string{"write_lat", "read_lat"} {
		c := Check{Name: "shm " + op[:len(op)-4] + " 8B, post to completion", Unit: "ns", Target: "< 100 ns"}
		row := r.find("shm", op, "completion").rowAt(8)
		if row != nil {
			c.Value = round3(row.MedianUS * 1e3)
		}
		add(c, c.Value < 100, row != nil)
	}

	{
		c := Check{Name: "shm send half-RTT 8B / raw flag ping-pong half-RTT", Unit: "x", Target: "<= 1.5x"}
		v, detail, have := latRatio(r.find("shm", "send_lat", "pingpong").rowAt(8), r.find("raw", "flag_pp", "").rowAt(8))
		c.Value, c.Detail = v, "send "+detail
		add(c, c.Value <= 1.5, have)
	}

	for _, op := range []string{"write_bw", "read_bw"} {
		c := Check{Name: "shm " + op + " / memcpy, sizes >= 1 MiB (worst)", Unit: "%", Target: ">= 80%"}
		v, n, have := worstRatio(r.find("shm", op, ""), r.find("raw", "memcpy", ""), ratioFloor)
		if have {
			c.Value = round3(v * 100)
			c.Detail = fmt.Sprintf("worst at %s", formatSize(n))
		}
		add(c, v >= 0.8, have)
	}

	{
		c := Check{Name: "tcp read 8B / raw TCP round trip 8B", Unit: "x", Target: "<= 1.2x"}
		v, detail, have := latRatio(r.find("tcp", "read_lat", "completion").rowAt(8), r.find("raw", "tcp_pp", "").rowAt(8))
		c.Value, c.Detail = v, "read "+detail
		add(c, c.Value <= 1.2, have)
	}

	{
		c := Check{Name: "tcp write_bw / raw TCP stream, sizes >= 1 MiB (worst)", Unit: "%", Target: ">= 80%"}
		v, n, have := worstRatio(r.find("tcp", "write_bw", ""), r.find("raw", "tcp_stream", ""), ratioFloor)
		if have {
			c.Value = round3(v * 100)
			c.Detail = fmt.Sprintf("worst at %s", formatSize(n))
		}
		add(c, v >= 0.8, have)
	}

	for _, p := range []string{"shm", "tcp"} {
		c := Check{Name: p + " arena alloc+free 1 MiB on reuse", Unit: "us", Target: "< 2 us"}
		row := r.find(p, "arena", "alloc_free").rowAt(1 << 20)
		if row == nil {
			if p == "tcp" {
				continue // reported for shm always, for tcp only when measured
			}
			add(c, false, false)
			continue
		}
		c.Value = row.MedianUS
		if seg := r.find("raw", "segment", "").rowAt(1 << 20); seg != nil && row.MedianUS > 0 {
			c.Detail = fmt.Sprintf("fresh segment %.3f us, %.0fx slower", seg.MedianUS, seg.MedianUS/row.MedianUS)
		}
		add(c, c.Value < 2, true)
	}
	return out
}

// latRatio returns the ratio of row's median to its floor's: the floor paired with the row
// when it has one (measured just before it), else the floor table's row.
func latRatio(row, floorRow *Row) (ratio float64, detail string, ok bool) {
	if row == nil {
		return 0, "", false
	}
	if row.FloorRatio > 0 {
		return row.FloorRatio, fmt.Sprintf("%.3f us, floor %.3f us, median of %d alternated pairs", row.MedianUS, row.FloorUS, latPairs), true
	}
	floor, how := row.FloorUS, "paired"
	if floor <= 0 && floorRow != nil {
		floor, how = floorRow.MedianUS, "floor table"
	}
	if floor <= 0 {
		return 0, "", false
	}
	return round3(row.MedianUS / floor), fmt.Sprintf("%.3f us, floor %.3f us, %s", row.MedianUS, floor, how), true
}

// worstRatio returns the smallest GB/s ratio of res to its floor over the sizes at or
// above from, and that size; with no such size, it compares the largest size. Each row is
// compared with the floor paired with it when it has one (the median of the adjacent
// pairs' ratios), else with the floor table.
func worstRatio(res, floor *Result, from int) (ratio float64, size int, ok bool) {
	if res == nil {
		return 0, 0, false
	}
	floorAt := func(row *Row) float64 {
		if row.FloorGBps > 0 {
			return row.FloorGBps
		}
		if f := floor.rowAt(row.Bytes); f != nil {
			return f.GBps
		}
		return 0
	}
	ratio = math.Inf(1)
	largest := -1
	for i, row := range res.Rows {
		f := floorAt(&res.Rows[i])
		if f <= 0 {
			continue
		}
		if largest < 0 || row.Bytes > res.Rows[largest].Bytes {
			largest = i
		}
		if r := rowRatio(&res.Rows[i], f); row.Bytes >= from && r < ratio {
			ratio, size, ok = r, row.Bytes, true
		}
	}
	if !ok && largest >= 0 {
		row := &res.Rows[largest]
		return rowRatio(row, floorAt(row)), row.Bytes, true
	}
	return ratio, size, ok
}

// rowRatio is a bandwidth row's ratio to its floor f: the median of its paired
// repetitions' ratios when it has them, else the ratio of the medians.
func rowRatio(row *Row, f float64) float64 {
	if row.FloorRatio > 0 {
		return row.FloorRatio
	}
	return row.GBps / f
}

// printSummary prints the checks as an aligned block.
func printSummary(w *bufio.Writer, checks []Check) {
	fmt.Fprintf(w, "\n# summary: figures against the project's targets (ratios from this run only)\n")
	for _, c := range checks {
		verdict, value := "n/a", "not measured"
		if c.Met != nil {
			verdict = "MISS"
			if *c.Met {
				verdict = "ok"
			}
			value = fmt.Sprintf("%.3f %s", c.Value, c.Unit)
		}
		line := fmt.Sprintf("%-58s %16s   target %-8s %s", c.Name, value, c.Target, verdict)
		if c.Detail != "" {
			line += "  (" + c.Detail + ")"
		}
		fmt.Fprintln(w, line)
	}
}
