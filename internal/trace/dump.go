package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
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
}

// Dropped returns how many recorded events the dump lacks: overwritten or lost.
func (d Dump) Dropped() uint64 { return d.Total - uint64(len(d.Events)) }

// Bounds of the dump format, which DecodeDump enforces.
const (
	MaxRank     = 1<<24 - 1 // highest rank
	MaxLabelLen = 1024      // bytes of one label
	MaxEvents   = 1 << 24   // events of one dump
)

// ErrFormat is wrapped by every error of DecodeDump.
var ErrFormat = errors.New("trace: bad dump")

var magic = [4]byte{'G', 'T', 'R', 'C'}

// Version is the dump format's version, written after its magic.
const Version = 1

const (
	headerLen = 4 + 2 + 2 + 4 + 4 + 8 + 8 + 8 + 4
	eventLen  = 8 + 8 + 8 + 8 + 8 + 4 + 4 + 2 + 1 + 1
)

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
	for _, l := range d.Labels {
		b = le.AppendUint16(b, uint16(len(l)))
		b = append(b, l...)
	}
	for i, e := range d.Events {
		b = le.AppendUint64(b, d.Seqs[i])
		b = le.AppendUint64(b, uint64(e.Start))
		b = le.AppendUint64(b, uint64(e.End))
		b = le.AppendUint64(b, uint64(e.Bytes))
		b = le.AppendUint64(b, e.Flow)
		b = le.AppendUint32(b, uint32(e.Peer))
		b = le.AppendUint32(b, uint32(e.Tag))
		b = le.AppendUint16(b, e.Label)
		b = append(b, byte(e.Kind), 0)
	}
	return b
}

// check returns the first reason DecodeDump would reject d's form.
func (d Dump) check() error {
	switch {
	case d.Rank < 0 || d.Rank > MaxRank:
		return fmt.Errorf("%w: rank %d", ErrFormat, d.Rank)
	case len(d.Labels) > MaxLabels:
		return fmt.Errorf("%w: %d labels", ErrFormat, len(d.Labels))
	case len(d.Events) > MaxEvents:
		return fmt.Errorf("%w: %d events", ErrFormat, len(d.Events))
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

// DecodeDump parses the binary form AppendDump writes. Every error wraps ErrFormat. It
// allocates no more than b's length justifies, so any input is safe to give it.
func DecodeDump(b []byte) (Dump, error) {
	if len(b) < headerLen || [4]byte(b[:4]) != magic {
		return Dump{}, fmt.Errorf("%w: no header", ErrFormat)
	}
	if v := le.Uint16(b[4:]); v != Version || le.Uint16(b[6:]) != 0 {
		return Dump{}, fmt.Errorf("%w: version %d", ErrFormat, v)
	}
	rank, nlabels := le.Uint32(b[8:]), le.Uint32(b[12:])
	d := Dump{Total: le.Uint64(b[16:]), Lost: le.Uint64(b[24:]), Origin: int64(le.Uint64(b[32:]))}
	nevents := le.Uint32(b[40:])
	if rank > MaxRank || nlabels > MaxLabels || nevents > MaxEvents {
		return Dump{}, fmt.Errorf("%w: rank %d, %d labels, %d events", ErrFormat, rank, nlabels, nevents)
	}
	d.Rank = int(rank)
	b = b[headerLen:]
	if uint64(nlabels)*2 > uint64(len(b)) {
		return Dump{}, fmt.Errorf("%w: %d labels in %d bytes", ErrFormat, nlabels, len(b))
	}
	d.Labels = make([]string, nlabels)
	for i := range d.Labels {
		if len(b) < 2 || int(le.Uint16(b)) > len(b)-2 {
			return Dump{}, fmt.Errorf("%w: label %d cut short", ErrFormat, i)
		}
		n := int(le.Uint16(b))
		d.Labels[i], b = string(b[2:2+n]), b[2+n:]
	}
	if uint64(len(b)) != uint64(nevents)*eventLen {
		return Dump{}, fmt.Errorf("%w: %d bytes for %d events", ErrFormat, len(b), nevents)
	}
	d.Events = make([]Event, nevents)
	d.Seqs = make([]uint64, nevents)
	for i := range d.Events {
		p := b[i*eventLen:]
		if p[eventLen-1] != 0 {
			return Dump{}, fmt.Errorf("%w: event %d: padding %d", ErrFormat, i, p[eventLen-1])
		}
		d.Seqs[i] = le.Uint64(p)
		d.Events[i] = Event{Start: int64(le.Uint64(p[8:])), End: int64(le.Uint64(p[16:])),
			Bytes: int64(le.Uint64(p[24:])), Flow: le.Uint64(p[32:]), Peer: int32(le.Uint32(p[40:])),
			Tag: int32(le.Uint32(p[44:])), Label: le.Uint16(p[48:]), Kind: Kind(p[50])}
	}
	if err := d.check(); err != nil {
		return Dump{}, err
	}
	return d, nil
}
