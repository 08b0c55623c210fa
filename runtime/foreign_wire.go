package runtime

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The value a rank publishes through a foreign PMI server in each round (keyWire1,
// keyWire2): its card, rank 0's job secret, and the endpoints it made for its peers, in
// one value, so that a rank makes one PMI put per round whatever the job's size (the
// session splits a value longer than the server's vallen_max over several PMI keys).
// The endpoints a rank makes for its peers on one device differ in a few bytes (queue
// pair numbers, ring offsets, fast box keys), so each is XORed with the one before and
// the table is deflated: a few bytes per peer instead of 60 to 150.
//
//	magic     "GRMW"
//	version   u8 (pmiValueVersion)
//	card      uvarint length, bytes (empty in the second round)
//	secret    uvarint length, bytes (rank 0's first round only)
//	table     deflate of: repeated uvarint rank, uvarint length, endpoint (encodeEP),
//	          XORed with the previous entry's when both have the same length
const (
	pmiValueMagic   = "GRMW"
	pmiValueVersion = 1
	// maxPMITable bounds the inflated table: 1<<16 ranks of 512 bytes each.
	maxPMITable = 32 << 20
)

// wireEP is one endpoint of a table: the value (encodeEP) rank is to connect with.
type wireEP struct {
	rank int
	ep   []byte
}

// wire is a decoded wire value, keeping of its table only the endpoint for one rank.
type wire struct {
	card   []byte
	secret []byte
	ep     []byte // nil: the table holds none for that rank
}

var errPMIValue = errors.New("malformed gorma wire value")

func encodeWire(cardBytes, secret []byte, eps []wireEP) []byte {
	b := append([]byte(pmiValueMagic), pmiValueVersion)
	b = binary.AppendUvarint(b, uint64(len(cardBytes)))
	b = append(b, cardBytes...)
	b = binary.AppendUvarint(b, uint64(len(secret)))
	b = append(b, secret...)
	var table, prev []byte
	for _, x := range eps {
		table = binary.AppendUvarint(table, uint64(x.rank))
		table = binary.AppendUvarint(table, uint64(len(x.ep)))
		if len(prev) == len(x.ep) {
			for i, c := range x.ep {
				table = append(table, c^prev[i])
			}
		} else {
			table = append(table, x.ep...)
		}
		prev = x.ep
	}
	var buf bytes.Buffer
	buf.Write(b)
	zw, _ := flate.NewWriter(&buf, flate.BestCompression) // the level is valid
	zw.Write(table)
	zw.Close()
	return buf.Bytes()
}

// decodeWire decodes a wire value, keeping the endpoint for rank want. It never panics;
// every error wraps errPMIValue and says what was wrong.
func decodeWire(b []byte, want int) (wire, error) {
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
	table, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(p)), maxPMITable+1))
	if err != nil {
		return w, fmt.Errorf("%w: endpoint table: %w", errPMIValue, err)
	}
	if len(table) > maxPMITable {
		return w, fmt.Errorf("%w: endpoint table inflates past %d bytes", errPMIValue, maxPMITable)
	}
	var prev []byte
	for len(table) > 0 {
		r, n := binary.Uvarint(table)
		if n <= 0 {
			return w, fmt.Errorf("%w: endpoint table: bad rank", errPMIValue)
		}
		var ep []byte
		if ep, table, err = wireField(table[n:], "endpoint"); err != nil {
			return w, err
		}
		if len(prev) == len(ep) {
			for i := range ep {
				ep[i] ^= prev[i]
			}
		}
		prev = ep
		if r == uint64(want) {
			if w.ep != nil {
				return w, fmt.Errorf("%w: two endpoints for rank %d", errPMIValue, want)
			}
			w.ep = ep
		}
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
