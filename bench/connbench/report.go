package connbench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// Row is one line of a result table.
type Row struct {
	Bytes      int       `json:"bytes"`
	Iterations int       `json:"iterations,omitempty"`
	MedianUS   float64   `json:"median_us,omitempty"` // round trip
	P5US       float64   `json:"p5_us,omitempty"`
	P95US      float64   `json:"p95_us,omitempty"`
	P99US      float64   `json:"p99_us,omitempty"`
	MBps       float64   `json:"MB_per_s,omitempty"` // median of the repetitions, 10^6 bytes/s
	RepsMBps   []float64 `json:"reps_MB_per_s,omitempty"`
	PerS       float64   `json:"per_s,omitempty"` // connections or requests per second
	Count      int       `json:"count,omitempty"` // connections or requests counted
}

// Result is one test over one transport.
type Result struct {
	Name      string `json:"name"` // the test, as chart's NAME=GLOB@TABLE:FIELD names a table
	Test      string `json:"test"`
	Transport string `json:"transport"`
	Kind      string `json:"kind"` // latency, bandwidth or rate
	Title     string `json:"title"`
	Rows      []Row  `json:"rows"`
}

// Result kinds: the columns of the text table (latency: round trip percentiles in us;
// bandwidth: MB/s of the repetitions; rate: operations per second).
const (
	KindLatency   = "latency"
	KindBandwidth = "bandwidth"
	KindRate      = "rate"
)

// Document is the --json output.
type Document struct {
	Program    string   `json:"program"`
	Transport  string   `json:"transport"`
	Time       string   `json:"time"`
	Go         string   `json:"go"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	NumCPU     int      `json:"num_cpu"`
	Options    *Options `json:"options"`
	Seconds    float64  `json:"seconds"`
	Results    []Result `json:"results"`
}

func newDocument(o *Options) *Document {
	return &Document{Program: "sockbench", Transport: o.Transport, Time: time.Now().UTC().Format(time.RFC3339),
		Go: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), Options: o}
}

// write writes d to file, or to stdout when file is "-".
func (d *Document) write(file string, stdout io.Writer) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if file == "-" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// writeText prints r as an OSU-style table: a "# " title line, a "# " column line, and
// a row per size whose first column is the size in bytes.
func (r Result) writeText(w io.Writer) {
	fmt.Fprintf(w, "# %s over %s: %s\n", r.Name, r.Transport, r.Title)
	switch r.Kind {
	case KindLatency:
		fmt.Fprintf(w, "# %-10s %12s %12s %12s %12s %12s\n", "Size", "Median(us)", "P5(us)", "P95(us)", "P99(us)", "Iterations")
		for _, x := range r.Rows {
			fmt.Fprintf(w, "%-12d %12.3f %12.3f %12.3f %12.3f %12d\n", x.Bytes, x.MedianUS, x.P5US, x.P95US, x.P99US, x.Iterations)
		}
	case KindBandwidth:
		fmt.Fprintf(w, "# %-10s %12s %12s %12s %12s\n", "Size", "MB/s", "Min(MB/s)", "Max(MB/s)", "Reps")
		for _, x := range r.Rows {
			lo, hi := spread(x.RepsMBps)
			fmt.Fprintf(w, "%-12d %12.1f %12.1f %12.1f %12d\n", x.Bytes, x.MBps, lo, hi, len(x.RepsMBps))
		}
	case KindRate:
		fmt.Fprintf(w, "# %-10s %12s %12s\n", "Size", "Per(s)", "Count")
		for _, x := range r.Rows {
			fmt.Fprintf(w, "%-12d %12.1f %12d\n", x.Bytes, x.PerS, x.Count)
		}
	}
	fmt.Fprintln(w)
}

func spread(v []float64) (lo, hi float64) {
	for i, x := range v {
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}
