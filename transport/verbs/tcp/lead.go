package tcp

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Leader/follower reading. A connection has one reading role: whoever holds it reads and
// handles the peer's frames (the frameReader and the reader-only fields of qconn). Its
// reader goroutine holds it by default, so passive-target requests are served while the
// application computes. When a goroutine waits in CQ.Wait on the CQ that the connection
// alone feeds (cq.sole), the role moves to that waiter (the leader). It reads the socket
// itself and returns from Wait with the completion it produced, with no goroutine hand-off
// or eventfd hop, as a raw socket ping-pong does.
//
//   - The reader offers the role at a frame boundary, just before it would block in Read,
//     if a waiter is parked on the CQ's eventfd (roleOffered); the waiter takes it when it
//     wakes. The reader then parks in the network poller on the connection's role eventfd.
//   - A leader leaving Wait leaves the role idle (roleIdle) and writes the role eventfd,
//     or, on a device with an idle-role watch (watch.go), only marks the role idle in the
//     watch's page. The watcher process asks for the eventfd write a tick later if no
//     waiter took the role back meanwhile, and QP.Close and a flush that closes the
//     connection write it at once. The write makes the reader runnable in the poller but
//     wakes no thread while this process's threads are busy. The reader takes the role
//     back (roleBG) when the process idles (a thread looks for work and polls the
//     network; at worst the scheduler's periodic poll, about 10 ms). A waiter that comes
//     first takes an idle role back without any wake-up; the reader, run then, finds it
//     held and parks again.
//   - A leader honours ctx and Close between frames: their kick (and a completion pushed by
//     another goroutine while the leader may be parked) sets a past read deadline on the
//     connection, which wakes the leader without a timer. A deadline error mid-frame is
//     cleared and the read resumed (frameReader.boundary).
//   - A leader that hits a fault (connection lost, bad frame, an abort) stops reading and
//     leaves the role to the reader (roleFault), which exits as it would have.
//
// Acks owed for the peer's Sends and writes ride on the next frame this side sends
// (flagAck): in a ping-pong, the reply. Whoever holds the role flushes them as an ack
// frame of their own before it blocks in Read, so an ack waits at most until this process
// waits or idles. In a stream of RDMA writes a receiver that keeps up blocks after every
// frame, so this is an ack frame per write, and at the writer a completion, a wake-up and
// a post per write. The peer's marks let acks wait a few frames (ackBatch).
//
// cn.role and cq's conns, sole, offer, leading and ldKicked are guarded by the CQ's mu (the
// QP's rcq, which is its scq when the connection can lead).
const (
	roleBG      = iota // the reader goroutine reads
	roleOffered        // offered to the CQ's eventfd waiter; the reader parks
	roleLead           // a waiter reads (cq.leading)
	roleIdle           // nobody reads; the role eventfd is posted
	roleFault          // a leader stopped at a fault (leadFault); the reader must exit
)

// ackBatch is how many writes of a stream one ack may cover. The writer goroutine marks
// an RDMA write without immediate flagLater when more than ackBatch frames of requests
// are queued behind it as it starts the write: the application keeps a deep window, and
// those frames follow whatever this side does. The receiver of a marked write holds the
// owed ack (qconn.hold) until ackBatch-1 more request frames have arrived, or a write
// without the mark, and then flushes it as before. A role holder that leaves the role (a
// leader returning, Progress finding nothing) flushes it at once (flushHeld), since
// nobody may read the promised frames for a while. A write's completion is thus late by
// at most the arrival of ackBatch-1 frames that were already queued when it was sent, and
// a window of at most ackBatch+1 outstanding writes never sees a mark. An ack per write
// costs a stream of large writes part of its rate (`bin/verbsperf --provider tcp --test
// write_bw` measures it).
const ackBatch = 8

// initRole creates the role eventfd; without one the connection never leads.
func (cn *qconn) initRole() {
	cn.wslot = -1
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "tcp-role-eventfd")
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return
	}
	cn.roleFD, cn.roleFile, cn.roleRaw = fd, f, raw
	cn.roleFn = cn.roleBack
}

// register counts the connection on its QP's CQs. Called with q.mu held.
func (cn *qconn) register() {
	q := cn.q
	leadable := q.scq == q.rcq && cn.roleRaw != nil
	for i, c := range [2]*cq{q.rcq, q.scq} {
		if i == 1 && c == q.rcq {
			break
		}
		c.mu.Lock()
		c.conns++
		c.sole = nil
		if c.conns == 1 && leadable {
			c.sole = cn
		}
		c.solo.Store(c.sole)
		c.mu.Unlock()
	}
	if w := cn.d.watch; w != nil && cn.roleRaw != nil {
		fd := -1
		cn.rd.raw.Control(func(s uintptr) { fd = int(s) })
		c := q.rcq
		c.mu.Lock()
		if cn.wslot < 0 && fd >= 0 {
			cn.wslot = w.alloc(cn, fd)
		}
		c.mu.Unlock()
	}
}

// unregister forgets the connection; the reader calls it as it exits, holding the role.
func (cn *qconn) unregister() {
	q := cn.q
	for i, c := range [2]*cq{q.rcq, q.scq} {
		if i == 1 && c == q.rcq {
			break
		}
		c.mu.Lock()
		c.conns--
		if c.sole == cn {
			c.sole = nil
			c.solo.Store(nil)
		}
		if c == q.rcq {
			cn.role = roleFault // never idle again: no waiter takes it
			if cn.wslot >= 0 {
				cn.d.watch.release(cn.wslot)
				cn.wslot = -1
			}
		}
		c.mu.Unlock()
	}
	if cn.roleFile != nil {
		cn.roleFile.Close()
	}
}

// postRole makes the reader look at the role again. Called with the CQ's mu held.
func (cn *qconn) postRole() {
	cn.rolePosted = true
	unix.Write(cn.roleFD, eventOne[:])
}

// roleBack is the reader's RawConn callback on the role eventfd: it takes an idle (or
// faulted) role back, without a system call.
func (cn *qconn) roleBack(uintptr) bool {
	c := cn.q.rcq
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn.role != roleIdle && cn.role != roleFault {
		return false
	}
	if cn.role == roleFault {
		cn.bgFault = cn.leadFault
	}
	cn.role = roleBG
	cn.takenLocked()
	cn.c.setDirect(false) // the reader parks in the network poller again
	return true
}

// yieldRole offers the role to the CQ's eventfd waiter, if there is one, and parks until
// the role comes back. It reports whether it parked. Reader goroutine only, at a frame
// boundary.
func (cn *qconn) yieldRole() bool {
	c := cn.q.rcq
	c.mu.Lock()
	if c.sole != cn || !c.efBusy || c.closed || c.offer != nil {
		c.mu.Unlock()
		return false
	}
	cn.role = roleOffered
	c.offer = cn
	c.signalLocked()
	c.mu.Unlock()
	if err := cn.roleRaw.Read(cn.roleFn); err != nil {
		// Only the reader itself closes the eventfd, as it exits.
		panic("tcp: role eventfd failed under a parked reader: " + err.Error())
	}
	return true
}

// takeOfferLocked is called by the eventfd waiter when it wakes: it takes an offered role.
// The caller leads with it or releases it.
func (c *cq) takeOfferLocked() *qconn {
	cn := c.offer
	c.offer = nil
	return cn
}

// idleLeadLocked returns the sole connection if its role is idle, for a waiter to lead.
func (c *cq) idleLeadLocked() *qconn {
	if cn := c.sole; cn != nil && cn.role == roleIdle && c.leading == nil {
		return cn
	}
	return nil
}

// releaseLocked leaves cn's role idle (or to the reader, after a fault) and wakes the
// reader's poller, or, if watch is true and the device has an idle-role watch, leaves
// the wake-up to the watcher (watch.go). A leader that was kicked clears its read
// deadline first, under mu, so that no later leader's kick is lost.
func (c *cq) releaseLocked(cn *qconn, watch bool) {
	if c.leading == cn {
		c.leading = nil
		if c.ldKicked {
			c.ldKicked = false
			cn.c.SetReadDeadline(time.Time{})
		}
	}
	cn.role = roleIdle
	if cn.leadFault != nil {
		cn.role = roleFault
	} else if watch && cn.deferRoleLocked() {
		return
	} else {
		cn.idleLocked() // if nobody polls the network the eventfd is not seen: watch it too
	}
	cn.postRole()
}

// HandBack gives the reading role of the CQ's sole connection back to its reader
// goroutine now if a leader left it idle for the idle-role watch to hand back later
// (within two of its ticks). A process about to block somewhere other than CQ.Wait (a
// futex, a sleep) calls it so that peers' requests, passive-target ones included, are
// served while it sleeps rather than a tick or two later. It costs the role eventfd's
// write when there is an idle role, and nothing else otherwise; a later waiter leads
// again once the reader offers it the role.
func (c *cq) HandBack() {
	c.mu.Lock()
	if cn := c.sole; cn != nil && !c.closed {
		cn.wakeIdleLocked()
	}
	c.mu.Unlock()
}

// Progress handles what the peer of the CQ's sole connection has already sent, on the
// calling goroutine, if nobody reads that connection (a leader left its role idle). It
// takes the role, reads and handles the frames that have arrived, without waiting for
// more at a frame boundary (it does wait for the rest of a frame that has begun), and
// leaves the role idle again, or hands it to the reader goroutine if a waiter came
// meanwhile. It reports whether it handled a frame. It does nothing when the role is held
// (by a leader, or by the reader goroutine, which then serves the peer itself).
//
// A goroutine that spins on a condition that a peer's request sets (a remote atomic on
// this process's memory) calls it in its spin. The request is then served as soon as it
// lands, by the spinning goroutine, instead of by the reader goroutine after its wake-up
// through the network poller, or after the idle-role watcher's hand-back. Each call costs
// the CQ's lock and, with the role idle, a read(2).
func (c *cq) Progress() bool {
	c.mu.Lock()
	cn := c.idleLeadLocked()
	if cn == nil || c.closed {
		c.mu.Unlock()
		return false
	}
	cn.role = roleLead
	cn.takenLocked()
	c.leading = cn
	c.mu.Unlock()
	served := cn.serveReady()
	c.mu.Lock()
	// A waiter that came meanwhile sleeps on the eventfd or the channel, where nothing
	// but a push wakes it: the reader goroutine takes the role and reads for it.
	c.releaseLocked(cn, c.waiters == 0 && !c.efBusy)
	if c.n > 0 {
		c.wakeLocked(c.n)
	}
	c.mu.Unlock()
	return served
}

// serveReady is Progress's loop: it handles frames until a frame boundary finds nothing
// more to read, or a fault (left in leadFault, as a leader leaves it), and reports whether
// it handled one. Owed acks are flushed before each look, as the role is left idle after.
func (cn *qconn) serveReady() bool {
	c := cn.q.rcq
	cn.c.setDirect(true) // as for a leader: the socket stays out of the reader's poller
	cn.rd.poll = true
	defer func() { cn.rd.poll = false }()
	served := false
	for {
		if cn.rd.buffered() < hdrSize && cn.flushAck() != nil {
			cn.leadFault = faultIO
			return served
		}
		h, err := cn.rd.header()
		if err != nil {
			switch {
			case errors.Is(err, errNothing):
				if cn.hold > 0 && cn.flushHeld() != nil {
					cn.leadFault = faultIO
				}
			case errors.Is(err, errBadFrame):
				cn.leadFault = faultProtocol
			default:
				cn.leadFault = faultIO
			}
			return served
		}
		c.leaderBusy.Store(true)
		f := cn.frame(&h)
		c.leaderBusy.Store(false)
		if f != nil {
			cn.leadFault = f
			return served
		}
		served = true
	}
}

// kickLeaderLocked wakes a leader parked in Read.
func (c *cq) kickLeaderLocked() {
	c.ldKicked = true
	c.leading.c.SetReadDeadline(aLongTimeAgo)
}

// lead reads cn's frames on the waiting goroutine until a completion can be polled, ctx
// ends, the CQ closes or the connection faults (again: the caller waits another way).
// Called with mu held and cn's role taken (idle or offered); returns with mu released.
func (c *cq) lead(ctx context.Context, cn *qconn) (again bool, err error) {
	cn.role = roleLead
	cn.takenLocked()
	c.leading = cn
	c.efStop = false
	stop := c.watchLocked(ctx)
	c.mu.Unlock()
	again, err = cn.lead(ctx)
	c.mu.Lock()
	c.releaseLocked(cn, true)
	if c.n > 0 {
		c.wakeLocked(c.n) // completions are there for the other waiters too
	}
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	return again, err
}

// lead is the leader's loop; see cq.lead.
func (cn *qconn) lead(ctx context.Context) (bool, error) {
	c := cn.q.rcq
	cn.c.setDirect(true) // wait in ppoll on this thread (sock.go)
	for {
		c.mu.Lock()
		switch {
		case c.n > 0:
			c.mu.Unlock()
			if cn.hold > 0 && cn.flushHeld() != nil { // the role may be left idle next
				cn.leadFault = faultIO
				return true, nil
			}
			return false, nil
		case c.closed:
			c.mu.Unlock()
			return false, &verbs.Error{Op: "wait cq", Provider: providerName, Err: verbs.ErrClosed}
		case ctx.Err() != nil:
			c.mu.Unlock()
			return false, &verbs.Error{Op: "wait cq", Provider: providerName, Err: ctx.Err()}
		}
		c.efStop = false // a kick for an earlier wait
		c.mu.Unlock()
		if cn.rd.buffered() < hdrSize && cn.flushAck() != nil {
			cn.leadFault = faultIO
			return true, nil
		}
		h, err := cn.rd.header()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				cn.c.SetReadDeadline(time.Time{}) // kicked: look again
				continue
			}
			cn.leadFault = faultIO
			if errors.Is(err, errBadFrame) {
				cn.leadFault = faultProtocol
			}
			return true, nil
		}
		c.leaderBusy.Store(true)
		f := cn.frame(&h)
		c.leaderBusy.Store(false)
		if f != nil {
			cn.leadFault = f
			return true, nil
		}
	}
}
