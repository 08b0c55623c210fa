package sockets

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"
)

// FuzzHandshake feeds arbitrary bytes to every handshake decoder (and the control
// message parser): none may panic, and what decodes re-encodes to the same bytes.
func FuzzHandshake(f *testing.F) {
	for _, m := range []message{
		{version: protocolVersion, kind: kindHello},
		{version: protocolVersion, kind: kindHello, ringSize: 1 << 16},
		{version: protocolVersion, kind: kindReply, ringSize: defaultRingSize},
		{version: protocolVersion, kind: kindReply, status: statusRefusedUID},
		{version: protocolVersion, kind: kindReady, ringSize: defaultRingSize},
		{version: 9, kind: kindReply, status: 77, ringSize: 3},
	} {
		b := m.encode()
		f.Add(b[:])
	}
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(m message, err error) {
			if err != nil {
				return
			}
			if e := m.encode(); !bytes.Equal(e[:], b) {
				t.Fatalf("decoded %+v re-encodes to %x, not %x", m, e, b)
			}
		}
		check(decodeHello(b))
		m, err := decodeReply(b, 1000)
		check(m, err)
		if err == nil && !validRingSize(uint64(m.ringSize)) {
			t.Fatalf("reply accepted with ring size %d", m.ringSize)
		}
		if err := decodeReady(b, defaultRingSize); err == nil && len(b) != messageSize {
			t.Fatal("ready accepted with a bad length")
		}
		parseRights(b) // control messages: never closes, only lists what decodes
	})
}

// alignedSegment returns zeroed, 8-byte aligned memory for a segment of rings of size
// bytes (atomics on the counters need the alignment a mapping has).
func alignedSegment(size int) []byte {
	words := make([]uint64, segmentSize(size)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
}

// FuzzHeader checks a segment header page made of arbitrary bytes.
func FuzzHeader(f *testing.F) {
	good := make([]byte, 64)
	writeHeader(good, defaultRingSize)
	f.Add(good, uint32(defaultRingSize))
	f.Add([]byte("gormashm"), uint32(4096))
	f.Fuzz(func(t *testing.T, head []byte, ringSize uint32) {
		mem := make([]byte, headerSize)
		copy(mem, head)
		if err := checkHeader(mem, int(ringSize)); err == nil {
			if binary.LittleEndian.Uint32(mem[offRingSize:]) != ringSize || !bytes.Equal(mem[:8], segMagic[:]) {
				t.Fatal("header accepted with a wrong size or magic")
			}
		}
		checkHeader(head, int(ringSize)) // short pages are refused, never read past
	})
}

// FuzzRing lets the "peer" write arbitrary head and tail counters into the shared
// header: the ring's reads and writes never leave the ring and never panic; counters
// out of range are reported as corruption.
func FuzzRing(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint64(0), uint64(0), 100, 100)
	f.Add(uint64(10), uint64(5000), uint64(1<<63), uint64(3), 4096, 1)
	f.Add(^uint64(0), uint64(1), uint64(4095), uint64(4096), 9000, 70)
	f.Fuzz(func(t *testing.T, pos, tail, head, wpos uint64, rn, wn int) {
		const size = minRingSize
		mem := alignedSegment(size)
		r, w := newRing(mem, 0, size, nil), newRing(mem, 1, size, nil)
		r.pos, w.pos, w.published = pos, wpos, wpos
		r.tail.Store(tail)
		w.head.Store(head)
		buf := make([]byte, min(max(rn, 0), 3*size))
		if n, err := r.readable(); err == nil {
			if n > size {
				t.Fatalf("readable %d > ring", n)
			}
			got := r.consume(buf, n)
			if uint64(got) > n || got > len(buf) {
				t.Fatalf("consumed %d of %d into %d", got, n, len(buf))
			}
		} else if tail-pos <= size {
			t.Fatalf("counters %d, %d in range but reported: %v", pos, tail, err)
		}
		if n, err := w.writable(); err == nil {
			if n > size {
				t.Fatalf("writable %d > ring", n)
			}
			put := w.produce(make([]byte, min(max(wn, 0), 3*size)), n)
			if uint64(put) > n {
				t.Fatalf("produced %d of %d", put, n)
			}
			w.publish()
		} else if wpos-head <= size {
			t.Fatalf("counters %d, %d in range but reported: %v", head, wpos, err)
		}
	})
}
