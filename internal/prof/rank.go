package prof

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxRanks bounds the size of a job that the readers accept.
const MaxRanks = 1 << 16

// ErrFormat is wrapped by every error of the readers and of Merge about their input.
var ErrFormat = errors.New("prof: malformed profile")

// Row is one rank's traffic of one kind: Bytes[p] and Msgs[p] were sent to peer p.
type Row struct {
	Bytes []uint64 `json:"bytes"`
	Msgs  []uint64 `json:"msgs"`
}

// CallStat is one call kind's total on one rank.
type CallStat struct {
	Kind  string `json:"kind"`  // CallKind.String
	Calls uint64 `json:"calls"` // number of calls
	Bytes uint64 `json:"bytes"` // bytes the calls moved, as their callers counted them
	Nanos int64  `json:"nanos"` // time inside the calls
}

// Rank is one rank's profile as data: what Counters.Snapshot returns, what a rank
// writes as JSON for the launcher, and what Merge takes.
type Rank struct {
	Rank int `json:"rank"`
	Size int `json:"size"`
	P2P  Row `json:"p2p"`
	Coll Row `json:"coll"`
	Put  Row `json:"put"`
	Get  Row `json:"get"`
	// Hist[p] is the size histogram (HistBins bins) of the point-to-point messages
	// to peer p, nil where none was sent; Hist is nil when no peer has one.
	Hist  [][]uint64 `json:"p2p_hist,omitempty"`
	Calls []CallStat `json:"calls"` // the kinds with at least one call, in CallKind order
}

// Call returns the totals of call kind k, zero when the rank made no such call.
func (r *Rank) Call(k CallKind) CallStat {
	for _, s := range r.Calls {
		if s.Kind == k.String() {
			return s
		}
	}
	return CallStat{Kind: k.String()}
}

// Row returns the row of traffic kind t.
func (r *Rank) Row(t Traffic) *Row {
	switch t {
	case P2P:
		return &r.P2P
	case Coll:
		return &r.Coll
	case Put:
		return &r.Put
	case Get:
		return &r.Get
	}
	panic("prof: traffic kind out of range")
}

// Snapshot returns the counts so far. Counts that other goroutines add while it
// runs may or may not be in it. It allocates and is meant for the end of a job.
func (c *Counters) Snapshot() *Rank {
	r := &Rank{Rank: c.rank, Size: c.size, Calls: []CallStat{}}
	for t := range NumTraffic {
		row := r.Row(t)
		row.Bytes = make([]uint64, c.size)
		row.Msgs = make([]uint64, c.size)
		for p := range c.links[t] {
			row.Bytes[p] = c.links[t][p].bytes.Load()
			row.Msgs[p] = c.links[t][p].msgs.Load()
		}
	}
	for p := range c.size {
		var h []uint64
		for b := range HistBins {
			if v := c.hist[p*HistBins+b].Load(); v != 0 {
				if h == nil {
					h = make([]uint64, HistBins)
				}
				h[b] = v
			}
		}
		if h != nil {
			if r.Hist == nil {
				r.Hist = make([][]uint64, c.size)
			}
			r.Hist[p] = h
		}
	}
	for k := range NumCalls {
		s := &c.calls[k]
		if n := s.calls.Load(); n != 0 {
			r.Calls = append(r.Calls, CallStat{Kind: k.String(), Calls: n,
				Bytes: s.bytes.Load(), Nanos: s.nanos.Load()})
		}
	}
	return r
}

// Validate reports whether r is well formed: a rank in [0, Size), Size at most
// MaxRanks, rows and histograms of the right lengths, known call kinds each once,
// no negative time.
func (r *Rank) Validate() error {
	if r.Size <= 0 || r.Size > MaxRanks || r.Rank < 0 || r.Rank >= r.Size {
		return fmt.Errorf("%w: rank %d of size %d", ErrFormat, r.Rank, r.Size)
	}
	for t := range NumTraffic {
		row := r.Row(t)
		if len(row.Bytes) != r.Size || len(row.Msgs) != r.Size {
			return fmt.Errorf("%w: rank %d: %s row is not %d long", ErrFormat, r.Rank, t, r.Size)
		}
	}
	if r.Hist != nil && len(r.Hist) != r.Size {
		return fmt.Errorf("%w: rank %d: histogram has %d peers, not %d", ErrFormat, r.Rank, len(r.Hist), r.Size)
	}
	for p, h := range r.Hist {
		if h != nil && len(h) != HistBins {
			return fmt.Errorf("%w: rank %d: histogram of peer %d has %d bins", ErrFormat, r.Rank, p, len(h))
		}
	}
	var seen [NumCalls]bool
	for _, s := range r.Calls {
		k, ok := ParseCallKind(s.Kind)
		if !ok || seen[k] || s.Nanos < 0 {
			return fmt.Errorf("%w: rank %d: call stat %q", ErrFormat, r.Rank, s.Kind)
		}
		seen[k] = true
	}
	return nil
}

// ReadRank decodes one rank's JSON document and validates it.
func ReadRank(rd io.Reader) (*Rank, error) {
	var r Rank
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// WriteJSON writes r as one JSON document.
func (r *Rank) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}
