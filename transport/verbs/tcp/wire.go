package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// ProtocolVersion is the version of the tcp provider's wire protocol: endpoint bytes, the
// handshake and the frames. Peers of different versions refuse each other in the
// handshake. Wire enums (frame opcodes, flags, handshake statuses, and verbs.Status, which
// travels in frames) are append-only.
const ProtocolVersion = 4

// MaxMessageSize bounds one work request's payload (and so one frame's payload).
const MaxMessageSize = 1 << 30

// hdrSize is the fixed size of a frame header.
const hdrSize = 64

// wireOp is a frame opcode. Append-only.
type wireOp uint8

const (
	opSend       wireOp = 1 + iota // payload lands in the next posted receive; flagImm carries Imm
	opWrite                        // payload lands at rkey+offset; flagImm also consumes a receive
	opRead                         // requests length bytes at rkey+offset
	opFetchAdd                     // adds compareAdd at rkey+offset
	opCmpSwap                      // swaps in swap at rkey+offset if it holds compareAdd
	opAck                          // status Success: every request through seq succeeded; else seq failed
	opReadResp                     // the data of the read request seq
	opAtomicResp                   // compareAdd holds the old value for the atomic request seq
	opCredit                       // carries only credits
	opDisconnect                   // the sender's QP is in Err: it will refuse every request
	opLimit                        // first unknown opcode
)

var wireOpNames = [...]string{"?", "send", "write", "read", "fetch-add", "cmp-swap", "ack",
	"read-resp", "atomic-resp", "credit", "disconnect"}

func (o wireOp) String() string {
	if int(o) < len(wireOpNames) {
		return wireOpNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// isRequest reports whether o asks the peer to do something and answer.
func (o wireOp) isRequest() bool { return o >= opSend && o <= opCmpSwap }

// Frame flags. Append-only.
const (
	flagImm    uint8 = 1 << 0 // imm is valid (opSend, opWrite)
	flagAck    uint8 = 1 << 1 // word 48 holds a piggybacked cumulative ack (any op but opCmpSwap, opAck)
	flagMore   uint8 = 1 << 2 // opReadResp: a slice of the data; more slices of the same read follow
	flagLater  uint8 = 1 << 3 // opWrite without flagImm: at least ackBatch frames of requests follow it; its ack may wait for them
	knownFlags       = flagImm | flagAck | flagMore | flagLater
)

// maxStatus is the largest verbs.Status this build knows.
const maxStatus = verbs.FatalErr

// header is a decoded frame header. Layout (little-endian, 64 bytes):
//
//	0  version u8     1  op u8       2  flags u8    3  status u8
//	4  payload length u32
//	8  seq u64        (request sequence number; a response carries its request's)
//	16 rkey u64       24 offset u64
//	32 length u32     (bytes an opRead asks for)
//	36 imm u32
//	40 compare/add u64 (opFetchAdd, opCmpSwap; the old value in opAtomicResp)
//	48 swap u64       (opCmpSwap) or, with flagAck, ack u64: every request of the
//	                  receiver's through this sequence number succeeded; the receiver
//	                  applies it before the frame itself
//	56 credits u32    (receives the sender newly grants its peer, on any frame)
//	60 reserved u32   (zero)
//
// The payload, if any, follows the header.
type header struct {
	op         wireOp
	flags      uint8
	status     verbs.Status
	payloadLen uint32
	seq        uint64
	rkey       uint64
	offset     uint64
	length     uint32
	imm        uint32
	compareAdd uint64
	swap       uint64
	ack        uint64 // with flagAck
	credits    uint32
}

// put encodes h into b.
func (h *header) put(b *[hdrSize]byte) {
	le := binary.LittleEndian
	b[0] = ProtocolVersion
	b[1] = byte(h.op)
	b[2] = h.flags
	b[3] = byte(h.status)
	le.PutUint32(b[4:], h.payloadLen)
	le.PutUint64(b[8:], h.seq)
	le.PutUint64(b[16:], h.rkey)
	le.PutUint64(b[24:], h.offset)
	le.PutUint32(b[32:], h.length)
	le.PutUint32(b[36:], h.imm)
	le.PutUint64(b[40:], h.compareAdd)
	if h.flags&flagAck != 0 {
		le.PutUint64(b[48:], h.ack)
	} else {
		le.PutUint64(b[48:], h.swap)
	}
	le.PutUint32(b[56:], h.credits)
	le.PutUint32(b[60:], 0)
}

// errBadFrame is wrapped by every frame decoding error.
var errBadFrame = errors.New("bad frame")

// errNothing is a frame reader's answer, in poll mode, to a header read that would have
// to wait: nothing more has arrived at a frame boundary.
var errNothing = errors.New("tcp: nothing to read")

func frameErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadFrame}, args...)...)
}

// decodeHeader decodes and validates a frame header from the front of b. It never panics;
// every malformed header (truncated, other version, unknown opcode, flag or status,
// oversized or misplaced payload) is an error wrapping errBadFrame.
func decodeHeader(b []byte) (header, error) {
	if len(b) < hdrSize {
		return header{}, frameErr("header truncated: %d of %d bytes", len(b), hdrSize)
	}
	le := binary.LittleEndian
	if b[0] != ProtocolVersion {
		return header{}, frameErr("version %d, this build speaks %d", b[0], ProtocolVersion)
	}
	h := header{
		op:         wireOp(b[1]),
		flags:      b[2],
		status:     verbs.Status(b[3]),
		payloadLen: le.Uint32(b[4:]),
		seq:        le.Uint64(b[8:]),
		rkey:       le.Uint64(b[16:]),
		offset:     le.Uint64(b[24:]),
		length:     le.Uint32(b[32:]),
		imm:        le.Uint32(b[36:]),
		compareAdd: le.Uint64(b[40:]),
		swap:       le.Uint64(b[48:]),
		credits:    le.Uint32(b[56:]),
	}
	if r := le.Uint32(b[60:]); r != 0 {
		return header{}, frameErr("reserved word %#x is not zero", r)
	}
	if h.op == 0 || h.op >= opLimit {
		return header{}, frameErr("unknown opcode %d", b[1])
	}
	if h.flags&^knownFlags != 0 {
		return header{}, frameErr("unknown flags %#x on %v", h.flags, h.op)
	}
	if h.flags&flagImm != 0 && h.op != opSend && h.op != opWrite {
		return header{}, frameErr("immediate flag on %v", h.op)
	}
	if h.flags&flagMore != 0 && h.op != opReadResp {
		return header{}, frameErr("slice flag on %v", h.op)
	}
	if h.flags&flagLater != 0 && (h.op != opWrite || h.flags&flagImm != 0) {
		return header{}, frameErr("later flag on %v (flags %#x)", h.op, h.flags)
	}
	if h.flags&flagAck != 0 {
		if h.op == opCmpSwap || h.op == opAck {
			return header{}, frameErr("piggybacked ack on %v", h.op)
		}
		h.ack, h.swap = h.swap, 0
	}
	if h.status > maxStatus {
		return header{}, frameErr("unknown status %d", b[3])
	}
	if h.status != verbs.Success && h.op != opAck && h.op != opReadResp && h.op != opAtomicResp {
		return header{}, frameErr("status %v on %v", h.status, h.op)
	}
	if h.payloadLen > MaxMessageSize {
		return header{}, frameErr("payload of %d bytes exceeds the %d-byte limit", h.payloadLen, MaxMessageSize)
	}
	switch h.op {
	case opSend, opWrite:
	case opReadResp:
		if h.status != verbs.Success && h.payloadLen != 0 {
			return header{}, frameErr("failed read response carries %d bytes", h.payloadLen)
		}
		if h.flags&flagMore != 0 && (h.status != verbs.Success || h.payloadLen == 0) {
			return header{}, frameErr("read response slice with status %v and %d bytes", h.status, h.payloadLen)
		}
	case opRead:
		if h.length > MaxMessageSize {
			return header{}, frameErr("read of %d bytes exceeds the %d-byte limit", h.length, MaxMessageSize)
		}
		fallthrough
	default:
		if h.payloadLen != 0 {
			return header{}, frameErr("%v carries a %d-byte payload", h.op, h.payloadLen)
		}
	}
	return h, nil
}

// decodeFrame decodes one whole frame (header and payload) from the front of b and returns
// the payload (aliasing b) and the rest of b. It is the in-memory form of what a conn's
// reader does incrementally.
func decodeFrame(b []byte) (h header, payload, rest []byte, err error) {
	h, err = decodeHeader(b)
	if err != nil {
		return header{}, nil, b, err
	}
	end := hdrSize + int(h.payloadLen)
	if len(b) < end {
		return header{}, nil, b, frameErr("%v payload truncated: %d of %d bytes", h.op, len(b)-hdrSize, h.payloadLen)
	}
	return h, b[hdrSize:end:end], b[end:], nil
}

// frameReader reads frames from a connection through a fixed buffer. Headers and small
// payloads are copied out of the buffer. The rest of a large payload is read straight
// into its destination (target memory, a receive buffer, a read's sink) with read(2), so
// bulk data is copied once, by the kernel. Payload bytes are delivered with dmaCopy and
// raw read(2) calls, which the race detector does not see (see dma.go). It allocates
// only in newFrameReader.
type frameReader struct {
	r      io.Reader
	raw    syscall.RawConn // nil: direct reads go through r
	buf    []byte
	lo, hi int

	// boundary is set while header reads: a read deadline error there is returned (the
	// partial header stays buffered); mid-frame it is cleared and the read resumed, as a
	// leader's kick may only end its wait between frames (lead.go).
	boundary bool
	// poll: a header read that finds nothing does not wait but fails with errNothing (the
	// partial header stays buffered); reads mid-frame wait as usual (cq.Progress).
	poll bool

	dst   []byte // rawRead's destination
	n     int
	errn  syscall.Errno
	fn    func(fd uintptr) bool
	try   func(fd uintptr) // rawTry, bound once
	tried bool
}

const (
	readBufSize = 32 << 10 // per connection
	directMin   = 4 << 10  // payload remainders at least this long bypass the buffer
)

func newFrameReader(r io.Reader, raw syscall.RawConn) frameReader {
	return frameReader{r: r, raw: raw, buf: make([]byte, readBufSize)}
}

// rawRead is the RawConn callback of direct: one read(2), or wait while none is ready.
func (f *frameReader) rawRead(fd uintptr) bool {
	for {
		n, _, e := unix.Syscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(f.dst))), uintptr(len(f.dst)))
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		f.n, f.errn = int(n), e
		return true
	}
}

// rawTry is the Control callback of a poll-mode header read: one attempt.
func (f *frameReader) rawTry(fd uintptr) { f.tried = f.rawRead(fd) }

// direct fills dst from the connection, bypassing the buffer.
func (f *frameReader) direct(dst []byte) error {
	for len(dst) > 0 {
		n, err := f.read(dst)
		dst = dst[n:]
		switch {
		case err == nil || len(dst) == 0:
		case f.resume(err):
		case err == io.EOF:
			return io.ErrUnexpectedEOF
		default:
			return err
		}
	}
	return nil
}

// resume reports whether err is a read deadline set to kick a leader, met mid-frame: the
// deadline is cleared and the read goes on.
func (f *frameReader) resume(err error) bool {
	type deadliner interface{ SetReadDeadline(time.Time) error }
	dl, ok := f.raw.(deadliner)
	if !ok {
		dl, ok = f.r.(deadliner)
	}
	if f.boundary || !ok || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	dl.SetReadDeadline(time.Time{})
	return true
}

// buffered is how many bytes are read but not consumed.
func (f *frameReader) buffered() int { return f.hi - f.lo }

// fill makes at least n (<= len(buf)) bytes available, reading as many as arrive.
func (f *frameReader) fill(n int) error {
	if f.hi-f.lo >= n {
		return nil
	}
	if len(f.buf)-f.lo < n {
		f.hi = copy(f.buf, f.buf[f.lo:f.hi])
		f.lo = 0
	}
	for f.hi-f.lo < n {
		m, err := f.read(f.buf[f.hi:])
		f.hi += m
		if err != nil {
			if f.hi-f.lo >= n {
				return nil
			}
			if f.resume(err) {
				continue
			}
			if err == io.EOF && f.hi > f.lo {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// read is one read of the connection into dst: what has arrived, or a wait for data.
func (f *frameReader) read(dst []byte) (int, error) {
	if f.raw == nil {
		return f.r.Read(dst)
	}
	if f.fn == nil {
		f.fn, f.try = f.rawRead, f.rawTry
	}
	f.dst = dst
	var err error
	if f.poll && f.boundary {
		f.tried = false
		if err = f.raw.Control(f.try); err == nil && !f.tried {
			err = errNothing
		}
	} else {
		err = f.raw.Read(f.fn)
	}
	f.dst = nil
	switch {
	case err != nil:
		return 0, err
	case f.errn != 0:
		return 0, f.errn
	case f.n == 0:
		return 0, io.EOF
	}
	return f.n, nil
}

// consume drops n buffered bytes.
func (f *frameReader) consume(n int) {
	f.lo += n
	if f.lo == f.hi {
		f.lo, f.hi = 0, 0
	}
}

// header reads and decodes the next frame header.
func (f *frameReader) header() (header, error) {
	f.boundary = true
	err := f.fill(hdrSize)
	f.boundary = false
	if err != nil {
		return header{}, err
	}
	h, err := decodeHeader(f.buf[f.lo : f.lo+hdrSize])
	f.consume(hdrSize)
	return h, err
}

// readFull fills dst with the next len(dst) payload bytes.
func (f *frameReader) readFull(dst []byte) error {
	n := dmaCopy(dst, f.buf[f.lo:f.hi])
	f.consume(n)
	dst = dst[n:]
	if len(dst) == 0 {
		return nil
	}
	if len(dst) >= directMin {
		return f.direct(dst)
	}
	if err := f.fill(len(dst)); err != nil {
		return err
	}
	dmaCopy(dst, f.buf[f.lo:])
	f.consume(len(dst))
	return nil
}

// discard skips the next n payload bytes.
func (f *frameReader) discard(n int) error {
	for n > 0 {
		m := min(n, f.buffered())
		if m == 0 {
			if err := f.fill(min(n, len(f.buf))); err != nil {
				return err
			}
			continue
		}
		f.consume(m)
		n -= m
	}
	return nil
}
