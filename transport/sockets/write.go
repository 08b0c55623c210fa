package sockets

import (
	"errors"
	"io"
	"net"
	"os"
)

// writeState is what a writer finds: free space (n > 0), or why there is none. An
// error found while Close runs is net.ErrClosed, as in readState.
func (c *Conn) writeState() (uint64, error) {
	n, err := c.writeFound()
	if err != nil && c.closing.Load() {
		return 0, net.ErrClosed
	}
	return n, err
}

// writeFound is writeState without the translation of errors to net.ErrClosed.
func (c *Conn) writeFound() (n uint64, err error) {
	switch {
	case c.closing.Load():
		return 0, net.ErrClosed
	case c.writeShut.Load():
		return 0, errWriteClosed
	}
	if err := c.brokenErr(); err != nil {
		return 0, err
	}
	if deadlinePassed(&c.writeDeadline) {
		return 0, os.ErrDeadlineExceeded
	}
	if c.out.readClosed.Load() != 0 {
		return 0, errPeerClosedRead
	}
	if c.peerGone.Load() {
		return 0, errPeerGone
	}
	n, err = c.out.writable()
	if err != nil {
		c.fail(err)
	}
	return n, err
}

// awaitWritable publishes what is produced, then waits for free space.
func (c *Conn) awaitWritable() (uint64, error) {
	c.out.publish()
	var n uint64
	err := c.wait(c.out.writerSleeping, c.writeKick, &c.writeDeadline, func() (bool, error) {
		var err error
		n, err = c.writeState()
		return n > 0, err
	})
	return n, err
}

// writeLocked copies p into the ring, waiting for space while it is full. It publishes
// whenever a quarter of the ring is unpublished, so a long write streams, and leaves
// the last bytes unpublished (the caller publishes, so that many small buffers cost one
// publication). It returns how many bytes went in.
func (c *Conn) writeLocked(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		free, err := c.out.writable()
		if err == nil && free == 0 {
			free, err = c.awaitWritable()
		} else if err == nil {
			// Re-check the state a blocked writer would see, without waiting.
			_, err = c.writeState()
		}
		if err != nil {
			if err == errCorruptRing {
				c.fail(err)
			}
			return done, err
		}
		done += c.out.produce(p[done:], min(free, c.out.chunk()))
		if c.out.pos-c.out.published >= c.out.chunk() {
			c.out.publish() // let the reader start on a long write's first quarter
		}
	}
	return done, nil
}

// Write copies all of p into the ring, blocking while the ring is full, and returns when
// every byte is in (or on an error or the write deadline, with the count written).
func (c *Conn) Write(p []byte) (int, error) {
	if !c.acquire() {
		return 0, c.writeErr(net.ErrClosed)
	}
	defer c.release()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if deadlinePassed(&c.writeDeadline) {
		return 0, c.writeErr(os.ErrDeadlineExceeded)
	}
	n, err := c.writeLocked(p)
	c.out.publish()
	if err != nil {
		return n, c.writeErr(err)
	}
	return n, nil
}

// WriteBuffers writes every buffer of *b, as Write does, publishing and waking the peer
// once at the end (and whenever the ring fills). It consumes *b as net.Buffers.WriteTo
// does. net.Buffers cannot find this method by itself: call it directly.
func (c *Conn) WriteBuffers(b *net.Buffers) (int64, error) {
	if !c.acquire() {
		return 0, c.writeErr(net.ErrClosed)
	}
	defer c.release()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if deadlinePassed(&c.writeDeadline) {
		return 0, c.writeErr(os.ErrDeadlineExceeded)
	}
	var total int64
	for len(*b) > 0 {
		n, err := c.writeLocked((*b)[0])
		total += int64(n)
		(*b)[0] = (*b)[0][n:]
		if err != nil {
			c.out.publish()
			return total, c.writeErr(err)
		}
		*b = (*b)[1:]
	}
	c.out.publish()
	return total, nil
}

// ReadFrom reads r until EOF straight into the ring's free space. It implements
// io.ReaderFrom, so io.Copy(conn, r) uses it.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if !c.acquire() {
		return 0, c.writeErr(net.ErrClosed)
	}
	defer c.release()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var total int64
	for {
		free, err := c.out.writable()
		if err == nil && free == 0 {
			free, err = c.awaitWritable()
		} else if err == nil {
			_, err = c.writeState()
		}
		if err != nil {
			c.out.publish()
			return total, c.writeErr(err)
		}
		span := c.out.writeSpan(free)
		n, rerr := r.Read(span)
		if n < 0 || n > len(span) {
			n, rerr = 0, errors.New("sockets: invalid Read result")
		}
		c.out.pos += uint64(n)
		total += int64(n)
		c.out.publish()
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

func (c *Conn) writeErr(err error) error {
	return opError("write", c.laddr, c.raddr, err)
}
