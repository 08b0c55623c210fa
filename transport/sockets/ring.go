package sockets

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Segment layout (design.md has the picture). One memfd holds a header page and two
// rings of ringSize bytes each: ring 0 carries the dialer's bytes to the listener, ring 1
// the listener's to the dialer.
const (
	headerSize = 4096
	cacheLine  = 64

	offMagic    = 0  // [8]byte segMagic
	offVersion  = 8  // uint32 LE, protocolVersion
	offRingSize = 12 // uint32 LE, bytes per ring
	offOffer    = 16 // uint32: offerOpen, then offerTaken or offerWithdrawn (segment.go)

	ctlBase   = 256 // first direction's control block
	ctlStride = 4 * cacheLine

	// Offsets inside a direction's control block, one cache line per writer of a word.
	ctlTail           = 0               // uint64, written by the ring's writer
	ctlWriteClosed    = 8               // uint32, set once by the writer (CloseWrite, Close)
	ctlWriterSleeping = cacheLine       // uint32 futex word: the writer waits for space
	ctlHead           = 2 * cacheLine   // uint64, written by the ring's reader
	ctlReadClosed     = 2*cacheLine + 8 // uint32, set once by the reader (CloseRead, Close)
	ctlReaderSleeping = 3 * cacheLine   // uint32 futex word: the reader waits for data

	minRingSize     = 4096
	maxRingSize     = 1 << 28
	defaultRingSize = 1 << 20
)

var segMagic = [8]byte{'g', 'o', 'r', 'm', 'a', 's', 'h', 'm'}

// segmentSize is the memfd's size for rings of ringSize bytes.
func segmentSize(ringSize int) int { return headerSize + 2*ringSize }

// validRingSize reports whether n is a ring size this package maps.
func validRingSize(n uint64) bool {
	return n >= minRingSize && n <= maxRingSize && n&(n-1) == 0
}

// writeHeader fills a fresh segment's header page.
func writeHeader(mem []byte, ringSize int) {
	copy(mem[offMagic:], segMagic[:])
	binary.LittleEndian.PutUint32(mem[offVersion:], protocolVersion)
	binary.LittleEndian.PutUint32(mem[offRingSize:], uint32(ringSize))
}

// checkHeader verifies a mapped segment's header page against the size the reply
// announced. The segment is at least headerSize bytes (the caller checked its size).
func checkHeader(mem []byte, ringSize int) error {
	if len(mem) < headerSize {
		return fmt.Errorf("shared segment of %d bytes is smaller than its header page", len(mem))
	}
	if [8]byte(mem[offMagic:offMagic+8]) != segMagic {
		return fmt.Errorf("shared segment has no gorma shm header (bad magic)")
	}
	if v := binary.LittleEndian.Uint32(mem[offVersion:]); v != protocolVersion {
		return fmt.Errorf("shared segment has protocol version %d, want %d", v, protocolVersion)
	}
	if n := binary.LittleEndian.Uint32(mem[offRingSize:]); int(n) != ringSize {
		return fmt.Errorf("shared segment's ring size %d differs from the handshake's %d", n, ringSize)
	}
	return nil
}

// ring is one process's view of one direction. Only the counters and flags are read from
// shared memory; the size and this side's own counter (pos) are local, so a peer that
// scribbles over the header cannot make an index leave data.
type ring struct {
	data []byte // ringSize bytes of the mapping
	mask uint64

	// kickPeer wakes the peer's waiter parked in sleepPoll with a byte on the liveness
	// socket: kickReader for its reader, kickWriter for its writer.
	kickPeer func(byte)

	tail, head                     *atomic.Uint64
	writeClosed, readClosed        *atomic.Uint32
	readerSleeping, writerSleeping *atomic.Uint32

	// pos is this side's own counter: head for the ring it reads, tail for the ring it
	// writes. published is the last tail stored (writer side only): bytes between
	// published and pos are copied but not yet visible to the reader.
	pos, published uint64
}

// newRing maps direction dir (0 or 1) of a segment of rings of size bytes.
func newRing(mem []byte, dir, size int, kickPeer func(byte)) *ring {
	ctl := mem[ctlBase+dir*ctlStride : ctlBase+(dir+1)*ctlStride]
	data := mem[headerSize+dir*size : headerSize+(dir+1)*size]
	u64 := func(off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&ctl[off])) }
	u32 := func(off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&ctl[off])) }
	r := &ring{
		kickPeer:       kickPeer,
		data:           data,
		mask:           uint64(size - 1),
		tail:           u64(ctlTail),
		head:           u64(ctlHead),
		writeClosed:    u32(ctlWriteClosed),
		readClosed:     u32(ctlReadClosed),
		readerSleeping: u32(ctlReaderSleeping),
		writerSleeping: u32(ctlWriterSleeping),
	}
	return r
}

// readable returns how many bytes the reader may consume. A tail that is behind head or
// more than a ring ahead of it is a protocol error.
func (r *ring) readable() (uint64, error) {
	n := r.tail.Load() - r.pos
	if n > uint64(len(r.data)) {
		return 0, errCorruptRing
	}
	return n, nil
}

// writable returns how many bytes the writer may produce. A head that is ahead of tail or
// more than a ring behind it is a protocol error.
func (r *ring) writable() (uint64, error) {
	used := r.pos - r.head.Load()
	if used > uint64(len(r.data)) {
		return 0, errCorruptRing
	}
	return uint64(len(r.data)) - used, nil
}

// readSpan returns the contiguous readable bytes starting at pos, at most n of them.
func (r *ring) readSpan(n uint64) []byte {
	i := r.pos & r.mask
	n = min(n, uint64(len(r.data))-i)
	return r.data[i : i+n]
}

// writeSpan returns the contiguous free bytes starting at pos, at most n of them.
func (r *ring) writeSpan(n uint64) []byte { return r.readSpan(n) }

// consume copies up to avail readable bytes into p, publishes the new head and wakes
// the writer if it sleeps.
func (r *ring) consume(p []byte, avail uint64) int {
	done := 0
	for done < len(p) && avail > 0 {
		n := copy(p[done:], r.readSpan(min(avail, r.chunk())))
		done += n
		avail -= uint64(n)
		r.pos += uint64(n)
		if done < len(p) && avail > 0 {
			r.release() // hand a long read's first chunk back to the writer
		}
	}
	r.release()
	return done
}

// chunk is how many bytes one side copies before it publishes them: a quarter of the
// ring, so that on a long write or read the other side works on one quarter while this
// side copies the next.
func (r *ring) chunk() uint64 { return uint64(len(r.data)) / 4 }

// release publishes head after the reader consumed bytes in place.
func (r *ring) release() {
	r.head.Store(r.pos)
	wake(r.writerSleeping, r.kickPeer, kickWriter)
}

// produce copies up to free bytes of p into the ring without publishing them.
func (r *ring) produce(p []byte, free uint64) int {
	done := 0
	for done < len(p) && free > 0 {
		n := copy(r.writeSpan(free), p[done:])
		done += n
		free -= uint64(n)
		r.pos += uint64(n)
	}
	return done
}

// publish makes the produced bytes visible to the reader and wakes it if it sleeps.
// After this side closed the ring for writing nothing more is published: the reader
// may already have reported io.EOF.
func (r *ring) publish() {
	if r.published == r.pos || r.writeClosed.Load() != 0 {
		return
	}
	r.published = r.pos
	r.tail.Store(r.pos)
	wake(r.readerSleeping, r.kickPeer, kickReader)
}
