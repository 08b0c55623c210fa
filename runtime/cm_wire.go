package runtime

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
)

// The connection handshake (cm.go) on the target's listener socket. Origin O asks target
// T to connect a queue pair to it:
//
//	O → T  hello (48 B): "GRCH", version u8, kind u8, 0 u8 ×2, O's rank u32, T's rank u32,
//	       nonce O [32]
//	T → O  challenge (40 B): "GRCC", version u8, 0 u8 ×3, nonce T [32]
//	O → T  request: "GRCR", body length u16, 0 u16, mac [32], body
//	       body (kind cmKindQP): card length u16, O's card, endpoint length u16, O's
//	       endpoint (encodeEP); (kind cmKindSocket): the name of T's rank listener
//	T → O  reply: "GRCA", status u8, 0 u8, body length u16, mac [32], body
//	       body: T's endpoint (cmAccept of a queue pair) or why T refused (cmRefuse),
//	       else empty
//
// A socket request that T accepts leaves the connection to the byte streams of the two
// ranks' net.Conns (netconn.go).
//
// The request's mac is HMAC-SHA256(secret, "gorma/cm v1 request" || hello || challenge ||
// the request's first 8 bytes || body), the reply's the same with "gorma/cm v1 reply" and
// the reply's bytes. Each side proves it holds the job secret over both fresh nonces and
// both ranks, so neither message can be replayed or reflected. The target creates nothing
// and touches no memory before the request's mac checks. All integers are little-endian.
const (
	cmVersion    = 1
	cmHelloSize  = 48
	cmChallSize  = 40
	cmHeadSize   = 40 // a request's or reply's fixed part
	cmNonceSize  = 32
	cmMaxBody    = 4096
	cmHelloMagic = "GRCH"
	cmChallMagic = "GRCC"
	cmBusyMagic  = "GRCB" // in place of a challenge: the listener holds too many handshakes
	cmReqMagic   = "GRCR"
	cmReplyMagic = "GRCA"
	cmReqLabel   = "gorma/cm v1 request"
	cmReplyLabel = "gorma/cm v1 reply"
)

// Reply statuses. Append-only.
const (
	cmAccept   uint8 = iota // T connected its queue pair for O (the body is its endpoint), or took the socket
	cmYield                 // T's own request to O wins, or T is connected to O already: O waits
	cmRefuse                // the body says why
	cmAborting              // T's job is aborting: O waits for the abort to reach it
	cmNotYet                // T has no rank listener of that name (yet): O may ask again
)

// Request kinds (the hello's kind byte). Append-only.
const (
	cmKindQP     uint8 = iota // connect a queue pair
	cmKindSocket              // a byte stream to a rank listener (World.Listen)
)

var errCMFrame = errors.New("malformed connection handshake message")

func cmFrameErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errCMFrame, fmt.Sprintf(format, args...))
}

// cmHello is the origin's first message.
type cmHello struct {
	kind     uint8
	from, to int
	nonce    [cmNonceSize]byte
}

func (h *cmHello) encode() []byte {
	b := make([]byte, 0, cmHelloSize)
	b = append(b, cmHelloMagic...)
	b = append(b, cmVersion, h.kind, 0, 0)
	b = le.AppendUint32(b, uint32(h.from))
	b = le.AppendUint32(b, uint32(h.to))
	return append(b, h.nonce[:]...)
}

func decodeCMHello(b []byte) (cmHello, error) {
	var h cmHello
	if len(b) != cmHelloSize || string(b[:4]) != cmHelloMagic {
		return h, cmFrameErr("hello of %d bytes without magic %q", len(b), cmHelloMagic)
	}
	if b[4] != cmVersion {
		return h, cmFrameErr("hello of version %d, this build speaks %d (mixed gorma builds in one job?)", b[4], cmVersion)
	}
	if b[5] > cmKindSocket || b[6]|b[7] != 0 {
		return h, cmFrameErr("hello of kind %d or with reserved bits set", b[5])
	}
	h.kind = b[5]
	from, to := le.Uint32(b[8:]), le.Uint32(b[12:])
	if from > 1<<24 || to > 1<<24 {
		return h, cmFrameErr("hello names rank %d or %d, beyond any job", from, to)
	}
	h.from, h.to = int(from), int(to)
	copy(h.nonce[:], b[16:])
	return h, nil
}

func encodeCMChallenge(nonce *[cmNonceSize]byte) []byte {
	b := make([]byte, 0, cmChallSize)
	b = append(b, cmChallMagic...)
	b = append(b, cmVersion, 0, 0, 0)
	return append(b, nonce[:]...)
}

// encodeCMBusy returns the frame a listener sends in place of a challenge when it sheds
// a connection (too many handshakes pending): as long as a challenge, so that an origin
// reads either in one go.
func encodeCMBusy() []byte {
	b := make([]byte, cmChallSize)
	copy(b, cmBusyMagic)
	b[4] = cmVersion
	return b
}

// isCMBusy reports whether b, a challenge-sized frame, is a busy frame.
func isCMBusy(b []byte) bool { return len(b) == cmChallSize && string(b[:4]) == cmBusyMagic }

func decodeCMChallenge(b []byte) ([cmNonceSize]byte, error) {
	var n [cmNonceSize]byte
	if len(b) != cmChallSize || string(b[:4]) != cmChallMagic {
		return n, cmFrameErr("challenge of %d bytes without magic %q", len(b), cmChallMagic)
	}
	if b[4] != cmVersion || b[5]|b[6]|b[7] != 0 {
		return n, cmFrameErr("challenge of version %d or with reserved bits set", b[4])
	}
	copy(n[:], b[8:])
	return n, nil
}

// cmHead is the fixed part of a request (status 0) or a reply.
type cmHead struct {
	status uint8
	n      int // body length
	mac    [sha256.Size]byte
}

// encodeCMMessage returns a request (magic cmReqMagic) or reply with body, its mac
// computed over transcript (hello || challenge) with label.
func encodeCMMessage(magic string, status uint8, body []byte, secret []byte, label string, transcript []byte) []byte {
	b := make([]byte, 0, cmHeadSize+len(body))
	b = append(b, magic...)
	if magic == cmReqMagic {
		b = le.AppendUint16(b, uint16(len(body)))
		b = le.AppendUint16(b, 0)
	} else {
		b = append(b, status, 0)
		b = le.AppendUint16(b, uint16(len(body)))
	}
	mac := cmMAC(secret, label, transcript, b[:8], body)
	b = append(b, mac[:]...)
	return append(b, body...)
}

// decodeCMHead decodes the fixed part of a request or reply of the given magic.
func decodeCMHead(b []byte, magic string) (cmHead, error) {
	var h cmHead
	if len(b) != cmHeadSize || string(b[:4]) != magic {
		return h, cmFrameErr("message of %d bytes without magic %q", len(b), magic)
	}
	if magic == cmReqMagic {
		h.n = int(le.Uint16(b[4:]))
		if le.Uint16(b[6:]) != 0 {
			return h, cmFrameErr("request with reserved bits set")
		}
	} else {
		h.status, h.n = b[4], int(le.Uint16(b[6:]))
		if b[5] != 0 || h.status > cmNotYet {
			return h, cmFrameErr("reply of status %d or with reserved bits set", h.status)
		}
	}
	if h.n > cmMaxBody {
		return h, cmFrameErr("body of %d bytes, more than %d", h.n, cmMaxBody)
	}
	copy(h.mac[:], b[8:])
	return h, nil
}

// cmMAC is the mac of a request or reply whose first 8 bytes are head.
func cmMAC(secret []byte, label string, transcript, head, body []byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	m.Write(transcript)
	m.Write(head)
	m.Write(body)
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// checkCMMAC reports whether h's mac is right for the message that raw (its first 8
// bytes) and body make.
func checkCMMAC(h *cmHead, raw, body, secret []byte, label string, transcript []byte) bool {
	want := cmMAC(secret, label, transcript, raw[:8], body)
	return hmac.Equal(h.mac[:], want[:])
}

func encodeCMRequestBody(cardBytes, ep []byte) []byte {
	b := make([]byte, 0, 4+len(cardBytes)+len(ep))
	b = le.AppendUint16(b, uint16(len(cardBytes)))
	b = append(b, cardBytes...)
	b = le.AppendUint16(b, uint16(len(ep)))
	return append(b, ep...)
}

func decodeCMRequestBody(b []byte) (cardBytes, ep []byte, err error) {
	if len(b) < 2 {
		return nil, nil, cmFrameErr("request body of %d bytes", len(b))
	}
	n := int(le.Uint16(b))
	if len(b) < 2+n+2 {
		return nil, nil, cmFrameErr("request card of %d bytes runs past the body's %d", n, len(b))
	}
	cardBytes, b = b[2:2+n:2+n], b[2+n:]
	n = int(le.Uint16(b))
	if len(b) != 2+n {
		return nil, nil, cmFrameErr("request endpoint of %d bytes in %d", n, len(b)-2)
	}
	return cardBytes, b[2:], nil
}

// cmState is what the target knows of its connection to the origin when a request
// arrives.
type cmState uint8

const (
	cmNone      cmState = iota // no connection, none under way
	cmDialing                  // this rank is asking the origin to connect (its own request)
	cmAccepting                // this rank is connecting for an earlier request of the origin
	cmReady                    // connected
	cmFailed                   // the origin has failed, for this rank
)

// cmDecide is the target's answer to a request from rank from, given its state: a pure
// function, so that two ranks that ask each other at once always agree on one request.
// The lower rank's request wins: a target that is itself asking a higher rank tells it to
// wait (cmYield), and a target asking a lower rank accepts the lower rank's request with
// the queue pair it made for its own. The loser's request then meets the winner in
// cmDialing with a lower rank, and is told to wait; the loser's listener side completes
// the pair.
func cmDecide(me, from int, st cmState) uint8 {
	switch st {
	case cmNone:
		return cmAccept
	case cmDialing:
		if me < from {
			return cmYield
		}
		return cmAccept
	case cmReady:
		return cmYield
	}
	return cmRefuse
}
