package tcp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// The handshake authenticates a new connection in both directions and binds it to one QP
// on each side, before any frame is read or any memory touched. Dialer C, listener S:
//
//	C → S  client hello (72 B): "GRMC", version u16, 0 u16, nonce C [32], C's device id u64,
//	       C's qpn u32, target qpn u32, target device id u64, C's MaxSendWR u32, 0 u32
//	S → C  server hello (80 B): "GRMS", version u16, status u16, nonce S [32],
//	       S's device id u64, mac S [32]
//	C → S  proof (40 B): "GRMP", 0 u32, mac C [32]
//	S → C  final (16 B): "GRMF", status u16, 0 u16, S's MaxSendWR u32, 0 u32
//
// mac S = HMAC-SHA256(secret, "gorma/tcp v1 server" || client hello || server hello[:48])
// and mac C the same with "gorma/tcp v1 client": each side proves it holds the secret over
// both fresh nonces, the direction, both device ids and both QP numbers. So a proof can be
// neither replayed nor reflected. MACs are compared in constant time. The listener calls
// admit (which binds the QP) only after mac C verified; a connection that fails any step
// is closed, and the device counts it. The dialer checks mac S before it proves itself.
// The whole exchange runs under one deadline (handshakeTimeout), set by the caller.
// handshakeTimeout bounds a whole handshake (a variable for tests). It leaves room for a
// busy, oversubscribed host, as the runtime's own connection set-up does: both sides'
// goroutines must run several times within it, and a handshake that runs out fails the
// peer. A stranger that holds a connection silent holds one of maxInbound slots no longer.
var handshakeTimeout = 30 * time.Second

const (
	clientHelloSize = 72
	serverHelloSize = 80
	serverMACOff    = 48
	proofSize       = 40
	finalSize       = 16
	nonceSize       = 32

	clientHelloMagic = "GRMC"
	serverHelloMagic = "GRMS"
	proofMagic       = "GRMP"
	finalMagic       = "GRMF"

	serverLabel = "gorma/tcp v1 server"
	clientLabel = "gorma/tcp v1 client"
)

// hsStatus is a handshake answer. Append-only.
type hsStatus uint16

const (
	hsOK          hsStatus = iota
	hsBadVersion           // the listener speaks another protocol version
	hsWrongDevice          // the target device id is not the listener's (stale endpoint)
	hsAuth                 // the dialer's proof was wrong
	hsNoQP                 // no such QP on the listener's device
	hsBusy                 // the QP is connected already, in a wrong state, or should dial itself
	hsMismatch             // the QP is in RTR and expects a different peer
	hsClosed               // the listener's device is closing
)

var hsStatusText = [...]string{"ok", "protocol version mismatch", "endpoint names another device",
	"authentication failed", "no such queue pair", "queue pair busy or in a wrong state",
	"queue pair expects a different peer", "device closing"}

func (s hsStatus) String() string {
	if int(s) < len(hsStatusText) {
		return hsStatusText[s]
	}
	return fmt.Sprintf("status %d", uint16(s))
}

// clientHello is the dialer's first message.
type clientHello struct {
	version uint16
	nonce   [nonceSize]byte
	devID   uint64
	qpn     uint32
	toQPN   uint32
	toDev   uint64
	maxSend uint32
}

func (h *clientHello) encode(b *[clientHelloSize]byte) {
	le := binary.LittleEndian
	copy(b[0:], clientHelloMagic)
	le.PutUint16(b[4:], h.version)
	le.PutUint16(b[6:], 0)
	copy(b[8:], h.nonce[:])
	le.PutUint64(b[40:], h.devID)
	le.PutUint32(b[48:], h.qpn)
	le.PutUint32(b[52:], h.toQPN)
	le.PutUint64(b[56:], h.toDev)
	le.PutUint32(b[64:], h.maxSend)
	le.PutUint32(b[68:], 0)
}

var errHandshake = errors.New("handshake failed")

func hsErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errHandshake}, args...)...)
}

func decodeClientHello(b []byte) (clientHello, error) {
	if len(b) != clientHelloSize || string(b[:4]) != clientHelloMagic {
		return clientHello{}, hsErr("not a gorma tcp client hello")
	}
	le := binary.LittleEndian
	h := clientHello{version: le.Uint16(b[4:]), devID: le.Uint64(b[40:]), qpn: le.Uint32(b[48:]),
		toQPN: le.Uint32(b[52:]), toDev: le.Uint64(b[56:]), maxSend: le.Uint32(b[64:])}
	copy(h.nonce[:], b[8:])
	return h, nil
}

// transcriptMAC is the proof of one side over the client hello and the server hello's
// first serverMACOff bytes.
func transcriptMAC(secret []byte, label string, ch, sh []byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	m.Write(ch)
	m.Write(sh[:serverMACOff])
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// peerInfo is what a handshake learns about the other side.
type peerInfo struct {
	devID   uint64
	qpn     uint32
	maxSend uint32
}

// serverHandshake runs the listener's side on c, for the device devID. admit is called
// only after the dialer proved it holds secret; it binds the QP and returns the final
// status and that QP's MaxSendWR. Any failure returns an error and c must be closed.
func serverHandshake(c io.ReadWriter, secret []byte, devID uint64, admit func(*clientHello) (hsStatus, uint32)) (clientHello, error) {
	var chb [clientHelloSize]byte
	if _, err := io.ReadFull(c, chb[:]); err != nil {
		return clientHello{}, hsErr("read client hello: %v", err)
	}
	ch, err := decodeClientHello(chb[:])
	if err != nil {
		return clientHello{}, err
	}
	var shb [serverHelloSize]byte
	copy(shb[0:], serverHelloMagic)
	binary.LittleEndian.PutUint16(shb[4:], ProtocolVersion)
	binary.LittleEndian.PutUint64(shb[40:], devID)
	refuse := func(s hsStatus) (clientHello, error) {
		binary.LittleEndian.PutUint16(shb[6:], uint16(s))
		c.Write(shb[:]) // best effort: the dialer learns why
		return clientHello{}, hsErr("refused: %v", s)
	}
	if ch.version != ProtocolVersion {
		return refuse(hsBadVersion)
	}
	if ch.toDev != devID {
		return refuse(hsWrongDevice)
	}
	if _, err := rand.Read(shb[8 : 8+nonceSize]); err != nil {
		return clientHello{}, hsErr("nonce: %v", err)
	}
	mac := transcriptMAC(secret, serverLabel, chb[:], shb[:])
	copy(shb[serverMACOff:], mac[:])
	if _, err := c.Write(shb[:]); err != nil {
		return clientHello{}, hsErr("write server hello: %v", err)
	}
	var pb [proofSize]byte
	if _, err := io.ReadFull(c, pb[:]); err != nil {
		return clientHello{}, hsErr("read proof: %v", err)
	}
	want := transcriptMAC(secret, clientLabel, chb[:], shb[:])
	if string(pb[:4]) != proofMagic || !hmac.Equal(pb[8:], want[:]) {
		writeFinal(c, hsAuth, 0)
		return clientHello{}, hsErr("dialer does not hold the secret")
	}
	st, maxSend := admit(&ch)
	if err := writeFinal(c, st, maxSend); err != nil {
		return clientHello{}, hsErr("write final: %v", err)
	}
	if st != hsOK {
		return clientHello{}, hsErr("refused: %v", st)
	}
	return ch, nil
}

func writeFinal(w io.Writer, st hsStatus, maxSend uint32) error {
	var fb [finalSize]byte
	copy(fb[0:], finalMagic)
	binary.LittleEndian.PutUint16(fb[4:], uint16(st))
	binary.LittleEndian.PutUint32(fb[8:], maxSend)
	_, err := w.Write(fb[:])
	return err
}

// clientHandshake runs the dialer's side on c for our QP (me) and the peer endpoint to.
// Errors are *verbs.Error: ErrAuth when either side lacks the secret, ErrBadEndpoint for
// a stale endpoint, ErrPeer otherwise.
func clientHandshake(c io.ReadWriter, secret []byte, me peerInfo, to endpoint) (peerInfo, error) {
	fail := func(sentinel error, format string, args ...any) (peerInfo, error) {
		return peerInfo{}, &verbs.Error{Op: "connect", Provider: providerName, QPN: me.qpn, Err: sentinel,
			Detail: fmt.Sprintf("to qp %d at %s: ", to.qpn, to.addr) + fmt.Sprintf(format, args...)}
	}
	// failIO keeps the connection's error in the chain (a reset or EOF from a peer
	// whose process exited), for errors.Is.
	failIO := func(what string, err error) (peerInfo, error) {
		return peerInfo{}, &verbs.Error{Op: "connect", Provider: providerName, QPN: me.qpn,
			Err: fmt.Errorf("%w: %s: %w", verbs.ErrPeer, what, err), Detail: fmt.Sprintf("to qp %d at %s", to.qpn, to.addr)}
	}
	ch := clientHello{version: ProtocolVersion, devID: me.devID, qpn: me.qpn, toQPN: to.qpn,
		toDev: to.devID, maxSend: me.maxSend}
	if _, err := rand.Read(ch.nonce[:]); err != nil {
		return fail(verbs.ErrPeer, "nonce: %v", err)
	}
	var chb [clientHelloSize]byte
	ch.encode(&chb)
	if _, err := c.Write(chb[:]); err != nil {
		return failIO("write hello", err)
	}
	var shb [serverHelloSize]byte
	if _, err := io.ReadFull(c, shb[:]); err != nil {
		return failIO("read server hello (is it a gorma tcp listener?)", err)
	}
	if string(shb[:4]) != serverHelloMagic {
		return fail(verbs.ErrPeer, "the listener does not speak the gorma tcp protocol")
	}
	switch st := hsStatus(binary.LittleEndian.Uint16(shb[6:])); st {
	case hsOK:
	case hsWrongDevice:
		return fail(verbs.ErrBadEndpoint, "%v: the endpoint is stale (the peer device restarted?)", st)
	default:
		return fail(verbs.ErrPeer, "%v (peer speaks version %d, we %d)", st,
			binary.LittleEndian.Uint16(shb[4:]), ProtocolVersion)
	}
	want := transcriptMAC(secret, serverLabel, chb[:], shb[:])
	if !hmac.Equal(shb[serverMACOff:], want[:]) {
		return fail(verbs.ErrAuth, "the listener does not hold this job's secret; check that both sides use the same tcp.Options.Secret")
	}
	var pb [proofSize]byte
	copy(pb[0:], proofMagic)
	proof := transcriptMAC(secret, clientLabel, chb[:], shb[:])
	copy(pb[8:], proof[:])
	if _, err := c.Write(pb[:]); err != nil {
		return failIO("write proof", err)
	}
	var fb [finalSize]byte
	if _, err := io.ReadFull(c, fb[:]); err != nil {
		return failIO("read final answer", err)
	}
	if string(fb[:4]) != finalMagic {
		return fail(verbs.ErrPeer, "malformed final answer")
	}
	switch st := hsStatus(binary.LittleEndian.Uint16(fb[4:])); st {
	case hsOK:
	case hsAuth:
		return fail(verbs.ErrAuth, "the listener rejected our proof; check that both sides use the same tcp.Options.Secret")
	default:
		return fail(verbs.ErrPeer, "%v", st)
	}
	return peerInfo{devID: to.devID, qpn: to.qpn, maxSend: binary.LittleEndian.Uint32(fb[8:])}, nil
}
