package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/transport/verbs/tcp"
)

// The floors: what the providers are measured against, taken by the same program in the
// same run. The flag ping-pong is the cross-core round trip of this machine (the best any
// same-host message can do), raw TCP the best the tcp provider can do, memcpy the best a
// shared-memory copy can do. A fresh segment what registration costs without the arena.

// Offsets of the flag ping-pong words in their shared page: one cache-line pair apart, so
// that each flag has its lines to itself (adjacent-line prefetch pairs lines).
const (
	pingOff  = 0
	pongOff  = 128
	flagSize = 4096
	pageSize = 4096
)

// flagSegment is the shared page of the flag ping-pong: a memfd mapped in both processes.
type flagSegment struct {
	file *os.File
	mem  []byte
}

// newFlagSegment creates and maps the page in the parent; the peer inherits file.
func newFlagSegment() (*flagSegment, error) {
	fd, err := unix.MemfdCreate("verbsperf-flag", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "verbsperf-flag")
	if err := unix.Ftruncate(fd, flagSize); err != nil {
		f.Close()
		return nil, fmt.Errorf("ftruncate: %w", err)
	}
	mem, err := mapFlag(fd)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &flagSegment{file: f, mem: mem}, nil
}

func mapFlag(fd int) ([]byte, error) {
	mem, err := unix.Mmap(fd, 0, flagSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap flag page: %w", err)
	}
	return mem, nil
}

func (f *flagSegment) close() {
	if f == nil {
		return
	}
	unix.Munmap(f.mem)
	f.file.Close()
}

func flagWord(mem []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&mem[off])) }

// floors measures the floors o selects, as tables of their own and paired with the
// provider figures they are compared with. Floors that need the peer use it; conn is the
// parent's TCP connection to it and scratch the memcpy buffers, both made on first use.
type floors struct {
	o       *options
	r       *reporter
	peer    *peerProc
	flag    *flagSegment
	conn    net.Conn
	seq     uint64
	scratch [2][]byte // memcpy source and destination
}

func (f *floors) close() {
	if f.conn != nil {
		f.conn.Close()
	}
	for _, b := range f.scratch {
		if b != nil {
			unix.Munmap(b)
		}
	}
}

// flagPingPong: the parent stores a value in one cache line, the peer spins on it and
// answers in another. Half round trip.
func (f *floors) flagPingPong(ctx context.Context) error {
	f.r.begin(Result{Test: "flag_pp", Provider: "raw", Kind: kindLatency,
		Title: "shared-memory flag ping-pong between the two processes (memfd, release stores and spins); half round trip"})
	m, err := f.flagMeasure(ctx, 8)
	if err != nil {
		return err
	}
	f.r.row(m.latency(8, 0.5))
	return nil
}

// flagMeasure runs the flag ping-pong with the iteration count of size n.
func (f *floors) flagMeasure(ctx context.Context, n int) (measurement, error) {
	warm, iters := f.o.latIters(n)
	seq := f.seq
	f.seq += uint64(warm + iters)
	if err := f.peer.start(msg{Op: "flag_pp", Iters: warm + iters, Seq: seq}); err != nil {
		return measurement{}, err
	}
	ping, pong := flagWord(f.flag.mem, pingOff), flagWord(f.flag.mem, pongOff)
	m, err := measure(warm, iters, func(i int) error {
		v := seq + uint64(i) + 1
		storeRelease(ping, v)
		return spinUntil(ctx, pong, v)
	})
	if err != nil {
		return m, fmt.Errorf("flag_pp: %w", err)
	}
	_, err = f.peer.wait()
	return m, err
}

// dial connects the parent to the peer over TCP loopback, once.
func (f *floors) dial(ctx context.Context) error {
	if f.conn != nil {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	if _, err := f.peer.call(msg{Op: "tcp_dial", Addr: ln.Addr().String()}); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok {
		ln.(*net.TCPListener).SetDeadline(d)
	}
	if f.conn, err = ln.Accept(); err != nil {
		return err
	}
	tuneRaw(f.conn)
	return nil
}

// tuneRaw gives a raw TCP floor connection the tcp provider's congestion control
// (tcp.DefaultCongestion, as a device opened without tcp.Options.Congestion sets it), so
// that the floor and the provider run the same kernel algorithm. Where the kernel refuses
// it, the provider keeps the kernel's default and so does the floor.
func tuneRaw(c net.Conn) {
	_ = benchkit.SetCongestion(c, tcp.DefaultCongestion)
}

// tcpPingPong: 8-byte messages over TCP loopback (Nagle off), echoed by the peer. Full
// round trip, as an RDMA read is one.
func (f *floors) tcpPingPong(ctx context.Context) error {
	f.r.begin(Result{Test: "tcp_pp", Provider: "raw", Kind: kindLatency,
		Title: "TCP loopback ping-pong, 8-byte messages, TCP_NODELAY; full round trip"})
	m, err := f.tcpMeasure(ctx, 8)
	if err != nil {
		return err
	}
	f.r.row(m.latency(8, 1))
	return nil
}

// tcpMeasure runs the TCP ping-pong with n-byte messages.
func (f *floors) tcpMeasure(ctx context.Context, n int) (measurement, error) {
	if err := f.dial(ctx); err != nil {
		return measurement{}, fmt.Errorf("tcp_pp: %w", err)
	}
	warm, iters := f.o.latIters(n)
	if err := f.peer.start(msg{Op: "tcp_echo", Size: n, Iters: warm + iters}); err != nil {
		return measurement{}, err
	}
	buf := make([]byte, n)
	m, err := measure(warm, iters, func(int) error {
		if _, err := f.conn.Write(buf); err != nil {
			return err
		}
		_, err := io.ReadFull(f.conn, buf)
		return err
	})
	if err != nil {
		return m, fmt.Errorf("tcp_pp: %w", err)
	}
	_, err = f.peer.wait()
	return m, err
}

// tcpStream: the parent writes iters messages of each size, the peer reads each into the
// same buffer of that size (as write_bw's writes all land on the same bytes of the target)
// and acknowledges the last byte. timed up to the acknowledgement.
func (f *floors) tcpStream(ctx context.Context) error {
	f.r.begin(Result{Test: "tcp_stream", Provider: "raw", Kind: kindBandwidth,
		Title: "TCP loopback stream, one write per message, to an acknowledgement of the last byte"})
	for _, n := range f.o.sizes() {
		iters, reps := f.o.bwIters(n)
		if _, err := f.streamRate(ctx, n, max(iters/10, 2)); err != nil {
			return err
		}
		var gb []float64
		for range reps {
			g, err := f.streamRate(ctx, n, iters)
			if err != nil {
				return err
			}
			gb = append(gb, g)
		}
		f.r.row(bwRow(n, iters, gb))
	}
	return nil
}

// streamRate streams iters messages of n bytes and returns GB/s.
func (f *floors) streamRate(ctx context.Context, n, iters int) (float64, error) {
	if err := f.dial(ctx); err != nil {
		return 0, fmt.Errorf("tcp_stream: %w", err)
	}
	if len(f.scratch[0]) < n {
		if err := f.mapScratch(); err != nil {
			return 0, err
		}
	}
	msgBuf := f.scratch[0][:n]
	if err := f.peer.start(msg{Op: "tcp_sink", Size: n, Total: int64(n) * int64(iters)}); err != nil {
		return 0, err
	}
	start := time.Now()
	for range iters {
		if _, err := f.conn.Write(msgBuf); err != nil {
			return 0, fmt.Errorf("tcp_stream: %w", err)
		}
	}
	var ack [1]byte
	if _, err := io.ReadFull(f.conn, ack[:]); err != nil {
		return 0, fmt.Errorf("tcp_stream: %w", err)
	}
	d := time.Since(start)
	_, err := f.peer.wait()
	return gbps(int64(n)*int64(iters), d), err
}

// floorPeer is the peer's side of the floors.
type floorPeer struct {
	flag []byte
	conn net.Conn
	buf  []byte
}

func (fp *floorPeer) close() {
	if fp.flag != nil {
		unix.Munmap(fp.flag)
	}
	if fp.conn != nil {
		fp.conn.Close()
	}
}

func (fp *floorPeer) handle(ctx context.Context, m msg) error {
	switch m.Op {
	case "flag_pp":
		if fp.flag == nil {
			mem, err := mapFlag(flagFD)
			if err != nil {
				return err
			}
			fp.flag = mem
		}
		ping, pong := flagWord(fp.flag, pingOff), flagWord(fp.flag, pongOff)
		for i := range m.Iters {
			v := m.Seq + uint64(i) + 1
			if err := spinUntil(ctx, ping, v); err != nil {
				return err
			}
			storeRelease(pong, v)
		}
		return nil
	case "tcp_dial":
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", m.Addr)
		if err != nil {
			return err
		}
		fp.conn = c
		tuneRaw(c)
		return nil
	}
	if fp.conn == nil {
		return errors.New(m.Op + " before tcp_dial")
	}
	if d, ok := ctx.Deadline(); ok {
		fp.conn.SetDeadline(d)
	}
	switch m.Op {
	case "tcp_echo":
		buf := make([]byte, m.Size)
		for range m.Iters {
			if _, err := io.ReadFull(fp.conn, buf); err != nil {
				return err
			}
			if _, err := fp.conn.Write(buf); err != nil {
				return err
			}
		}
		return nil
	case "tcp_sink":
		// Each message lands on the same m.Size bytes, as every write of write_bw lands on
		// the same m.Size bytes of the target's region: a message larger than the cache
		// then costs the sink what it costs the target.
		size := max(m.Size, 1<<20)
		if len(fp.buf) < size {
			fp.buf = make([]byte, size)
			for i := range fp.buf { // fault in before the timing starts
				fp.buf[i] = 1
			}
		}
		msgLen := int64(len(fp.buf))
		if m.Size > 0 {
			msgLen = int64(m.Size)
		}
		for left, off := m.Total, int64(0); left > 0; {
			k, err := fp.conn.Read(fp.buf[off:min(msgLen, off+left)])
			if err != nil {
				return err
			}
			left -= int64(k)
			if off += int64(k); off == msgLen {
				off = 0
			}
		}
		_, err := fp.conn.Write([]byte{1})
		return err
	}
	return fmt.Errorf("unknown command %q", m.Op)
}
