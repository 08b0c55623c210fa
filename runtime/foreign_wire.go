package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The value a rank publishes through a foreign PMI server (keyWire1): its card and, from
// rank 0, the job secret, in one value, so that a rank makes one PMI put whatever the
// job's size (the session splits a value longer than the server's vallen_max over
// several PMI keys). Endpoints are not published: queue pairs connect on first contact,
// through the peers' connection listeners (cm.go), whose addresses the cards carry.
//
//	magic     "GRMW"
//	version   u8 (pmiValueVersion)
//	card      uvarint length, bytes
//	secret    uvarint length, bytes (rank 0 only)
const (
	pmiValueMagic   = "GRMW"
	pmiValueVersion = 2
)

// wire is a decoded wire value.
type wire struct {
	card   []byte
	secret []byte
}

var errPMIValue = errors.New("malformed gorma wire value")

func encodeWire(cardBytes, secret []byte) []byte {
	b := append([]byte(pmiValueMagic), pmiValueVersion)
	b = binary.AppendUvarint(b, uint64(len(cardBytes)))
	b = append(b, cardBytes...)
	b = binary.AppendUvarint(b, uint64(len(secret)))
	return append(b, secret...)
}

// decodeWire decodes a wire value. It never panics; every error wraps errPMIValue and
// says what was wrong.
func decodeWire(b []byte) (wire, error) {
	var w wire
	if len(b) < len(pmiValueMagic)+1 || string(b[:len(pmiValueMagic)]) != pmiValueMagic {
		return w, fmt.Errorf("%w: %d bytes without the %q magic (another program's key, or not a gorma rank?)", errPMIValue, len(b), pmiValueMagic)
	}
	if v := b[len(pmiValueMagic)]; v != pmiValueVersion {
		return w, fmt.Errorf("%w: version %d, this build speaks %d (mixed gorma builds in one job?)", errPMIValue, v, pmiValueVersion)
	}
	p := b[len(pmiValueMagic)+1:]
	var err error
	if w.card, p, err = wireField(p, "card"); err != nil {
		return w, err
	}
	if w.secret, p, err = wireField(p, "secret"); err != nil {
		return w, err
	}
	if len(p) != 0 {
		return w, fmt.Errorf("%w: %d bytes after the secret", errPMIValue, len(p))
	}
	return w, nil
}

// wireField splits a uvarint-prefixed field off p.
func wireField(p []byte, what string) (field, rest []byte, err error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return nil, nil, fmt.Errorf("%w: %s length runs past the value's %d bytes", errPMIValue, what, len(p))
	}
	end := k + int(n)
	return p[k:end:end], p[end:], nil
}
