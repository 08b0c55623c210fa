package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "tcpstream:", err)
		os.Exit(1)
	}
}

// sendOpts are the sender's flags.
type sendOpts struct {
	to       string
	duration time.Duration
	startAt  int64
	msg      int
	lowat    int    // TCP_NOTSENT_LOWAT in bytes; 0 leaves the kernel's default
	cc       string // TCP_CONGESTION; "" leaves the kernel's default
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: tcpstream sink --listen ADDR | tcpstream send --to ADDR [--duration 3s] [--start-at UNIXNANO] [--msg 1M] [--notsent-lowat 32K] [--congestion cubic]")
	}
	fs := pflag.NewFlagSet("tcpstream "+args[0], pflag.ContinueOnError)
	switch args[0] {
	case "sink":
		listen := fs.String("listen", "", "address to listen on (host:port)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *listen == "" {
			return errors.New("sink: --listen is required")
		}
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "tcpstream sink listening on %s\n", ln.Addr())
		return sink(ctx, ln)
	case "send":
		o := sendOpts{msg: 1 << 20}
		fs.StringVar(&o.to, "to", "", "sink address (host:port)")
		fs.DurationVar(&o.duration, "duration", 3*time.Second, "how long to stream")
		fs.Int64Var(&o.startAt, "start-at", 0, "start at this wall-clock time, nanoseconds since the epoch (0: now)")
		fs.Var((*benchkit.Size)(&o.msg), "msg", "bytes per write")
		fs.Var((*benchkit.Size)(&o.lowat), "notsent-lowat", "set TCP_NOTSENT_LOWAT to this many bytes, as gorma's tcp provider does on connections that carry traffic both ways (0: the kernel's default)")
		fs.StringVar(&o.cc, "congestion", "", "set TCP_CONGESTION to this algorithm, as gorma's tcp provider does (cubic unless GORMA_TCP_CONGESTION says otherwise; empty: the kernel's default)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if o.to == "" || o.duration < 6*time.Millisecond || o.msg < 1 || o.lowat < 0 {
			return errors.New("send: want --to, a --duration of at least 6ms, a positive --msg and a --notsent-lowat of 0 or more")
		}
		r, err := send(ctx, o)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "tcpstream %s -> %s: %.3f GB/s (%d bytes in %.3fs window, %d bytes in all)\n",
			r.from, o.to, r.gbps(), r.windowBytes, r.window.Seconds(), r.total)
		return nil
	}
	return fmt.Errorf("unknown mode %q: want sink or send", args[0])
}

// sink reads every connection ln accepts until ctx ends.
func sink(ctx context.Context, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 4<<20)
			for {
				if _, err := c.Read(buf); err != nil {
					return
				}
			}
		}()
	}
}

// result is a sender's measurement.
type result struct {
	from        string
	window      time.Duration
	windowBytes int64
	total       int64
}

func (r result) gbps() float64 { return float64(r.windowBytes) / r.window.Seconds() / 1e9 }

// send streams to o.to for o.duration from o.startAt and measures the middle of it.
func send(ctx context.Context, o sendOpts) (result, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", o.to)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		if o.lowat > 0 {
			if err := benchkit.Setsockopt(tc, func(fd int) error {
				return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, o.lowat)
			}); err != nil {
				return result{}, fmt.Errorf("send: TCP_NOTSENT_LOWAT %d: %w", o.lowat, err)
			}
		}
		if o.cc != "" {
			if err := benchkit.SetCongestion(tc, o.cc); err != nil {
				return result{}, fmt.Errorf("send: --congestion %s (TCP_CONGESTION): %w", o.cc, err)
			}
		}
	}
	start := time.Now()
	if o.startAt > 0 {
		start = time.Unix(0, o.startAt)
		select {
		case <-time.After(time.Until(start)):
		case <-ctx.Done():
			return result{}, ctx.Err()
		}
	}
	buf := make([]byte, o.msg)
	for i := range buf {
		buf[i] = byte(i)
	}
	cut := o.duration / 6
	from, to, end := start.Add(cut), start.Add(o.duration-cut), start.Add(o.duration)
	r := result{from: c.LocalAddr().String()}
	var t0, t1 time.Time
	var b0, b1 int64
	for {
		n, err := c.Write(buf)
		r.total += int64(n)
		if err != nil {
			return result{}, err
		}
		now := time.Now()
		switch {
		case t0.IsZero() && !now.Before(from):
			t0, b0 = now, r.total
		case t1.IsZero() && !now.Before(to):
			t1, b1 = now, r.total
		}
		if !now.Before(end) {
			break
		}
	}
	if t0.IsZero() || t1.IsZero() || !t1.After(t0) {
		return result{}, fmt.Errorf("send: --duration %v too short for --msg %d bytes: no window measured", o.duration, o.msg)
	}
	r.window, r.windowBytes = t1.Sub(t0), b1-b0
	return r, nil
}
