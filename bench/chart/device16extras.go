package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// D16Extras are the job's extra runs (EXTRAS=1, the ex_ files): the p = 2 ping-pong and
// message rate of each system, gorma's ping-pong under --trace, rmabench at p = 2, and
// scalebench's window Allocate and startup at many ranks. Figures are medians over the
// repetitions.
type D16Extras struct {
	Reps     int                    `json:"reps"`
	PingPong map[string]D16PingPong `json:"pingpong"`              // by system
	TraceUS  float64                `json:"trace_latency_us"`      // gorma's 8 B latency under --trace
	ScaleP   int                    `json:"scale_ranks,omitempty"` // scalebench's rank count
	Scale    map[string]D16Scale    `json:"scale,omitempty"`       // by system
	RMA      []D16RMA               `json:"rma,omitempty"`         // rmabench's cells, in the files' order
}

// D16RMA is one rmabench cell at p = 2: a case at one size, each system's median. The
// cells kept are those at 8 B and 1 MiB, and the sizeless ones (the empty Fence, with its
// p99 as case "fence.p99"; busy_get's largest wait as "busy_get.max").
type D16RMA struct {
	Case   string             `json:"case"`
	Bytes  int                `json:"bytes"`
	Higher bool               `json:"higher,omitempty"` // a rate (MB/s): higher is better
	By     map[string]float64 `json:"by_system"`
}

// D16PingPong is one system's p = 2 figures at 8 B.
type D16PingPong struct {
	LatencyUS float64 `json:"latency_us"` // half round trip
	MBps      float64 `json:"MBps"`       // 64 messages in flight
}

// D16Scale is one system's scalebench figures.
type D16Scale struct {
	AllocateUS float64 `json:"win_allocate_us"`
	FreeUS     float64 `json:"win_free_us"`
	StartupS   float64 `json:"startup_s"`
	ShmemKB    float64 `json:"shmem_kb"`
}

// exFile names an extra run: ex_KIND_SYSTEM_REP.json, with a size after the repetition
// for rmabench's runs beyond 8 B (ex_rma_gorma_1_1M.json).
var exFile = regexp.MustCompile(`^ex_(pp|pptrace|scale|rma)_([a-z0-9]+)_(\d+)(_[0-9]+[KM]?)?\.json$`)

// rmaKept reports whether an rmabench row of bytes goes into the extras' table.
func rmaKept(bytes int) bool { return bytes == 0 || bytes == 8 || bytes == 1<<20 }

// collectExtras reads the ex_ files of dir; nil when there are none.
func collectExtras(dir string) (*D16Extras, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	x := &D16Extras{PingPong: map[string]D16PingPong{}, Scale: map[string]D16Scale{}}
	lat, bw, trace := map[string][]float64{}, map[string][]float64{}, []float64{}
	type sc struct{ alloc, free, start, shm []float64 }
	scale := map[string]*sc{}
	rma := map[rmaKey]map[string][]float64{} // cell, then system: one figure per repetition
	var rmaOrder []rmaKey
	addRMA := func(k rmaKey, sys string, v float64) {
		if v == 0 {
			return
		}
		if rma[k] == nil {
			rma[k] = map[string][]float64{}
			rmaOrder = append(rmaOrder, k)
		}
		rma[k][sys] = append(rma[k][sys], v)
	}
	for _, e := range ents {
		m := exFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		rep, _ := strconv.Atoi(m[3])
		x.Reps = max(x.Reps, rep)
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		switch m[1] {
		case "pp", "pptrace":
			var d struct {
				Latency []struct {
					Bytes     int     `json:"bytes"`
					LatencyUS float64 `json:"latency_us"`
				} `json:"latency"`
				Bandwidth []struct {
					Bytes int     `json:"bytes"`
					MBps  float64 `json:"MB_per_s"`
				} `json:"bandwidth"`
			}
			if err := json.Unmarshal(b, &d); err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			for _, r := range d.Latency {
				if r.Bytes == 8 && m[1] == "pp" {
					lat[m[2]] = append(lat[m[2]], r.LatencyUS)
				} else if r.Bytes == 8 {
					trace = append(trace, r.LatencyUS)
				}
			}
			for _, r := range d.Bandwidth {
				if r.Bytes == 8 && m[1] == "pp" {
					bw[m[2]] = append(bw[m[2]], r.MBps)
				}
			}
		case "scale":
			var d struct {
				Ranks   int                                 `json:"ranks"`
				ShmemKB float64                             `json:"shmem_kb"`
				Figures map[string]struct{ Median float64 } `json:"figures"`
			}
			if err := json.Unmarshal(b, &d); err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			x.ScaleP = d.Ranks
			s := scale[m[2]]
			if s == nil {
				s = &sc{}
				scale[m[2]] = s
			}
			s.alloc = append(s.alloc, d.Figures["win_allocate_us"].Median)
			s.free = append(s.free, d.Figures["win_free_us"].Median)
			s.start = append(s.start, d.Figures["startup_s"].Median)
			s.shm = append(s.shm, d.ShmemKB)
		case "rma":
			var d rmaDoc
			if err := json.Unmarshal(b, &d); err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			for _, t := range d.Tables {
				for _, r := range t.Rows {
					if !rmaKept(r.Bytes) {
						continue
					}
					if r.MBps != 0 {
						addRMA(rmaKey{t.Name, r.Bytes, true}, m[2], r.MBps)
						continue
					}
					addRMA(rmaKey{t.Name, r.Bytes, false}, m[2], r.MedianUS)
					switch t.Name {
					case "fence":
						addRMA(rmaKey{"fence.p99", r.Bytes, false}, m[2], r.P99US)
					case "busy_get":
						addRMA(rmaKey{"busy_get.max", r.Bytes, false}, m[2], r.MaxUS)
					}
				}
			}
		}
	}
	if x.Reps == 0 {
		return nil, nil
	}
	for s, v := range lat {
		x.PingPong[s] = D16PingPong{LatencyUS: median(v), MBps: median(bw[s])}
	}
	if len(trace) > 0 {
		x.TraceUS = median(trace)
	}
	for s, v := range scale {
		x.Scale[s] = D16Scale{AllocateUS: median(v.alloc), FreeUS: median(v.free), StartupS: median(v.start), ShmemKB: median(v.shm)}
	}
	for _, k := range rmaOrder {
		c := D16RMA{Case: k.name, Bytes: k.bytes, Higher: k.higher, By: map[string]float64{}}
		for s, v := range rma[k] {
			c.By[s] = median(v)
		}
		x.RMA = append(x.RMA, c)
	}
	return x, nil
}

// rmaDoc is what chart reads of an rmabench JSON document (Go's and the C twin's).
type rmaDoc struct {
	Tables []struct {
		Name string `json:"name"`
		Rows []struct {
			Bytes    int     `json:"bytes"`
			MedianUS float64 `json:"median_us"`
			P99US    float64 `json:"p99_us"`
			MaxUS    float64 `json:"max_us"`
			MBps     float64 `json:"MB_per_s"`
		} `json:"rows"`
	} `json:"tables"`
}

// rmaKey names one rmabench cell while the files are read.
type rmaKey struct {
	name   string
	bytes  int
	higher bool
}

// d16Extra is one figure of the extras' table that the systems share: its name on the
// page (with %d for scalebench's rank count), its name in the summary, where each
// system's value is, and whether a higher value is better.
type d16Extra struct {
	name, short string
	scale       bool
	get         func(x *D16Extras, s string) (float64, bool)
	higher      bool
}

var d16Extras = []d16Extra{
	{"ping-pong 8 B (us)", "ping-pong 8 B", false, pingPong(func(v D16PingPong) float64 { return v.LatencyUS }), false},
	{"message rate 8 B (MB/s, higher is better)", "message rate 8 B", false, pingPong(func(v D16PingPong) float64 { return v.MBps }), true},
	{"window Allocate, %d ranks (us)", "window Allocate", true, scaleFig(func(v D16Scale) float64 { return v.AllocateUS }), false},
	{"window Free, %d ranks (us)", "window Free", true, scaleFig(func(v D16Scale) float64 { return v.FreeUS }), false},
	{"startup, %d ranks (s)", "startup", true, scaleFig(func(v D16Scale) float64 { return v.StartupS }), false},
	{"shared memory, %d ranks (kB)", "shared memory", true, scaleFig(func(v D16Scale) float64 { return v.ShmemKB }), false},
}

// pingPong and scaleFig read a figure of a system's ping-pong or scalebench runs.
func pingPong(f func(D16PingPong) float64) func(*D16Extras, string) (float64, bool) {
	return func(x *D16Extras, s string) (float64, bool) { v, ok := x.PingPong[s]; return f(v), ok }
}

func scaleFig(f func(D16Scale) float64) func(*D16Extras, string) (float64, bool) {
	return func(x *D16Extras, s string) (float64, bool) { v, ok := x.Scale[s]; return f(v), ok }
}

// value is system s's figure f; false when s did not run it or it is 0.
func (x *D16Extras) value(f d16Extra, s string) (float64, bool) {
	v, ok := f.get(x, s)
	return v, ok && v != 0
}

// quotient is gorma's figure f over the best peer's; false when either is missing.
func (x *D16Extras) quotient(f d16Extra) (float64, bool) {
	return overBestPeer(func(s string) (float64, bool) { return x.value(f, s) }, f.higher)
}

// overBestPeer is gorma's figure over the best of Open MPI's and MPICH's, as fig reads
// each system's (false: none); false when gorma's or every peer's is missing. higher
// says a higher figure is better.
func overBestPeer(fig func(s string) (float64, bool), higher bool) (float64, bool) {
	g, ok := fig("gorma")
	var peers []float64
	for _, s := range []string{"ompi", "mpich"} {
		if v, ok := fig(s); ok && v > 0 {
			peers = append(peers, v)
		}
	}
	if !ok || g <= 0 || len(peers) == 0 {
		return 0, false
	}
	best := slices.Min(peers)
	if higher {
		best = slices.Max(peers)
	}
	return g / best, true
}

// renderD16Extras writes the extras' table, if the results have them.
func renderD16Extras(b *strings.Builder, x *D16Extras) {
	if x == nil {
		return
	}
	sys := systemsWith(func(s string) bool {
		_, pp := x.PingPong[s]
		_, sc := x.Scale[s]
		return pp || sc
	})
	fmt.Fprintf(b, "### Point to point, tracing and windows\n\n"+
		"The job's extra runs (the ex_ files), %d repetitions, each running every system once, in turn: "+
		"`pingpong` at p = 2 (8 B latency, and the 8 B message rate with 64 in flight), gorma's ping-pong under `golaunch --trace`, "+
		"and `scalebench` at %d ranks (window Allocate and Free of 1 MiB per rank, startup, the host's shared memory).\n\n", x.Reps, x.ScaleP)
	head := []string{"figure"}
	for _, s := range sys {
		head = append(head, d16Names[s])
	}
	head = append(head, "gorma / best peer")
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|---|" + strings.Repeat("---:|", len(head)-1) + "\n")
	row := func(f d16Extra) {
		name := f.name
		if f.scale {
			name = fmt.Sprintf(f.name, x.ScaleP)
		}
		cells := []string{name}
		for _, s := range sys {
			if v, ok := x.value(f, s); ok {
				cells = append(cells, num(v, 3))
			} else {
				cells = append(cells, "-")
			}
		}
		ratio := "-"
		if q, ok := x.quotient(f); ok {
			ratio = ratioText(q)
		}
		b.WriteString("| " + strings.Join(append(cells, ratio), " | ") + " |\n")
	}
	for _, f := range d16Extras {
		if !f.scale {
			row(f)
		}
	}
	if g, ok := x.PingPong["gorma"]; ok && x.TraceUS > 0 && g.LatencyUS > 0 {
		fmt.Fprintf(b, "| ping-pong 8 B under --trace (us) | %s |%s %s of gorma untraced |\n",
			num(x.TraceUS, 3), strings.Repeat(" |", len(sys)-1), ratioText(x.TraceUS/g.LatencyUS))
	}
	for _, f := range d16Extras {
		if f.scale && len(x.Scale) > 0 {
			row(f)
		}
	}
	b.WriteString("\n")
	renderD16RMA(b, x.RMA)
}

// rmaQuotient is gorma's figure of cell c over the best peer's; false when either is
// missing.
func rmaQuotient(c D16RMA) (float64, bool) {
	return overBestPeer(func(s string) (float64, bool) { v, ok := c.By[s]; return v, ok }, c.Higher)
}

// renderD16RMA writes the table of rmabench's cells at p = 2, if the job ran it.
func renderD16RMA(b *strings.Builder, cells []D16RMA) {
	if len(cells) == 0 {
		return
	}
	sys := systemsWith(func(s string) bool {
		return slices.ContainsFunc(cells, func(c D16RMA) bool { _, ok := c.By[s]; return ok })
	})
	b.WriteString("### One-sided operations, 2 ranks\n\n" +
		"`rmabench` at p = 2, each system in turn per repetition: gorma bound to a core per rank, " +
		"Open MPI with `--mca osc sm` (bound by its default), MPICH. " +
		"Medians in us (MB/s where marked, higher is better) at 8 B and 1 MiB.\n\n")
	head := []string{"case", "bytes"}
	for _, s := range sys {
		head = append(head, d16Names[s])
	}
	head = append(head, "gorma / best peer")
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|---|" + strings.Repeat("---:|", len(head)-1) + "\n")
	for _, c := range cells {
		name := c.Case
		if c.Higher {
			name += " (MB/s)"
		}
		cells := []string{name, strconv.Itoa(c.Bytes)}
		for _, s := range sys {
			if v, ok := c.By[s]; ok {
				cells = append(cells, num(v, 3))
			} else {
				cells = append(cells, "-")
			}
		}
		ratio := "-"
		if q, ok := rmaQuotient(c); ok {
			ratio = ratioText(q)
		}
		b.WriteString("| " + strings.Join(append(cells, ratio), " | ") + " |\n")
	}
	b.WriteString("\n")
}
