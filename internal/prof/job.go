package prof

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// JobFormat is the value of Job.Format; it changes when a field changes meaning.
const JobFormat = "gorma-prof/1"

// Matrix is one traffic kind over a job: Bytes[i][j] and Msgs[i][j] were sent by
// rank i to rank j.
type Matrix struct {
	Bytes [][]uint64 `json:"bytes"`
	Msgs  [][]uint64 `json:"msgs"`
}

// KindStat is one call kind over a job, per rank: Calls[r], Bytes[r], Nanos[r].
type KindStat struct {
	Kind  string   `json:"kind"`
	Calls []uint64 `json:"calls"`
	Bytes []uint64 `json:"bytes"`
	Nanos []int64  `json:"nanos"`
}

// Job is the profile of a whole job: the JSON document the launcher writes.
type Job struct {
	Format  string     `json:"format"`            // JobFormat
	Size    int        `json:"size"`              // ranks of the job
	Missing []int      `json:"missing,omitempty"` // ranks whose profile did not arrive; their rows are zero
	Failed  []int      `json:"failed,omitempty"`  // the ranks of Missing that failed before Finalize (golaunch --ft)
	P2P     Matrix     `json:"p2p"`
	Coll    Matrix     `json:"coll"`
	Put     Matrix     `json:"put"`
	Get     Matrix     `json:"get"`
	Calls   []KindStat `json:"calls"` // the kinds some rank called, in CallKind order
}

// Matrix returns the matrix of traffic kind t.
func (j *Job) Matrix(t Traffic) *Matrix {
	switch t {
	case P2P:
		return &j.P2P
	case Coll:
		return &j.Coll
	case Put:
		return &j.Put
	case Get:
		return &j.Get
	}
	panic("prof: traffic kind out of range")
}

// Bytes returns the bytes rank i sent to rank j by all traffic kinds together.
func (j *Job) Bytes() [][]uint64 {
	m := square(j.Size)
	for t := range NumTraffic {
		for i, row := range j.Matrix(t).Bytes {
			for k, v := range row {
				m[i][k] += v
			}
		}
	}
	return m
}

func square(n int) [][]uint64 {
	m := make([][]uint64, n)
	cells := make([]uint64, n*n)
	for i := range m {
		m[i] = cells[i*n : (i+1)*n : (i+1)*n]
	}
	return m
}

// Merge builds the job's document from its ranks' profiles. Every profile must be
// valid and of the same Size, and no rank may come twice; ranks that are absent
// are listed in Missing.
func Merge(ranks []*Rank) (*Job, error) {
	if len(ranks) == 0 {
		return nil, fmt.Errorf("%w: no rank to merge", ErrFormat)
	}
	n := ranks[0].Size
	j := &Job{Format: JobFormat, Size: n, Calls: []KindStat{}}
	for _, r := range ranks {
		if err := r.Validate(); err != nil {
			return nil, err
		}
		if r.Size != n {
			return nil, fmt.Errorf("%w: rank %d has size %d, rank %d has %d", ErrFormat, r.Rank, r.Size, ranks[0].Rank, n)
		}
	}
	for t := range NumTraffic {
		*j.Matrix(t) = Matrix{Bytes: square(n), Msgs: square(n)}
	}
	var kinds [NumCalls]*KindStat
	seen := make([]bool, n)
	for _, r := range ranks {
		if seen[r.Rank] {
			return nil, fmt.Errorf("%w: rank %d comes twice", ErrFormat, r.Rank)
		}
		seen[r.Rank] = true
		for t := range NumTraffic {
			m, row := j.Matrix(t), r.Row(t)
			copy(m.Bytes[r.Rank], row.Bytes)
			copy(m.Msgs[r.Rank], row.Msgs)
		}
		for _, s := range r.Calls {
			k, _ := ParseCallKind(s.Kind)
			if kinds[k] == nil {
				kinds[k] = &KindStat{Kind: s.Kind, Calls: make([]uint64, n), Bytes: make([]uint64, n), Nanos: make([]int64, n)}
			}
			kinds[k].Calls[r.Rank] = s.Calls
			kinds[k].Bytes[r.Rank] = s.Bytes
			kinds[k].Nanos[r.Rank] = s.Nanos
		}
	}
	for r, ok := range seen {
		if !ok {
			j.Missing = append(j.Missing, r)
		}
	}
	for _, k := range kinds {
		if k != nil {
			j.Calls = append(j.Calls, *k)
		}
	}
	return j, nil
}

// SetFailed records that the ranks of failed failed before Finalize. Each must be one of
// Missing, once.
func (j *Job) SetFailed(failed []int) error {
	old := j.Failed
	j.Failed = append([]int(nil), failed...)
	if err := j.checkFailed(); err != nil {
		j.Failed = old
		return err
	}
	if len(j.Failed) == 0 {
		j.Failed = nil
	}
	return nil
}

// checkFailed reports whether every rank of Failed is one of Missing, once.
func (j *Job) checkFailed() error {
	seen := make(map[int]bool, len(j.Failed))
	for _, r := range j.Failed {
		if seen[r] || !slices.Contains(j.Missing, r) {
			return fmt.Errorf("%w: failed rank %d is not missing, or is named twice", ErrFormat, r)
		}
		seen[r] = true
	}
	return nil
}

// Validate reports whether j is well formed: the format, Size at most MaxRanks,
// square matrices and per-rank arrays of Size, known call kinds each once, no
// negative time, Missing ranks in range, Failed ranks among them.
func (j *Job) Validate() error {
	if j.Format != JobFormat {
		return fmt.Errorf("%w: format %q, want %q", ErrFormat, j.Format, JobFormat)
	}
	n := j.Size
	if n <= 0 || n > MaxRanks {
		return fmt.Errorf("%w: size %d", ErrFormat, n)
	}
	for t := range NumTraffic {
		m := j.Matrix(t)
		if !isSquare(m.Bytes, n) || !isSquare(m.Msgs, n) {
			return fmt.Errorf("%w: %s matrix is not %d x %d", ErrFormat, t, n, n)
		}
	}
	var seen [NumCalls]bool
	for _, s := range j.Calls {
		k, ok := ParseCallKind(s.Kind)
		if !ok || seen[k] || len(s.Calls) != n || len(s.Bytes) != n || len(s.Nanos) != n {
			return fmt.Errorf("%w: call stat %q", ErrFormat, s.Kind)
		}
		seen[k] = true
		for _, v := range s.Nanos {
			if v < 0 {
				return fmt.Errorf("%w: call stat %q: negative time", ErrFormat, s.Kind)
			}
		}
	}
	for _, r := range j.Missing {
		if r < 0 || r >= n {
			return fmt.Errorf("%w: missing rank %d", ErrFormat, r)
		}
	}
	return j.checkFailed()
}

func isSquare(m [][]uint64, n int) bool {
	if len(m) != n {
		return false
	}
	for _, row := range m {
		if len(row) != n {
			return false
		}
	}
	return true
}

// ReadJob decodes a job's JSON document and validates it.
func ReadJob(rd io.Reader) (*Job, error) {
	var j Job
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	return &j, nil
}

// WriteJSON writes j as one JSON document.
func (j *Job) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(j)
}
