package runtime

import (
	"encoding/binary"
	"fmt"
)

// Messages between ranks travel as verbs Sends into the peer's pre-posted receive slots.
// Every message starts with an 8-byte header (little-endian):
//
//	0  kind    u8   msgEager, msgRTS, msgFIN, msgNop, msgRTSL, msgCancel or msgWithdrawn
//	                (append-only)
//	1  version u8   wireVersion
//	2  ctx     u16  communication context: user point-to-point, barrier, ... (see World)
//	4  tag     i32  the message tag (0 for FIN)
//
// followed by, per kind:
//
//	msgEager  the payload (the rest of the message)
//	msgRTS    cookie u64, rkey u64, offset u64, length u64: a rendezvous offer; the
//	          receiver RDMA-reads length bytes at (rkey, offset) and answers with FIN
//	msgFIN    cookie u64: the rendezvous read of the offer with this cookie is done
//	msgNop    nothing: posted signaled to learn that the unsignaled messages before it are
//	          complete (see postMessage); the receiver ignores it
//	msgRTSL   cookie u64, address u64, length u64, runs u64, then runs x (offset u64,
//	          length u64, count u64, stride i64): a layout offer between ranks of one host
//	          (rndv_iov.go); decoded as an RTS whose layout the receiver reads
//	msgCancel cookie u64: the sender withdraws its offer with this cookie, if no receive
//	          has matched it (Cancel)
//	msgWithdrawn cookie u64: the offer with this cookie was withdrawn, unread: its send
//	          is cancelled
//
// The payload of an eager message starts 8 bytes in, so it keeps the 8-byte alignment of
// the slot.
const (
	wireVersion = 2
	hdrLen      = 8
	rtsLen      = hdrLen + 32
	finLen      = hdrLen + 8
)

// Message kinds (append-only: they are on the wire).
const (
	msgEager     = 1
	msgRTS       = 2
	msgFIN       = 3
	msgNop       = 4
	msgRTSL      = 5
	msgCancel    = 6
	msgWithdrawn = 7
)

var le = binary.LittleEndian

// header is a decoded message header plus the fields of RTS and FIN.
type header struct {
	kind   uint8
	ctx    uint16
	tag    int32
	cookie uint64
	rkey   uint64
	off    uint64
	length uint64
	layout bool // msgRTSL: the RTS is a layout offer, its runs after offerLen (decodeOffer)
}

func putHeader(b []byte, kind uint8, ctx uint16, tag int32) {
	b[0] = kind
	b[1] = wireVersion
	le.PutUint16(b[2:], ctx)
	le.PutUint32(b[4:], uint32(tag))
}

func putRTS(b []byte, ctx uint16, tag int32, cookie, rkey, off, length uint64) {
	putHeader(b, msgRTS, ctx, tag)
	le.PutUint64(b[8:], cookie)
	le.PutUint64(b[16:], rkey)
	le.PutUint64(b[24:], off)
	le.PutUint64(b[32:], length)
}

// putFIN writes a message of one cookie: msgFIN, msgCancel or msgWithdrawn.
func putFIN(b []byte, kind uint8, cookie uint64) {
	putHeader(b, kind, 0, 0)
	le.PutUint64(b[8:], cookie)
}

// errWire is returned for a malformed message; the peer speaks another protocol version
// or is broken, and is treated as failed.
type errWire struct{ detail string }

func (e *errWire) Error() string { return "malformed message from peer: " + e.detail }

// decodeHeader decodes msg. It never panics; a malformed message is an *errWire.
func decodeHeader(msg []byte) (header, error) {
	var h header
	if len(msg) < hdrLen {
		return h, &errWire{fmt.Sprintf("%d bytes, shorter than the %d-byte header", len(msg), hdrLen)}
	}
	if msg[1] != wireVersion {
		return h, &errWire{fmt.Sprintf("wire version %d, this build speaks %d (mixed gorma builds in one job?)", msg[1], wireVersion)}
	}
	h.kind, h.ctx, h.tag = msg[0], le.Uint16(msg[2:]), int32(le.Uint32(msg[4:]))
	switch h.kind {
	case msgEager:
	case msgRTS:
		if len(msg) != rtsLen {
			return h, &errWire{fmt.Sprintf("RTS of %d bytes, want %d", len(msg), rtsLen)}
		}
		h.cookie, h.rkey, h.off, h.length = le.Uint64(msg[8:]), le.Uint64(msg[16:]), le.Uint64(msg[24:]), le.Uint64(msg[32:])
	case msgFIN, msgCancel, msgWithdrawn:
		if len(msg) != finLen {
			return h, &errWire{fmt.Sprintf("message of kind %d of %d bytes, want %d", h.kind, len(msg), finLen)}
		}
		h.cookie = le.Uint64(msg[8:])
	case msgRTSL:
		return decodeOffer(msg, h)
	case msgNop:
		if len(msg) != hdrLen {
			return h, &errWire{fmt.Sprintf("no-op of %d bytes, want %d", len(msg), hdrLen)}
		}
	default:
		return h, &errWire{fmt.Sprintf("unknown message kind %d", h.kind)}
	}
	return h, nil
}
