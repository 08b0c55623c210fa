package prof

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The line kinds of Open MPI 4.1's monitoring file (design.md has their sources).
const (
	External = 'E' // point-to-point messages with a tag >= 0 (all messages under pml_monitoring_enable 1)
	Internal = 'I' // point-to-point messages with a negative tag (collectives' and the library's own)
	OSCSent  = 'S' // one-sided data this rank sent to a peer
	OSCRecv  = 'R' // one-sided data this rank received from a peer
	CollData = 'C' // collectives' data per peer, one message per call
)

// MaxLine bounds a line of a .prof file that ParseOMPI accepts.
const MaxLine = 1 << 16

// Line is one peer line of a .prof file: From sent Bytes in Msgs messages to To.
// Hist is the peer's size histogram (HistBins values) where the line carries one.
type Line struct {
	Kind     byte
	From, To int
	Bytes    uint64
	Msgs     uint64
	Hist     []uint64
}

// Flow is one of a communicator's O2A, A2O and A2A lines: Rank's bytes and
// messages in one-to-all, all-to-one and all-to-all collectives.
type Flow struct {
	Rank  int
	Bytes uint64
	Msgs  uint64
}

// Comm is a communicator's D line and the three flow lines after it.
type Comm struct {
	Name          string // as Open MPI names it, e.g. "MPI_COMM_WORLD"
	Procs         []int  // its members' ranks in MPI_COMM_WORLD
	O2A, A2O, A2A Flow
}

// File is one rank's .prof file.
type File struct {
	Lines []Line
	Comms []Comm
}

// OMPI returns r as Open MPI's monitoring file: an E line with the size
// histogram per peer that got point-to-point messages, S lines from Put, R lines
// from Get and C lines from Coll. It writes no I and no D lines (see design.md).
func (r *Rank) OMPI() *File {
	f := &File{}
	add := func(kind byte, row *Row, hist bool) {
		for p, m := range row.Msgs {
			if m == 0 {
				continue
			}
			l := Line{Kind: kind, From: r.Rank, To: p, Bytes: row.Bytes[p], Msgs: m}
			if hist {
				l.Hist = make([]uint64, HistBins)
				if r.Hist != nil && r.Hist[p] != nil {
					copy(l.Hist, r.Hist[p])
				}
			}
			f.Lines = append(f.Lines, l)
		}
	}
	add(External, &r.P2P, true)
	for p := range r.Size {
		if r.Put.Msgs[p] != 0 {
			f.Lines = append(f.Lines, Line{Kind: OSCSent, From: r.Rank, To: p, Bytes: r.Put.Bytes[p], Msgs: r.Put.Msgs[p]})
		}
		if r.Get.Msgs[p] != 0 {
			f.Lines = append(f.Lines, Line{Kind: OSCRecv, From: r.Rank, To: p, Bytes: r.Get.Bytes[p], Msgs: r.Get.Msgs[p]})
		}
	}
	add(CollData, &r.Coll, false)
	return f
}

// WriteOMPI writes the counts so far as Open MPI's .prof file of this rank.
func (c *Counters) WriteOMPI(w io.Writer) error {
	_, err := w.Write(c.Snapshot().OMPI().Append(nil))
	return err
}

// Append appends f's text to b in Open MPI's layout: the section headers, then E
// and I lines, S and R lines, C lines and the communicators, each group in the
// order of f. An I line carries the histogram when it has one.
func (f *File) Append(b []byte) []byte {
	b = append(b, "# POINT TO POINT\n"...)
	b = f.appendLines(b, External, Internal)
	b = append(b, "# OSC\n"...)
	b = f.appendLines(b, OSCSent, OSCRecv)
	b = append(b, "# COLLECTIVES\n"...)
	b = f.appendLines(b, CollData, CollData)
	for _, c := range f.Comms {
		b = append(b, "D\t"...)
		b = append(b, c.Name...)
		b = append(b, "\tprocs: "...)
		for i, p := range c.Procs {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(p), 10)
		}
		b = append(b, '\n')
		b = appendFlow(b, "O2A", c.O2A)
		b = appendFlow(b, "A2O", c.A2O)
		b = appendFlow(b, "A2A", c.A2A)
	}
	return b
}

func (f *File) appendLines(b []byte, k1, k2 byte) []byte {
	for _, l := range f.Lines {
		if l.Kind != k1 && l.Kind != k2 {
			continue
		}
		b = append(b, l.Kind, '\t')
		b = strconv.AppendInt(b, int64(l.From), 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, int64(l.To), 10)
		b = appendCounts(b, l.Bytes, l.Msgs)
		if l.Hist != nil {
			for i, v := range l.Hist {
				if i == 0 {
					b = append(b, '\t')
				} else {
					b = append(b, ',')
				}
				b = strconv.AppendUint(b, v, 10)
			}
		}
		b = append(b, '\n')
	}
	return b
}

func appendCounts(b []byte, bytes, msgs uint64) []byte {
	b = append(b, '\t')
	b = strconv.AppendUint(b, bytes, 10)
	b = append(b, " bytes\t"...)
	b = strconv.AppendUint(b, msgs, 10)
	return append(b, " msgs sent"...)
}

func appendFlow(b []byte, name string, fl Flow) []byte {
	b = append(b, name...)
	b = append(b, '\t')
	b = strconv.AppendInt(b, int64(fl.Rank), 10)
	b = appendCounts(b, fl.Bytes, fl.Msgs)
	return append(b, '\n')
}

// ParseOMPI reads one rank's .prof file as Open MPI 4.1 writes it (or several
// concatenated, as profile2mat takes them). Lines starting with '#' and empty
// lines are skipped. Ranks must be below MaxRanks, a histogram must have HistBins
// values, a communicator name must not be empty, and O2A, A2O and A2A lines
// must follow a D line, each at most once per D line.
func ParseOMPI(rd io.Reader) (*File, error) {
	f := &File{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	var flows [3]bool
	for n := 1; sc.Scan(); n++ {
		s := sc.Text()
		if s == "" || s[0] == '#' {
			continue
		}
		kind, rest, _ := strings.Cut(s, "\t")
		var err error
		switch kind {
		case "E", "I", "S", "R", "C":
			var l Line
			l, err = parseLine(kind[0], rest)
			f.Lines = append(f.Lines, l)
		case "D":
			var c Comm
			c, err = parseComm(rest)
			f.Comms = append(f.Comms, c)
			flows = [3]bool{}
		case "O2A", "A2O", "A2A":
			i := strings.Index("O2AA2OA2A", kind) / 3
			if len(f.Comms) == 0 || flows[i] {
				err = fmt.Errorf("%s line not after one D line", kind)
				break
			}
			flows[i] = true
			c := &f.Comms[len(f.Comms)-1]
			dst := [3]*Flow{&c.O2A, &c.A2O, &c.A2A}[i]
			*dst, err = parseFlow(rest)
		default:
			err = fmt.Errorf("unknown line kind %q", kind)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return f, nil
}

// parseLine parses "FROM\tTO\tB bytes\tM msgs sent[\tH0,...,H65]".
func parseLine(kind byte, s string) (Line, error) {
	l := Line{Kind: kind}
	fs := strings.Split(s, "\t")
	if len(fs) != 4 && len(fs) != 5 {
		return l, fmt.Errorf("%c line has %d fields", kind, len(fs)+1)
	}
	var err error
	if l.From, err = parseRank(fs[0]); err != nil {
		return l, err
	}
	if l.To, err = parseRank(fs[1]); err != nil {
		return l, err
	}
	if l.Bytes, l.Msgs, err = parseCounts(fs[2], fs[3]); err != nil {
		return l, err
	}
	if len(fs) == 5 {
		hs := strings.Split(fs[4], ",")
		if len(hs) != HistBins {
			return l, fmt.Errorf("histogram has %d bins, not %d", len(hs), HistBins)
		}
		l.Hist = make([]uint64, HistBins)
		for i, h := range hs {
			if l.Hist[i], err = parseUint(h); err != nil {
				return l, err
			}
		}
	}
	return l, nil
}

func parseComm(s string) (Comm, error) {
	name, procs, ok := strings.Cut(s, "\tprocs: ")
	if !ok || name == "" || strings.Contains(name, "\t") {
		return Comm{}, fmt.Errorf("communicator line %q", s)
	}
	c := Comm{Name: name, Procs: []int{}}
	if procs == "" {
		return c, nil
	}
	for p := range strings.SplitSeq(procs, ",") {
		r, err := parseRank(p)
		if err != nil {
			return c, err
		}
		c.Procs = append(c.Procs, r)
	}
	return c, nil
}

func parseFlow(s string) (Flow, error) {
	var fl Flow
	fs := strings.Split(s, "\t")
	if len(fs) != 3 {
		return fl, fmt.Errorf("flow line has %d fields", len(fs)+1)
	}
	var err error
	if fl.Rank, err = parseRank(fs[0]); err != nil {
		return fl, err
	}
	fl.Bytes, fl.Msgs, err = parseCounts(fs[1], fs[2])
	return fl, err
}

func parseCounts(bytes, msgs string) (uint64, uint64, error) {
	b, ok1 := strings.CutSuffix(bytes, " bytes")
	m, ok2 := strings.CutSuffix(msgs, " msgs sent")
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("counts %q %q", bytes, msgs)
	}
	nb, err := parseUint(b)
	if err != nil {
		return 0, 0, err
	}
	nm, err := parseUint(m)
	return nb, nm, err
}

// parseUint takes decimal digits only: no sign, no leading zero but "0".
func parseUint(s string) (uint64, error) {
	if s == "" || (s[0] == '0' && len(s) > 1) || s[0] == '+' {
		return 0, fmt.Errorf("number %q", s)
	}
	return strconv.ParseUint(s, 10, 64)
}

func parseRank(s string) (int, error) {
	v, err := parseUint(s)
	if err != nil || v >= MaxRanks {
		return 0, fmt.Errorf("rank %q", s)
	}
	return int(v), nil
}

// Rank returns the traffic of rank rank of a job of size ranks in f: E lines as
// P2P (with their histograms), C as Coll, S as Put, R as Get. I lines and lines
// of other ranks are left out. Two lines of one kind and peer add up.
func (f *File) Rank(rank, size int) (*Rank, error) {
	if size <= 0 || size > MaxRanks || rank < 0 || rank >= size {
		return nil, fmt.Errorf("%w: rank %d of size %d", ErrFormat, rank, size)
	}
	r := &Rank{Rank: rank, Size: size, Calls: []CallStat{}}
	for t := range NumTraffic {
		*r.Row(t) = Row{Bytes: make([]uint64, size), Msgs: make([]uint64, size)}
	}
	for _, l := range f.Lines {
		var row *Row
		switch l.Kind {
		case External:
			row = &r.P2P
		case CollData:
			row = &r.Coll
		case OSCSent:
			row = &r.Put
		case OSCRecv:
			row = &r.Get
		default:
			continue
		}
		if l.From != rank {
			continue
		}
		if l.To >= size {
			return nil, fmt.Errorf("%w: peer %d of a job of %d ranks", ErrFormat, l.To, size)
		}
		row.Bytes[l.To] += l.Bytes
		row.Msgs[l.To] += l.Msgs
		if l.Kind == External && l.Hist != nil {
			if r.Hist == nil {
				r.Hist = make([][]uint64, size)
			}
			if r.Hist[l.To] == nil {
				r.Hist[l.To] = make([]uint64, HistBins)
			}
			for i, v := range l.Hist {
				r.Hist[l.To][i] += v
			}
		}
	}
	return r, nil
}

// Profile2matText returns the text Debian's profile2mat writes for the directed matrix
// m (m[from][to]): the symmetric (m + mᵀ)/2, each cell as "%.0f " (ties to even), a
// newline per row. The tests that run profile2mat compare its files with it.
func Profile2matText(m [][]uint64) string {
	var b strings.Builder
	for i := range m {
		for j := range m {
			b.WriteString(strconv.FormatFloat(float64(m[i][j]+m[j][i])/2, 'f', 0, 64))
			b.WriteByte(' ')
		}
		b.WriteByte('\n')
	}
	return b.String()
}
