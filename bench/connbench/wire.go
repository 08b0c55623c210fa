package connbench

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Every connection but connrate's opens with a header naming what the server does with
// it. The client and the server are the same program, so the header needs no version.
const headerLen = 16

// Operations of a header.
const (
	opEcho  = 1 // read Size bytes and write them back, Count times (pingpong)
	opSink  = 2 // read Count bytes in reads of Size, then write one byte (stream)
	opServe = 3 // hand the connection to the server of test number Size (http, grpc)
)

// header is [op, 0, 0, 0, size uint32, count uint64], little-endian.
type header struct {
	op    byte
	size  uint32
	count uint64
}

func (h header) encode() [headerLen]byte {
	var b [headerLen]byte
	b[0] = h.op
	binary.LittleEndian.PutUint32(b[4:], h.size)
	binary.LittleEndian.PutUint64(b[8:], h.count)
	return b
}

func readHeader(r io.Reader) (header, error) {
	var b [headerLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return header{}, err
	}
	h := header{op: b[0], size: binary.LittleEndian.Uint32(b[4:]), count: binary.LittleEndian.Uint64(b[8:])}
	if h.op < opEcho || h.op > opServe || b[1]|b[2]|b[3] != 0 {
		return header{}, fmt.Errorf("bad header % x", b)
	}
	return h, nil
}

func writeHeader(w io.Writer, h header) error {
	b := h.encode()
	_, err := w.Write(b[:])
	return err
}
