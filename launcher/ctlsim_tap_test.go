package launcher

import (
	"encoding/binary"
	"net"
	"sync/atomic"
)

// The control-plane simulation (ctlsim_test.go) counts the control frames of each agent
// with a tap on the agent's end of its connection: the frames a real submitter and the
// real agent code exchange pass through unchanged, and the tap only reads their headers.

// frameCount counts one direction of a control connection: bytes on the wire (handshake
// included) and frames by type. feed is called by the one goroutine that reads (or, for
// writes, by the writer under ctlConn.mu); the counters may be read from any goroutine.
type frameCount struct {
	skip int     // handshake bytes still to pass over
	hdr  [5]byte // the frame header being read
	nh   int     // bytes of hdr filled
	body int     // bytes of the current frame's payload still to pass over

	bytes      atomic.Int64
	frames     [fTypeEnd]atomic.Int64
	frameBytes [fTypeEnd]atomic.Int64 // header and sealed payload
}

// feed passes p, the next bytes of the direction's stream, through the header parser.
func (f *frameCount) feed(p []byte) {
	f.bytes.Add(int64(len(p)))
	for len(p) > 0 {
		switch {
		case f.skip > 0:
			n := min(f.skip, len(p))
			f.skip -= n
			p = p[n:]
		case f.body > 0:
			n := min(f.body, len(p))
			f.body -= n
			p = p[n:]
		default:
			n := copy(f.hdr[f.nh:], p)
			f.nh += n
			p = p[n:]
			if f.nh == len(f.hdr) {
				f.nh = 0
				f.body = int(binary.BigEndian.Uint32(f.hdr[:4]))
				if t := frameType(f.hdr[4]); t < fTypeEnd {
					f.frames[t].Add(1)
					f.frameBytes[t].Add(int64(len(f.hdr) + f.body))
				}
			}
		}
	}
}

// messages is the number of frames counted, pings excluded.
func (f *frameCount) messages() int64 {
	var n int64
	for t := frameType(1); t < fTypeEnd; t++ {
		if t != fPing {
			n += f.frames[t].Load()
		}
	}
	return n
}

// tapConn is an agent's end of a control connection that counts what crosses it: in
// (submitter to agent: the hello and proof, then frames) and out (the reply, then frames).
type tapConn struct {
	net.Conn
	in, out *frameCount
}

func newTapConn(c net.Conn) *tapConn {
	return &tapConn{Conn: c, in: &frameCount{skip: helloSize + proofSize}, out: &frameCount{skip: replySize}}
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.feed(p[:n])
	return n, err
}

func (c *tapConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.feed(p[:n])
	return n, err
}
