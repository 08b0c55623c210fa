package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Dump is what a Recorder holds at one moment: the form a rank writes to its file and
// Merge reads.
type Dump struct {
	Rank   int      // world rank
	Origin int64    // wall clock (Unix nanoseconds) at the recorder's time zero
	Total  uint64   // events recorded since the recorder was made
	Lost   uint64   // events Record could not store (a slot held by another goroutine)
	Labels []string // the label table Event.Label indexes
	Events []Event  // the events the ring held, oldest first
	Seqs   []uint64 // Seqs[i] is Events[i]'s index among all recorded events, ascending
	Open   []Event  // calls under way when the dump was taken: each ends then (End), not returned
}

// Dropped returns how many recorded events the dump lacks: overwritten or lost.
func (d Dump) Dropped() uint64 { return d.Total - uint64(len(d.Events)) }

// Bounds of the dump format, which DecodeDump enforces.
const (
	MaxRank     = 1<<24 - 1 // highest rank
	MaxLabelLen = 1024      // bytes of one label
	MaxEvents   = 1 << 24   // events of one dump
	MaxOpen     = 1 << 16   // open calls of one dump
)

// ErrFormat is wrapped by every error of DecodeDump.
var ErrFormat = errors.New("trace: bad dump")

var magic = [4]byte{'G', 'T', 'R', 'C'}

// Version is the dump format's version, written after its magic.
const Version = 2

// HeaderLen is the length of a dump's header, all that DecodeHeader reads.
const HeaderLen = 4 + 2 + 2 + 4 + 4 + 8 + 8 + 8 + 4 + 4 + 8

const eventLen = 8 + 8 + 8 + 8 + 8 + 4 + 4 + 2 + 1 + 1

var le = binary.LittleEndian

// AppendDump appends d's binary form to b (design.md, "Dump format"). It returns an error,
// and b unchanged, for a dump DecodeDump would reject.
func AppendDump(b []byte, d Dump) ([]byte, error) {
	if err := d.check(); err != nil {
		return b, err
	}
	return encode(b, d), nil
}

// encode appends d's binary form to b without checking d.
func encode(b []byte, d Dump) []byte {
	b = append(b, magic[:]...)
	b = le.AppendUint16(b, Version)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint32(b, uint32(d.Rank))
	b = le.AppendUint32(b, uint32(len(d.Labels)))
	b = le.AppendUint64(b, d.Total)
	b = le.AppendUint64(b, d.Lost)
	b = le.AppendUint64(b, uint64(d.Origin))
	b = le.AppendUint32(b, uint32(len(d.Events)))
	b = le.AppendUint32(b, uint32(len(d.Open)))
	b = le.AppendUint64(b, uint64(d.first()))
	for _, l := range d.Labels {
		b = le.AppendUint16(b, uint16(len(l)))
		b = append(b, l...)
	}
	for i, e := range d.Events {
		b = appendEvent(b, d.Seqs[i], e)
	}
	for _, e := range d.Open {
		b = appendEvent(b, 0, e)
	}
	return b
}

// appendEvent appends the record of e, whose index among all recorded is seq.
func appendEvent(b []byte, seq uint64, e Event) []byte {
	b = le.AppendUint64(b, seq)
	b = le.AppendUint64(b, uint64(e.Start))
	b = le.AppendUint64(b, uint64(e.End))
	b = le.AppendUint64(b, uint64(e.Bytes))
	b = le.AppendUint64(b, e.Flow)
	b = le.AppendUint32(b, uint32(e.Peer))
	b = le.AppendUint32(b, uint32(e.Tag))
	b = le.AppendUint16(b, e.Label)
	return append(b, byte(e.Kind), 0)
}

// first returns the earliest start of d's events and open calls, 0 when it has none.
func (d Dump) first() int64 {
	if len(d.Events) == 0 && len(d.Open) == 0 {
		return 0
	}
	m := int64(math.MaxInt64)
	for _, e := range d.Events {
		m = min(m, e.Start)
	}
	for _, e := range d.Open {
		m = min(m, e.Start)
	}
	return m
}

// check returns the first reason DecodeDump would reject d's form.
func (d Dump) check() error {
	switch {
	case d.Rank < 0 || d.Rank > MaxRank:
		return fmt.Errorf("%w: rank %d", ErrFormat, d.Rank)
	case len(d.Labels) > MaxLabels:
		return fmt.Errorf("%w: %d labels", ErrFormat, len(d.Labels))
	case len(d.Events) > MaxEvents || len(d.Open) > MaxOpen:
		return fmt.Errorf("%w: %d events, %d open", ErrFormat, len(d.Events), len(d.Open))
	case len(d.Seqs) != len(d.Events):
		return fmt.Errorf("%w: %d seqs for %d events", ErrFormat, len(d.Seqs), len(d.Events))
	case d.Lost > d.Total || uint64(len(d.Events)) > d.Total-d.Lost:
		return fmt.Errorf("%w: %d events and %d lost of %d", ErrFormat, len(d.Events), d.Lost, d.Total)
	}
	for _, l := range d.Labels {
		if len(l) > MaxLabelLen {
			return fmt.Errorf("%w: label of %d bytes", ErrFormat, len(l))
		}
	}
	for i, e := range d.Events {
		if err := checkEvent(e, len(d.Labels)); err != nil {
			return fmt.Errorf("%w: event %d: %v", ErrFormat, i, err)
		}
		if d.Seqs[i] >= d.Total || i > 0 && d.Seqs[i] <= d.Seqs[i-1] {
			return fmt.Errorf("%w: event %d: index %d out of order or beyond %d", ErrFormat, i, d.Seqs[i], d.Total)
		}
	}
	for i, e := range d.Open {
		if err := checkEvent(e, len(d.Labels)); err != nil {
			return fmt.Errorf("%w: open call %d: %v", ErrFormat, i, err)
		}
	}
	return nil
}

// checkEvent returns why e cannot be in a dump with labels labels.
func checkEvent(e Event, labels int) error {
	switch {
	case e.Kind == 0:
		return errors.New("kind 0")
	case e.End < e.Start:
		return fmt.Errorf("ends at %d before its start %d", e.End, e.Start)
	case int(e.Label) >= labels:
		return fmt.Errorf("label %d of %d", e.Label, labels)
	}
	return nil
}

// Header is what a dump's first HeaderLen bytes say.
type Header struct {
	Rank         int
	Origin       int64 // Dump.Origin
	Total, Lost  uint64
	Labels       int
	Events, Open int   // len(Dump.Events), len(Dump.Open)
	First        int64 // the earliest start of the events and open calls, 0 when there is none
}

// DecodeHeader parses the header of a dump: its first HeaderLen bytes, or more. It checks
// the header's own fields only; DecodeDump checks the rest.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen || [4]byte(b[:4]) != magic {
		return Header{}, fmt.Errorf("%w: no header", ErrFormat)
	}
	if v := le.Uint16(b[4:]); v != Version || le.Uint16(b[6:]) != 0 {
		return Header{}, fmt.Errorf("%w: version %d", ErrFormat, v)
	}
	rank, nlabels, nevents, nopen := le.Uint32(b[8:]), le.Uint32(b[12:]), le.Uint32(b[40:]), le.Uint32(b[44:])
	if rank > MaxRank || nlabels > MaxLabels || nevents > MaxEvents || nopen > MaxOpen {
		return Header{}, fmt.Errorf("%w: rank %d, %d labels, %d events, %d open", ErrFormat, rank, nlabels, nevents, nopen)
	}
	return Header{Rank: int(rank), Total: le.Uint64(b[16:]), Lost: le.Uint64(b[24:]), Origin: int64(le.Uint64(b[32:])),
		Labels: int(nlabels), Events: int(nevents), Open: int(nopen), First: int64(le.Uint64(b[48:]))}, nil
}

// DecodeDump parses the binary form AppendDump writes. Every error wraps ErrFormat. It
// allocates no more than b's length justifies, so any input is safe to give it.
func DecodeDump(b []byte) (Dump, error) {
	h, err := DecodeHeader(b)
	if err != nil {
		return Dump{}, err
	}
	d := Dump{Rank: h.Rank, Origin: h.Origin, Total: h.Total, Lost: h.Lost}
	b = b[HeaderLen:]
	if uint64(h.Labels)*2 > uint64(len(b)) {
		return Dump{}, fmt.Errorf("%w: %d labels in %d bytes", ErrFormat, h.Labels, len(b))
	}
	d.Labels = make([]string, h.Labels)
	for i := range d.Labels {
		if len(b) < 2 || int(le.Uint16(b)) > len(b)-2 {
			return Dump{}, fmt.Errorf("%w: label %d cut short", ErrFormat, i)
		}
		n := int(le.Uint16(b))
		d.Labels[i], b = string(b[2:2+n]), b[2+n:]
	}
	if uint64(len(b)) != uint64(h.Events+h.Open)*eventLen {
		return Dump{}, fmt.Errorf("%w: %d bytes for %d events and %d open", ErrFormat, len(b), h.Events, h.Open)
	}
	d.Events = make([]Event, h.Events)
	d.Seqs = make([]uint64, h.Events)
	for i := range d.Events {
		if d.Seqs[i], d.Events[i], err = decodeEvent(b[i*eventLen:]); err != nil {
			return Dump{}, fmt.Errorf("%w: event %d: %v", ErrFormat, i, err)
		}
	}
	if h.Open > 0 {
		d.Open = make([]Event, h.Open)
	}
	for i := range d.Open {
		seq, e, err := decodeEvent(b[(h.Events+i)*eventLen:])
		if err == nil && seq != 0 {
			err = fmt.Errorf("index %d", seq)
		}
		if err != nil {
			return Dump{}, fmt.Errorf("%w: open call %d: %v", ErrFormat, i, err)
		}
		d.Open[i] = e
	}
	if err := d.check(); err != nil {
		return Dump{}, err
	}
	if f := d.first(); f != h.First {
		return Dump{}, fmt.Errorf("%w: first start %d, the header says %d", ErrFormat, f, h.First)
	}
	return d, nil
}

// decodeEvent parses one event's record.
func decodeEvent(p []byte) (uint64, Event, error) {
	if p[eventLen-1] != 0 {
		return 0, Event{}, fmt.Errorf("padding %d", p[eventLen-1])
	}
	return le.Uint64(p), Event{Start: int64(le.Uint64(p[8:])), End: int64(le.Uint64(p[16:])),
		Bytes: int64(le.Uint64(p[24:])), Flow: le.Uint64(p[32:]), Peer: int32(le.Uint32(p[40:])),
		Tag: int32(le.Uint32(p[44:])), Label: le.Uint16(p[48:]), Kind: Kind(p[50])}, nil
}
