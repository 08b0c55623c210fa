package tcp

import (
	"net"
	"os"
	"runtime/metrics"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// sock is a connected socket whose readiness this package routes itself. A leader
// (lead.go) can wait for the peer's bytes in ppoll(2) on its own thread, woken directly
// by the kernel, as a blocking raw socket ping-pong is. The connection's reader and
// writer goroutines still park in Go's network poller and hold no thread.
//
// The socket is not in the network poller itself: two epoll instances of its own are,
// each registered there as a file. in holds the socket for EPOLLIN while the reading role
// is the reader goroutine's (direct off), and out holds it for EPOLLOUT always. A
// goroutine that must wait for data or room parks on in or out in the poller, which the
// socket's readiness reaches through the nested epoll. A leader turns direct on, which
// takes the socket out of in (one epoll_ctl at each change of the role between the reader
// and a leader, not at each wait), and waits in ppoll on the socket and an eventfd
// (rwake) that kicks it. With the socket in no epoll set that a poller thread sleeps on,
// an arrival wakes the leader's thread and no other.
//
// Why. Through the network poller, an arrival first wakes the thread parked in
// epoll_pwait, which readies the waiting goroutine and, with an idle P, wakes a further
// thread to look for work. On a virtual machine each hop between vCPUs may be the wake-up
// of a halted vCPU. So on TCP loopback between two processes a short ping-pong with
// blocking system calls on their own threads is faster, and steadier from run to run,
// than the same ping-pong through the poller (`go test -bench
// 'ProcRead8|ProcRawTCPPingPong8' ./transport/verbs/tcp` measures both). A leader is a
// goroutine that would block anyway (CQ.Wait), so holding its thread costs nothing; the
// Go runtime hands its processor to other goroutines if it stays blocked.
//
// Closing. Close marks the socket closed and wakes every waiter (through rwake and past
// deadlines on in and out), whose operations then fail with net.ErrClosed. The
// descriptors are closed when the last operation in progress (Read, Write, Control)
// returns, so that no waiter ever polls a descriptor number that was closed and reused.
// Close never blocks: it is called under the QP's and the send queue's locks.
type sock struct {
	fd    int // the socket (non-blocking), a duplicate of the dialled or accepted one
	rwake int // eventfd: wakes a leader waiting in ppoll (Close, SetReadDeadline)

	in, out       *os.File // epoll instances holding the socket, in Go's network poller
	inFD          int      // in's descriptor, for epoll_ctl
	inRaw, outRaw syscall.RawConn
	inFn, outFn   func(uintptr) bool // inCall and outCall, bound once
	rfn, wfn      func(fd uintptr) bool
	missed        bool // the last direct attempt found nothing to read (reader only)
	// spin is how long a direct Read keeps trying before it waits in ppoll (0: not at
	// all); set at creation (spinOf).
	spin time.Duration
	// spinHits counts Reads that a spin served (reader only; for tests).
	spinHits int64
	// spinMisses counts spins that ended without data (for tests, which wait for one).
	spinMisses atomic.Int64
	// idle gates the reader goroutine's spin (spinIdle), set by its connection (newQconn:
	// soleOnCQ and othersIdle on sched) or a test; nil: the reader never spins.
	idle  func() bool
	sched schedSamples
	// quiet gates a leader's spin (spinRead): it reports whether the connection has
	// nothing queued to send (txq.quiet); nil: no gate.
	quiet func() bool

	// state is refs<<1 | closed: refs counts operations in progress.
	state atomic.Int64
	// rdl is the read deadline of direct waits in Unix nanoseconds, 0 for none.
	rdl atomic.Int64
	// direct: the socket is out of in, and reads wait in ppoll. Changed only by the
	// goroutine that holds the reading role, as it takes the role (lead.go).
	direct atomic.Bool
}

// newSock takes c's socket out of the network poller. The socket gets a descriptor of
// its own, registered in in and out, and c is closed (which removes c's descriptor from
// the poller, and not the socket, which the duplicate keeps open). c is closed whatever
// the outcome.
func newSock(c *net.TCPConn) (*sock, error) {
	defer c.Close()
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl", derr)
	}
	s := &sock{fd: fd, rwake: -1, inFD: -1}
	fail := func(op string, err error) (*sock, error) {
		s.closeFDs()
		return nil, os.NewSyscallError(op, err)
	}
	// The duplicate shares the socket's open file description, so it is non-blocking
	// like c's descriptor; set it anyway, as every wait relies on it.
	if err := unix.SetNonblock(fd, true); err != nil {
		return fail("fcntl", err)
	}
	if s.rwake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fail("eventfd", err)
	}
	for i, ev := range [2]uint32{unix.EPOLLIN | unix.EPOLLRDHUP, unix.EPOLLOUT} {
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return fail("epoll_create1", err)
		}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: ev, Fd: int32(fd)}); err != nil {
			unix.Close(ep)
			return fail("epoll_ctl", err)
		}
		if err := unix.SetNonblock(ep, true); err != nil { // so that os.NewFile polls it
			unix.Close(ep)
			return fail("fcntl", err)
		}
		f := os.NewFile(uintptr(ep), "tcp-socket-epoll")
		r, err := f.SyscallConn()
		if err != nil {
			f.Close()
			s.closeFDs()
			return nil, err
		}
		if i == 0 {
			s.in, s.inFD, s.inRaw = f, ep, r
		} else {
			s.out, s.outRaw = f, r
		}
	}
	s.inFn, s.outFn = s.inCall, s.outCall
	return s, nil
}

func (s *sock) closeFDs() {
	for _, fd := range [2]int{s.fd, s.rwake} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	for _, f := range [2]*os.File{s.in, s.out} {
		if f != nil {
			f.Close()
		}
	}
}

// incref starts an operation; false if the socket is closed.
func (s *sock) incref() bool { return s.ref(0) }

// ref takes a reference and ors mark (1: closed) into the state, unless the socket is
// already closed.
func (s *sock) ref(mark int64) bool {
	for {
		st := s.state.Load()
		if st&1 != 0 {
			return false
		}
		if s.state.CompareAndSwap(st, (st+2)|mark) {
			return true
		}
	}
}

// decref ends an operation; the last one after Close closes the descriptors.
func (s *sock) decref() {
	if s.state.Add(-2) == 1 {
		s.closeFDs()
	}
}

// Close marks the socket closed, wakes its waiters (whose operations then fail with
// net.ErrClosed) and closes the descriptors once no operation is in progress. Later
// calls do nothing.
func (s *sock) Close() error {
	if !s.ref(1) {
		return nil
	}
	unix.Write(s.rwake, eventOne[:])
	s.in.SetReadDeadline(aLongTimeAgo)
	s.out.SetReadDeadline(aLongTimeAgo)
	s.decref()
	return nil
}

// setDirect moves the socket out of in (on) or back into it (off), if it is not there
// already. The goroutine taking the reading role calls it, before it reads.
func (s *sock) setDirect(on bool) {
	if s.direct.Load() == on || !s.incref() {
		return
	}
	s.direct.Store(on)
	if on {
		unix.EpollCtl(s.inFD, unix.EPOLL_CTL_DEL, s.fd, nil)
	} else {
		unix.EpollCtl(s.inFD, unix.EPOLL_CTL_ADD, s.fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(s.fd)})
	}
	s.decref()
}

// SetReadDeadline sets the deadline of direct read waits, and wakes such a waiter so that
// it sees it: a deadline in the past ends the wait in progress with
// os.ErrDeadlineExceeded (a leader's kick, lead.go); the zero time clears it.
func (s *sock) SetReadDeadline(t time.Time) error {
	var ns int64
	if !t.IsZero() {
		ns = max(t.UnixNano(), 1)
	}
	s.rdl.Store(ns)
	if !s.incref() {
		return net.ErrClosed
	}
	if ns != 0 { // clearing it needs no wake-up
		unix.Write(s.rwake, eventOne[:])
	}
	s.decref()
	return nil
}

// Control calls f with the socket's descriptor (syscall.RawConn).
func (s *sock) Control(f func(fd uintptr)) error {
	if !s.incref() {
		return net.ErrClosed
	}
	f(uintptr(s.fd))
	s.decref()
	return nil
}

// Read calls f until it reports done, waiting for the socket to be readable whenever it
// reports not done (syscall.RawConn): in ppoll when direct, else parked in the network
// poller on in. It fails with net.ErrClosed once the socket is closed and, when direct,
// with os.ErrDeadlineExceeded past the read deadline. One reader at a time (the holder
// of the reading role, which alone changes direct).
func (s *sock) Read(f func(fd uintptr) bool) error {
	if !s.incref() {
		return net.ErrClosed
	}
	defer s.decref()
	if !s.direct.Load() {
		if s.spin > 0 && s.idle != nil {
			if s.spinIdle(f) {
				s.spinHits++
				return nil
			}
			s.spinMisses.Add(1)
		}
		s.rfn = f
		err := s.inRaw.Read(s.inFn)
		s.rfn = nil
		return s.closedOr(err)
	}
	for {
		// Wait first if the last attempt found nothing, as in a ping-pong, where the
		// first read of every wait would fail: that saves it. A stream's attempts find
		// data and keep trying first. A device that spins tries for its budget first.
		if s.missed && s.spin > 0 {
			if s.spinRead(f) {
				s.missed = false
				s.spinHits++
				return nil
			}
			s.spinMisses.Add(1)
		}
		if s.missed {
			if err := s.waitDirect(); err != nil {
				return err
			}
		}
		if s.missed = !f(uintptr(s.fd)); !s.missed {
			return nil
		}
	}
}

// spinRead calls f (a non-blocking attempt) until it reports done, for at most s.spin,
// and reports whether it did. It stops at once when the socket is closed or a read
// deadline is set (a leader's kick), which the wait then reports.
//
// Why. A leader blocked in ppoll sleeps on its processor, and the peer's answer must
// wake it: on a virtual machine a halted virtual CPU, whose wake-up is most of a loopback
// round trip. One that keeps asking the socket sees the answer as the peer's system call
// queues it, as Open MPI's tcp transport, which polls, does. With both ranks of a pair on
// their own cores this makes a short tcp ping-pong much faster than blocking at once
// (`golaunch -n 2 --transport tcp bin/pingpong`, against -x GORMA_PROGRESS=block, measures
// it; `make compare` sets it beside Open MPI). Each attempt is a read(2) of a non-blocking
// socket.
//
// It does not spin while the connection's writer goroutine has frames to send (quiet
// false, before the spin or at a look at the clock). The waiter's answers then come
// behind the stream it is sending, and each read(2) takes the socket's lock, which the
// writer's writev(2) holds while it copies. A read waits up to a whole copy, and the
// copy waits for the reads, which slows a stream of large RDMA writes (`bin/verbsperf
// --provider tcp --test write_bw` measures it).
func (s *sock) spinRead(f func(fd uintptr) bool) bool { return s.spinLoop(f, false, s.quiet) }

// spinIdle is the reader goroutine's spin (direct off): while no other goroutine of the
// process runs or waits to run, it calls f, a non-blocking attempt, until f reports done,
// for at most s.spin, and reports whether it did. After each empty attempt it gives its
// core to any other thread waiting for it (sched_yield). It stops at once when the
// socket is closed or a read deadline is set, when another goroutine starts to run, and
// past its budget; the caller then parks in the network poller.
//
// Why. A passive target's requests are served by this goroutine. A goroutine parked in the
// poller is woken through the poller's thread. On this machine kind that is the wake-up of
// a halted virtual CPU, and then a hand-off to the thread that runs the goroutine. With
// the target's application blocked, a short RDMA read takes longer than a raw Go socket
// round trip without this spin, and far less with it (`go test -bench
// 'ProcRead8Hybrid|ProcRawTCPPingPong8' ./transport/verbs/tcp` measures both). The gates
// keep it off a core that has other work: with each process's application polling its
// memory (`bin/verbsperf --provider tcp --test write_pp` on 2 cores), an ungated spin runs
// 4 threads on 2 cores and is slower than parking at once. Both gates are needed: with the
// idle check alone, a waiter that this goroutine's completion woke waits for the core the
// spin keeps, which the yield gives.
func (s *sock) spinIdle(f func(fd uintptr) bool) bool {
	return s.spinLoop(f, true, s.idle)
}

// spinLoop is both spins: it calls f until f reports done, for at most s.spin, and
// reports whether it did; it stops at once when the socket is closed or a read deadline
// is set. yield gives the processor away (sched_yield) after each empty attempt; gate,
// if not nil, is looked at before the first attempt and then with the clock, every
// spinCheckEvery attempts, and ends the spin when false.
func (s *sock) spinLoop(f func(fd uintptr) bool, yield bool, gate func() bool) bool {
	if gate != nil && !gate() {
		return false
	}
	end := time.Now().Add(s.spin)
	for i := 1; ; i++ {
		if f(uintptr(s.fd)) {
			return true
		}
		if s.state.Load()&1 != 0 || s.rdl.Load() != 0 {
			return false
		}
		if yield {
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
		if i%spinCheckEvery == 0 && (time.Now().After(end) || gate != nil && !gate()) {
			return false
		}
	}
}

// schedSamples are the runtime's counts of goroutines running and runnable, read by
// othersIdle; a goroutine in a system call (blocked in a futex, a ppoll, a read) is in
// neither.
type schedSamples [2]metrics.Sample

// othersIdle reports whether the calling goroutine is the only one of the process that
// runs Go code or waits to: one read of runtime/metrics, cheap next to a system call.
func othersIdle(s *schedSamples) bool {
	if s[0].Name == "" {
		s[0].Name = "/sched/goroutines/running:goroutines"
		s[1].Name = "/sched/goroutines/runnable:goroutines"
	}
	metrics.Read(s[:])
	return s[0].Value.Uint64()+s[1].Value.Uint64() <= 1
}

// spinCheckEvery is how many attempts of spinRead pass between looks at the clock.
const spinCheckEvery = 8

// spinOf is the direct-read spin of a device whose CQs wait in mode, with budget spin
// (verbs.Config's Wait and Spin). Only a hybrid wait leads with a spin (a WaitSpin CQ
// polls its ring and never leads; WaitBlock blocks at once).
func spinOf(mode verbs.WaitMode, spin time.Duration) time.Duration {
	if mode == verbs.WaitHybrid {
		return max(spin, 0)
	}
	return 0
}

// Write calls f until it reports done, parked in the network poller on out whenever it
// reports not done (syscall.RawConn). It fails with net.ErrClosed once the socket is
// closed. One writer at a time: PostSend's attempt (done at once) writes only while the
// send queue is empty, its writer goroutine only while it is not. f runs inside out's RawConn, after the poller has reset
// out's readiness: an attempt made before that could fail just before the socket got room,
// and the reset would then lose the wake-up.
func (s *sock) Write(f func(fd uintptr) bool) error {
	if !s.incref() {
		return net.ErrClosed
	}
	defer s.decref()
	s.wfn = f
	err := s.outRaw.Read(s.outFn)
	s.wfn = nil
	return s.closedOr(err)
}

// closedOr is err, or net.ErrClosed if the socket was closed (a wait that Close ended).
func (s *sock) closedOr(err error) error {
	if s.state.Load()&1 != 0 {
		return net.ErrClosed
	}
	return err
}

// inCall and outCall are the callbacks given to in's and out's RawConn: the caller's f on
// the socket until it is done, or until the socket is closed.
func (s *sock) inCall(uintptr) bool {
	return s.state.Load()&1 != 0 || s.rfn(uintptr(s.fd))
}

func (s *sock) outCall(uintptr) bool {
	return s.state.Load()&1 != 0 || s.wfn(uintptr(s.fd))
}

// waitDirect blocks in ppoll until the socket is readable (or reports an error or a
// hang-up, which the caller's next attempt meets), the socket is closed, or the read
// deadline passes. A wake-up on rwake drains it and checks again, so a Close or a
// deadline set between the checks and the ppoll is never missed. The caller holds a
// reference, which keeps the descriptors open.
func (s *sock) waitDirect() error {
	for {
		if s.state.Load()&1 != 0 {
			return net.ErrClosed
		}
		var tsp uintptr
		var ts unix.Timespec
		if dl := s.rdl.Load(); dl != 0 {
			left := dl - time.Now().UnixNano()
			if left <= 0 {
				return os.ErrDeadlineExceeded
			}
			ts = unix.NsecToTimespec(left)
			tsp = uintptr(unsafe.Pointer(&ts))
		}
		fds := [2]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN | unix.POLLRDHUP}, {Fd: int32(s.rwake), Events: unix.POLLIN}}
		_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 2, tsp, 0, 0, 0)
		switch {
		case e == unix.EINTR:
			continue
		case e != 0:
			return os.NewSyscallError("ppoll", e)
		case fds[1].Revents != 0:
			var b [8]byte
			unix.Read(s.rwake, b[:])
			continue
		case fds[0].Revents != 0:
			return nil
		}
	}
}
