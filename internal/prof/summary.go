package prof

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// KindSummary is one call kind over a job.
type KindSummary struct {
	Kind    string
	Calls   uint64        // calls of all ranks
	Bytes   uint64        // bytes of all ranks
	Time    time.Duration // time of all ranks
	Slowest int           // the rank with the most time in the kind (the lowest such rank)
	Max     time.Duration // that rank's time
	// Imbalance is the slowest rank's time over the mean time of the ranks that
	// reported (Missing ranks left out); 1 is perfect balance, 0 means no time.
	Imbalance float64
}

// Pair is the traffic between two ranks A < B, both ways, all kinds together.
type Pair struct {
	A, B  int
	Bytes uint64
	Msgs  uint64
}

// Kinds returns the summary of each call kind of j, in j.Calls order.
func (j *Job) Kinds() []KindSummary {
	missing := make([]bool, j.Size)
	for _, r := range j.Missing {
		missing[r] = true
	}
	present := j.Size - len(j.Missing)
	var out []KindSummary
	for _, k := range j.Calls {
		s := KindSummary{Kind: k.Kind}
		for r := range j.Size {
			s.Calls += k.Calls[r]
			s.Bytes += k.Bytes[r]
			if missing[r] {
				continue
			}
			d := time.Duration(k.Nanos[r])
			s.Time += d
			if d > s.Max {
				s.Max, s.Slowest = d, r
			}
		}
		if s.Time > 0 && present > 0 {
			s.Imbalance = float64(s.Max) * float64(present) / float64(s.Time)
		}
		out = append(out, s)
	}
	return out
}

// Pairs returns the n pairs of ranks with the most bytes between them, most
// first (ties by fewer messages, then by rank); pairs without traffic are left out.
func (j *Job) Pairs(n int) []Pair {
	var ps []Pair
	for a := range j.Size {
		for b := a + 1; b < j.Size; b++ {
			var p = Pair{A: a, B: b}
			for t := range NumTraffic {
				m := j.Matrix(t)
				p.Bytes += m.Bytes[a][b] + m.Bytes[b][a]
				p.Msgs += m.Msgs[a][b] + m.Msgs[b][a]
			}
			if p.Msgs != 0 || p.Bytes != 0 {
				ps = append(ps, p)
			}
		}
	}
	slices.SortFunc(ps, func(x, y Pair) int {
		return cmp.Or(cmp.Compare(y.Bytes, x.Bytes), cmp.Compare(x.Msgs, y.Msgs),
			cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B))
	})
	return ps[:min(n, len(ps))]
}

// WriteSummary writes the short text summary of j: a table of the call kinds
// (calls, bytes, time, slowest rank, imbalance) and the top heaviest rank pairs.
func (j *Job) WriteSummary(w io.Writer, top int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "call\tcalls\tbytes\ttime\tslowest rank\tits time\timbalance\t\n")
	for _, s := range j.Kinds() {
		imb := "-"
		if s.Imbalance > 0 {
			imb = fmt.Sprintf("%.2f", s.Imbalance)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\t\n", s.Kind, s.Calls, Size(s.Bytes),
			s.Time.Round(time.Microsecond), s.Slowest, s.Max.Round(time.Microsecond), imb)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(j.Failed) > 0 {
		fmt.Fprintf(w, "ranks that failed before Finalize (no profile): %v\n", j.Failed)
	}
	var other []int
	for _, r := range j.Missing {
		if !slices.Contains(j.Failed, r) {
			other = append(other, r)
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(w, "ranks without a profile: %v\n", other)
	}
	fmt.Fprintf(w, "\nheaviest rank pairs (both ways, all kinds)\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "ranks\tbytes\tmessages\t\n")
	for _, p := range j.Pairs(top) {
		fmt.Fprintf(tw, "%d <-> %d\t%s\t%d\t\n", p.A, p.B, Size(p.Bytes), p.Msgs)
	}
	return tw.Flush()
}

// Size formats n bytes with a binary unit: "512 B", "1.5 KiB", "3.0 GiB".
func Size(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}
