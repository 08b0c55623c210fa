package sockets

import (
	"encoding/binary"
	"fmt"
)

// The handshake: the dialer sends a hello, the listener answers with a reply and, when
// the status is statusOK, the segment's memfd by SCM_RIGHTS; the dialer maps and checks
// the segment and confirms with a ready. Only then does the listener hand the connection
// to Accept, so Accept never returns a connection whose dialer gave up during the
// handshake. All messages are messageSize bytes, little endian:
//
//	0  [4]byte  "gshm"
//	4  uint16   protocol version
//	6  uint16   kind (kindHello, kindReply, kindReady)
//	8  uint16   status (reply; zero in a hello)
//	10 uint16   reserved, zero
//	12 uint32   ring size in bytes (hello: requested, 0 = listener's choice; reply and
//	            ready: chosen)
const (
	protocolVersion = 1
	messageSize     = 16

	kindHello = 1
	kindReply = 2
	kindReady = 3
)

// Reply statuses. Append-only: the values are on the wire.
const (
	statusOK         = 0 // memfd attached
	statusRefusedUID = 1 // the dialer's uid is not allowed
	statusBadVersion = 2 // the listener does not speak the hello's version
	statusBadHello   = 3 // the hello did not decode
	statusNoMemory   = 4 // the listener could not create the segment
	statusShed       = 5 // the listener shed the socket (no hello in time, or full): dial again
)

var handshakeMagic = [4]byte{'g', 's', 'h', 'm'}

// message is a decoded hello or reply.
type message struct {
	version  uint16
	kind     uint16
	status   uint16
	ringSize uint32
}

func (m message) encode() [messageSize]byte {
	var b [messageSize]byte
	copy(b[:4], handshakeMagic[:])
	binary.LittleEndian.PutUint16(b[4:], m.version)
	binary.LittleEndian.PutUint16(b[6:], m.kind)
	binary.LittleEndian.PutUint16(b[8:], m.status)
	binary.LittleEndian.PutUint32(b[12:], m.ringSize)
	return b
}

// decodeMessage decodes the framing common to hellos and replies: length, magic, the
// reserved field. The version is returned as sent; callers compare it.
func decodeMessage(b []byte, kind uint16) (message, error) {
	if len(b) != messageSize {
		return message{}, fmt.Errorf("handshake message of %d bytes, want %d", len(b), messageSize)
	}
	if [4]byte(b[:4]) != handshakeMagic {
		return message{}, fmt.Errorf("handshake message has bad magic %q (not a gorma shm peer)", b[:4])
	}
	m := message{
		version:  binary.LittleEndian.Uint16(b[4:]),
		kind:     binary.LittleEndian.Uint16(b[6:]),
		status:   binary.LittleEndian.Uint16(b[8:]),
		ringSize: binary.LittleEndian.Uint32(b[12:]),
	}
	if m.kind != kind {
		return message{}, fmt.Errorf("handshake message of kind %d, want %d", m.kind, kind)
	}
	if binary.LittleEndian.Uint16(b[10:]) != 0 {
		return message{}, fmt.Errorf("handshake message has non-zero reserved bytes")
	}
	return m, nil
}

// decodeHello decodes a dialer's hello. A version mismatch is not an error here: the
// listener answers it with statusBadVersion.
func decodeHello(b []byte) (message, error) {
	m, err := decodeMessage(b, kindHello)
	if err != nil {
		return m, err
	}
	if m.status != 0 {
		return message{}, fmt.Errorf("hello has non-zero status %d", m.status)
	}
	if m.ringSize != 0 && !validRingSize(uint64(m.ringSize)) {
		return message{}, fmt.Errorf("hello requests ring size %d; want 0 or a power of two in [%d, %d]", m.ringSize, minRingSize, maxRingSize)
	}
	return m, nil
}

// decodeReply decodes a listener's reply and turns a refusal into its error.
func decodeReply(b []byte, uid int) (message, error) {
	m, err := decodeMessage(b, kindReply)
	if err != nil {
		return m, err
	}
	if m.version != protocolVersion {
		return message{}, fmt.Errorf("listener speaks shm protocol version %d, this program %d (rebuild one of them)", m.version, protocolVersion)
	}
	switch m.status {
	case statusOK:
	case statusRefusedUID:
		return message{}, fmt.Errorf("listener refused peer uid %d (not its own uid nor in its ListenConfig.AllowUIDs)", uid)
	case statusBadVersion:
		return message{}, fmt.Errorf("listener does not speak shm protocol version %d (rebuild one of the programs)", protocolVersion)
	case statusBadHello:
		return message{}, fmt.Errorf("listener rejected the hello as malformed")
	case statusNoMemory:
		return message{}, fmt.Errorf("listener could not create the shared segment (out of memory or memfd limits)")
	case statusShed:
		return message{}, errShed
	default:
		return message{}, fmt.Errorf("listener answered unknown status %d", m.status)
	}
	if !validRingSize(uint64(m.ringSize)) {
		return message{}, fmt.Errorf("listener chose ring size %d; want a power of two in [%d, %d]", m.ringSize, minRingSize, maxRingSize)
	}
	return m, nil
}

// decodeReady decodes the dialer's confirmation; it must repeat the ring size.
func decodeReady(b []byte, ringSize int) error {
	m, err := decodeMessage(b, kindReady)
	if err != nil {
		return err
	}
	if m.version != protocolVersion || m.status != 0 || int(m.ringSize) != ringSize {
		return fmt.Errorf("ready message (version %d, status %d, ring size %d) does not match the reply", m.version, m.status, m.ringSize)
	}
	return nil
}

// chooseRingSize picks the ring size for a hello's request: the listener's configured
// size, else the dialer's request, else the default.
func chooseRingSize(configured int, requested uint32) int {
	switch {
	case configured != 0:
		return configured
	case requested != 0:
		return int(requested)
	}
	return defaultRingSize
}
