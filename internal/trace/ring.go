package trace

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"
)

// A ring file holds a Recorder's ring, its labels and its batches' events in a file that
// another process can read after the recorder's process ended, however it ended: a
// memfd that the launcher holds, mapped shared (MapRecorder). ReadRing reads it back.
// Layout (version 1, the writer's byte order, offsets in bytes):
//
//	0             header (ringHeaderLen), fields at the offsets h* below
//	ringHeaderLen labels: per label a 2-byte length and its bytes, ringLabelBytes in all
//	then          batches: ringBatches areas of a count (8) and BatchLen events
//	then          slots, from a page boundary: per slot its state (8) and its Event
//
// An Event's fields lie at the offsets ev* below; slot, batchArea and Event are laid out
// so (TestRingLayout).

const (
	ringVersion    = 1
	ringHeaderLen  = 4096
	ringLabelBytes = 256 << 10 // labels past it are left out of the file
	ringBatches    = 256       // batches past it hold their events on the heap
	batchAreaLen   = 8 + BatchLen*evLen
	slotLen        = 8 + evLen
	evLen          = 48
)

// Header fields.
const (
	hMagic      = 0  // "GRNG"
	hVersion    = 4  // uint16, then a zero uint16
	hRank       = 8  // uint32
	hSlots      = 12 // uint32: a power of two
	hLabelBytes = 16 // uint32: ringLabelBytes
	hBatches    = 20 // uint32: ringBatches
	hOriginWall = 24 // int64: the wall clock at the recorder's zero, Unix nanoseconds
	hOriginMono = 32 // int64: CLOCK_MONOTONIC at the recorder's zero, nanoseconds
	hCounter    = 40 // uint64: 1 when stamps are counter readings, 0 when nanoseconds
	hBase       = 48 // int64: the counter's reading at the recorder's zero
	hScale      = 56 // uint64: nanoseconds per count, float64 bits; Snapshot measures it again
	hLabels     = 64 // uint32: labels in the file, stored after their bytes
	hBoot       = 72 // 40 bytes: the kernel's boot_id, which says whether the reader shares the counter
	bootLen     = 40
)

// Event fields.
const (
	evStart = 0
	evEnd   = 8
	evBytes = 16
	evFlow  = 24
	evPeer  = 32
	evTag   = 36
	evLabel = 40
	evKind  = 42
)

var ringMagic = [4]byte{'G', 'R', 'N', 'G'}

// batchArea is where a Batch holds its events: n of them, in evs.
type batchArea struct {
	n   uint64
	evs [BatchLen]Event
}

// ringFile is the mapping of a Recorder's ring file.
type ringFile struct {
	mem   []byte
	used  int          // bytes of the label area written, guarded by the recorder's mu
	full  bool         // a label did not fit: later ones are left out too, guarded by mu
	areas int          // batch areas handed out, guarded by mu
	free  []*batchArea // areas given back (Batch.Close), guarded by mu
}

// ringLayout returns where the batches and the slots begin, and the file's size, for
// slots slots.
func ringLayout(slots int) (batches, slotsAt, size int) {
	batches = ringHeaderLen + ringLabelBytes
	page := os.Getpagesize()
	slotsAt = (batches + ringBatches*batchAreaLen + page - 1) / page * page
	return batches, slotsAt, slotsAt + slots*slotLen
}

// MapRecorder is NewRecorder with the recorder's memory in f, a file that outlives the
// process (a memfd the launcher holds): f is emptied, sized and mapped shared, and
// ReadRing reads it back once the process has ended. f may be closed once it returns;
// the mapping stays for the life of the process.
func MapRecorder(rank, capacity int, f *os.File) (*Recorder, error) {
	n := slotsFor(capacity)
	if n > MaxEvents {
		return nil, fmt.Errorf("trace: a ring file of %d events: at most %d", n, MaxEvents)
	}
	_, slotsAt, size := ringLayout(n)
	if err := f.Truncate(0); err != nil {
		return nil, fmt.Errorf("trace: ring file: %w", err)
	}
	if err := f.Truncate(int64(size)); err != nil {
		return nil, fmt.Errorf("trace: ring file: %w", err)
	}
	mem, err := mapShared(f, size)
	if err != nil {
		return nil, fmt.Errorf("trace: ring file: %w", err)
	}
	slots := unsafe.Slice((*slot)(unsafe.Pointer(&mem[slotsAt])), n)
	r := newRecorder(rank, slots, NewClock())
	r.file = &ringFile{mem: mem}
	r.file.writeHeader(rank, n, r.clock)
	return r, nil
}

// writeHeader fills the header of a ring file of slots slots whose stamps c reads.
func (f *ringFile) writeHeader(rank, slots int, c *Clock) {
	h := f.mem[:ringHeaderLen]
	ne := binary.NativeEndian
	copy(h[hMagic:], ringMagic[:])
	ne.PutUint16(h[hVersion:], ringVersion)
	ne.PutUint32(h[hRank:], uint32(rank))
	ne.PutUint32(h[hSlots:], uint32(slots))
	ne.PutUint32(h[hLabelBytes:], ringLabelBytes)
	ne.PutUint32(h[hBatches:], ringBatches)
	ne.PutUint64(h[hOriginWall:], uint64(c.origin.UnixNano()))
	ne.PutUint64(h[hOriginMono:], uint64(monoNow()-int64(time.Since(c.origin))))
	counter := uint64(0)
	if c.counter {
		counter = 1
	}
	ne.PutUint64(h[hCounter:], counter)
	ne.PutUint64(h[hBase:], uint64(c.base))
	f.setScale(c.scale)
	copy(h[hBoot:hBoot+bootLen], bootID())
}

// setScale stores the counter's rate, nanoseconds per count.
func (f *ringFile) setScale(scale float64) {
	(*atomic.Uint64)(unsafe.Pointer(&f.mem[hScale])).Store(math.Float64bits(scale))
}

// addLabel writes label i, name, to the label area if it fits, and then counts it. The
// recorder's mu is held. Once a label does not fit, no later one is written, so that
// the file's labels keep their indexes.
func (f *ringFile) addLabel(i int, name string) {
	name = name[:min(len(name), MaxLabelLen)]
	if f.full || f.used+2+len(name) > ringLabelBytes {
		f.full = true
		return
	}
	area := f.mem[ringHeaderLen : ringHeaderLen+ringLabelBytes]
	binary.NativeEndian.PutUint16(area[f.used:], uint16(len(name)))
	copy(area[f.used+2:], name)
	f.used += 2 + len(name)
	(*atomic.Uint32)(unsafe.Pointer(&f.mem[hLabels])).Store(uint32(i + 1))
}

// area returns a batch area of the file, or nil when none is left. The recorder's mu is
// held.
func (f *ringFile) area() *batchArea {
	if n := len(f.free); n > 0 {
		a := f.free[n-1]
		f.free = f.free[:n-1]
		return a
	}
	if f.areas == ringBatches {
		return nil
	}
	batches, _, _ := ringLayout(0)
	a := (*batchArea)(unsafe.Pointer(&f.mem[batches+f.areas*batchAreaLen]))
	f.areas++
	return a
}

// RingHeaderLen is the length of a ring file's header: all that RingHeader and
// MeasureRing read.
const RingHeaderLen = ringHeaderLen

// RingHeader returns the rank and the origin (the wall clock at the recorder's zero,
// Unix nanoseconds, as Dump.Origin) that the header of a ring file says: its first
// RingHeaderLen bytes, or more. Every event of the ring starts at or after the origin.
func RingHeader(h []byte) (rank int, origin int64, err error) {
	ne := binary.NativeEndian
	if len(h) < ringHeaderLen || [4]byte(h[hMagic:hMagic+4]) != ringMagic || ne.Uint16(h[hVersion:]) != ringVersion {
		return 0, 0, fmt.Errorf("%w: not a ring file of version %d", ErrFormat, ringVersion)
	}
	rank = int(ne.Uint32(h[hRank:]))
	if rank > MaxRank {
		return 0, 0, fmt.Errorf("%w: ring file of rank %d", ErrFormat, rank)
	}
	return rank, int64(ne.Uint64(h[hOriginWall:])), nil
}

// MeasureRing stores into h, the header of a ring file, the counter's rate measured from
// the recorder's zero to now, when this process shares the host and boot that wrote it;
// a copy of the file then converts its stamps as well on any host. It reports whether it
// did.
func MeasureRing(h []byte) bool {
	if _, _, err := RingHeader(h); err != nil || binary.NativeEndian.Uint64(h[hCounter:]) == 0 {
		return false
	}
	scale, ok := sameHostRate(h)
	if ok {
		binary.NativeEndian.PutUint64(h[hScale:], math.Float64bits(scale))
	}
	return ok
}

// ReadRing returns the dump of a ring file (MapRecorder) whose process has ended, read
// into b: the events its ring held, then those its batches held, oldest first, with
// their stamps in nanoseconds since the recorder was made. On the host and boot that
// wrote the file, the counter's rate is measured from the recorder's start to now, as
// Snapshot does; elsewhere the rate the file holds is used. An event the process's end
// cut short is left out. Lost is 0: the file does not count lost events.
func ReadRing(b []byte) (Dump, error) {
	return readRing(b, sameHostRate)
}

// readRing is ReadRing with rate, which returns the counter's rate measured on this host
// for a file whose header is h, or false.
func readRing(b []byte, rate func(h []byte) (float64, bool)) (Dump, error) {
	ne := binary.NativeEndian
	if len(b) < ringHeaderLen || [4]byte(b[hMagic:hMagic+4]) != ringMagic {
		return Dump{}, fmt.Errorf("%w: not a ring file", ErrFormat)
	}
	if v := ne.Uint16(b[hVersion:]); v != ringVersion {
		return Dump{}, fmt.Errorf("%w: ring file version %d", ErrFormat, v)
	}
	n := int(ne.Uint32(b[hSlots:]))
	batches, slotsAt, size := ringLayout(n)
	if n < 2 || n > MaxEvents || n&(n-1) != 0 || ne.Uint32(b[hLabelBytes:]) != ringLabelBytes ||
		ne.Uint32(b[hBatches:]) != ringBatches || len(b) < size {
		return Dump{}, fmt.Errorf("%w: ring file of %d bytes for %d slots", ErrFormat, len(b), n)
	}
	d := Dump{Rank: int(ne.Uint32(b[hRank:])), Origin: int64(ne.Uint64(b[hOriginWall:]))}
	if d.Rank > MaxRank {
		return Dump{}, fmt.Errorf("%w: ring file of rank %d", ErrFormat, d.Rank)
	}
	labels, err := ringLabels(b)
	if err != nil {
		return Dump{}, err
	}
	d.Labels = labels
	type held struct {
		i  uint64
		ev Event
	}
	var got []held
	for k := range n {
		p := b[slotsAt+k*slotLen:]
		st := ne.Uint64(p)
		if st == 0 || st&writing != 0 { // never written, or cut short
			continue
		}
		if e, ok := ringEvent(p[8:]); ok {
			got = append(got, held{st>>2 - 1, e})
		}
	}
	slices.SortFunc(got, func(a, b held) int { return cmp.Compare(a.i, b.i) })
	var inRing map[Event]bool // to skip a batch's event that was also stored: Flush ended before its count did
	for _, h := range got {
		d.Events = append(d.Events, h.ev)
		d.Seqs = append(d.Seqs, h.i)
		d.Total = h.i + 1
	}
	for a := range ringBatches {
		p := b[batches+a*batchAreaLen:]
		cnt := ne.Uint64(p)
		if cnt == 0 || cnt > BatchLen {
			continue
		}
		if inRing == nil {
			inRing = make(map[Event]bool, len(d.Events))
			for _, e := range d.Events {
				inRing[e] = true
			}
		}
		for k := range int(cnt) {
			if e, ok := ringEvent(p[8+k*evLen:]); ok && !inRing[e] {
				d.Events = append(d.Events, e)
				d.Seqs = append(d.Seqs, d.Total)
				d.Total++
			}
		}
	}
	if cut := len(d.Events) - MaxEvents; cut > 0 { // a ring of MaxEvents and its batches: the oldest go
		d.Events, d.Seqs = d.Events[cut:], d.Seqs[cut:]
	}
	ns := ringNanos(b, rate)
	top := -1
	for i := range d.Events {
		e := &d.Events[i]
		e.Start, e.End = ns(e.Start), ns(e.End)
		top = max(top, int(e.Label))
	}
	for i := len(d.Labels); i <= top; i++ { // labels the file had no room for
		d.Labels = append(d.Labels, "label "+strconv.Itoa(i))
	}
	return d, nil
}

// ringLabels returns the labels of ring file b.
func ringLabels(b []byte) ([]string, error) {
	ne := binary.NativeEndian
	count := int(ne.Uint32(b[hLabels:]))
	area := b[ringHeaderLen : ringHeaderLen+ringLabelBytes]
	if count > MaxLabels {
		return nil, fmt.Errorf("%w: ring file of %d labels", ErrFormat, count)
	}
	labels := make([]string, 0, count)
	for i := range count {
		if len(area) < 2 || int(ne.Uint16(area)) > len(area)-2 {
			return nil, fmt.Errorf("%w: ring file's label %d cut short", ErrFormat, i)
		}
		l := int(ne.Uint16(area))
		if l > MaxLabelLen {
			return nil, fmt.Errorf("%w: ring file's label %d of %d bytes", ErrFormat, i, l)
		}
		labels, area = append(labels, string(area[2:2+l])), area[2+l:]
	}
	return labels, nil
}

// ringEvent decodes the Event at p, and reports whether it is whole: a kind, and an end
// no earlier than its start.
func ringEvent(p []byte) (Event, bool) {
	ne := binary.NativeEndian
	e := Event{Start: int64(ne.Uint64(p[evStart:])), End: int64(ne.Uint64(p[evEnd:])),
		Bytes: int64(ne.Uint64(p[evBytes:])), Flow: ne.Uint64(p[evFlow:]), Peer: int32(ne.Uint32(p[evPeer:])),
		Tag: int32(ne.Uint32(p[evTag:])), Label: ne.Uint16(p[evLabel:]), Kind: Kind(p[evKind])}
	return e, e.Kind != 0 && e.End >= e.Start
}

// ringNanos returns the conversion of ring file b's stamps to nanoseconds since the
// recorder's zero: the rate measured now on the host that wrote it (rate), else the
// file's.
func ringNanos(b []byte, rate func(h []byte) (float64, bool)) func(int64) int64 {
	ne := binary.NativeEndian
	if ne.Uint64(b[hCounter:]) == 0 {
		return func(s int64) int64 { return s }
	}
	scale, ok := rate(b[:ringHeaderLen])
	if !ok {
		scale = math.Float64frombits(ne.Uint64(b[hScale:]))
	}
	if !(scale > 0 && scale < 1e6) {
		scale = 1
	}
	return func(s int64) int64 { return int64(float64(s) * scale) }
}

// sameHostRate measures the counter's rate, nanoseconds per count, from the zero of the
// recorder whose ring file header is h to now, when this process shares the host and
// boot that wrote it and the counter is a clock here.
func sameHostRate(h []byte) (float64, bool) {
	ne := binary.NativeEndian
	boot := bootID()
	if len(boot) == 0 || !bytes.Equal(h[hBoot:hBoot+bootLen], boot) || !counterKeepsTime() {
		return 0, false
	}
	elapsed := monoNow() - int64(ne.Uint64(h[hOriginMono:]))
	counts := rdtsc() - int64(ne.Uint64(h[hBase:]))
	if elapsed <= 0 || counts <= 0 {
		return 0, false
	}
	return float64(elapsed) / float64(counts), true
}

// bootID returns the kernel's boot_id, padded to bootLen bytes, or nil when it cannot be
// read.
func bootID() []byte {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return nil
	}
	id := make([]byte, bootLen)
	copy(id, bytes.TrimSpace(b))
	return id
}
