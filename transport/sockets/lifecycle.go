package sockets

import (
	"net"
	"sync/atomic"
	"time"
)

// Close closes both directions: the peer's Read returns io.EOF once it drained the
// ring, its Write fails with a broken pipe. Every Read and Write blocked on this side
// returns net.ErrClosed. The mapping is released when the last operation using it
// returns.
func (c *Conn) Close() error { return c.close(true) }

// close closes the connection; unless clean, it leaves the peer's view as if this
// process had died (a reset): the listener uses that for connections it never handed
// to Accept.
func (c *Conn) close(clean bool) error {
	if !c.acquire() {
		return opError("close", c.laddr, c.raddr, net.ErrClosed)
	}
	if c.closing.Swap(true) {
		c.release()
		return opError("close", c.laddr, c.raddr, net.ErrClosed)
	}
	if clean {
		c.shutWrite()
		c.shutRead()
	}
	c.users.Or(closedBit)
	c.wakeLocalHeld()
	c.release() // the mapping goes with the last operation still using it
	err := c.uc.Close()
	c.livenessWG.Wait()
	if err != nil {
		return opError("close", c.laddr, c.raddr, err)
	}
	return nil
}

// CloseWrite shuts the write side: the peer's Read returns io.EOF after the bytes
// written before it; this side's later Writes fail.
func (c *Conn) CloseWrite() error {
	if !c.acquire() {
		return opError("close", c.laddr, c.raddr, net.ErrClosed)
	}
	defer c.release()
	c.shutWrite()
	return nil
}

// CloseRead shuts the read side: this side's Reads return io.EOF, the peer's Writes
// fail with a broken pipe.
func (c *Conn) CloseRead() error {
	if !c.acquire() {
		return opError("close", c.laddr, c.raddr, net.ErrClosed)
	}
	defer c.release()
	c.shutRead()
	return nil
}

// shutWrite publishes what is written, raises the ring's write-closed flag and wakes the
// peer's reader. The write mutex is not taken (a blocked writer holds it): a writer
// still copying when CloseWrite runs may publish after the flag; the reader re-reads
// tail after seeing the flag, so the bytes published before CloseWrite returned reach
// it.
func (c *Conn) shutWrite() {
	if c.writeShut.Swap(true) {
		return
	}
	c.wakeWriter() // a blocked local writer fails now
	if c.wmu.TryLock() {
		c.out.publish()
		c.wmu.Unlock()
	}
	c.out.writeClosed.Store(1)
	wake(c.out.readerSleeping, c.kickPeer, kickReader)
}

// shutRead raises the read-closed flag of the ring this side reads and wakes the peer's
// writer and this side's reader.
func (c *Conn) shutRead() {
	if c.readShut.Swap(true) {
		return
	}
	c.in.readClosed.Store(1)
	wake(c.in.writerSleeping, c.kickPeer, kickWriter)
	c.wakeReader()
}

// LocalAddr returns this side's address: Addr{"shm", name} or the one given at set-up.
func (c *Conn) LocalAddr() net.Addr { return c.laddr }

// RemoteAddr returns the peer's address: Addr{"shm", name} or the one given at set-up.
func (c *Conn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.setDeadline(&c.readDeadline, t)
	c.setDeadline(&c.writeDeadline, t)
	return nil
}

// SetReadDeadline sets the read deadline; a Read blocked now sees it at once.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.setDeadline(&c.readDeadline, t)
	return nil
}

// SetWriteDeadline sets the write deadline; a Write blocked now sees it at once.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.setDeadline(&c.writeDeadline, t)
	return nil
}

func (c *Conn) setDeadline(d *atomic.Int64, t time.Time) {
	var ns int64
	if !t.IsZero() {
		if ns = t.UnixNano(); ns <= 0 {
			ns = 1 // a time before 1970 is in the past, not "no deadline"
		}
	}
	d.Store(ns)
	c.wakeLocal()
}
