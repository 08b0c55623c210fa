package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/idlewatch"
	"github.com/gorma-hpc/gorma/transport/verbs/tcp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process exit: 0 on success, 1 on a failed run, 2 on bad flags.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "verbsperf: %v\n", err)
		return 2
	}
	switch {
	case o.watcher:
		err = runWatcher(stdin)
	case o.peer:
		err = runPeer(stdin, stdout)
	default:
		err = runBench(o, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "verbsperf: %v\n", err)
		return 1
	}
	return 0
}

// deviceConfig is the verbs configuration of both processes' devices of provider.
func deviceConfig(provider string, wait verbs.WaitMode, secret []byte, name string) verbs.Config {
	cfg := verbs.Config{Wait: wait, Name: name}
	if provider == "tcp" {
		cfg.Provider = tcp.Options{Secret: secret}
	}
	return cfg
}

func peerConfig(m msg, secret []byte) verbs.Config {
	return deviceConfig(m.Provider, verbs.WaitMode(m.Wait), secret, "verbsperf peer")
}

// runBench starts the peer, measures the floors and then each provider, and reports.
func runBench(o *options, stdout, stderr io.Writer) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	text := stdout
	if o.jsonOut == "-" {
		text = io.Discard
	}
	r := newReporter(text, o)

	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	flag, err := newFlagSegment()
	if err != nil {
		return err
	}
	defer flag.close()
	// The watcher and the peer start before any device opens: starting a process with a
	// watch's bell as an inherited file makes the bell blocking until its device opens.
	var watch *watchers
	var peerWatch *idlewatch.Files
	if o.idleWatch && slices.Contains(o.providers, "tcp") && anyProviderTest(o) {
		if watch, err = startWatcher(stderr); err != nil {
			return err
		}
		defer watch.stop()
		peerWatch = &watch.peer
	}
	peer, err := startPeer(secret, flag.file, peerWatch, stderr)
	if err != nil {
		return err
	}
	defer peer.stop()

	f := &floors{o: o, r: r, peer: peer, flag: flag}
	defer f.close()
	if err := runFloors(ctx, f); err != nil {
		return err
	}
	var failed []error
	seq := f.seq
	for _, p := range o.providers {
		if !anyProviderTest(o) {
			break
		}
		b := &bench{o: o, r: r, peer: peer, f: f, seq: seq, watch: watch}
		err := runProvider(ctx, b, p, secret)
		seq = b.seq
		if err != nil {
			if peer.pending != "" {
				// The peer is stuck in a loop we abandoned: nothing more can run.
				return fmt.Errorf("%s: %w", p, err)
			}
			fmt.Fprintf(stderr, "verbsperf: %s: %v\n", p, err)
			r.skip(Result{Test: "all", Provider: p}, err.Error())
			failed = append(failed, fmt.Errorf("%s: %w", p, err))
		}
	}
	if err := r.finish(o.jsonOut, stdout, time.Since(start)); err != nil {
		return err
	}
	return errors.Join(failed...)
}

func anyProviderTest(o *options) bool {
	for _, t := range providerTests {
		if o.has(t) {
			return true
		}
	}
	return false
}

func runFloors(ctx context.Context, f *floors) error {
	steps := []struct {
		name string
		run  func() error
	}{
		{"flag_pp", func() error { return f.flagPingPong(ctx) }},
		{"tcp_pp", func() error { return f.tcpPingPong(ctx) }},
		{"tcp_stream", func() error { return f.tcpStream(ctx) }},
		{"memcpy", f.memcpy},
		{"segment", f.segment},
	}
	for _, st := range steps {
		if f.o.has(st.name) {
			if err := st.run(); err != nil {
				return err
			}
		}
	}
	return nil
}

// runProvider opens and connects a session of provider in both processes and runs the
// selected tests on it.
func runProvider(ctx context.Context, b *bench, provider string, secret []byte) error {
	o := b.o
	sizes := o.sizes()
	bufSize := sizes[len(sizes)-1]
	s, err := openSession(provider, b.watch.config(provider, deviceConfig(provider, o.wait, secret, "verbsperf")), bufSize)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer s.close()
	b.s = s
	reply, err := b.peer.call(msg{Op: "open", Provider: provider, Wait: int(o.wait), MaxSize: bufSize})
	if err != nil {
		return err
	}
	info := s.info()
	if err := b.peer.start(msg{Op: "connect", Endpoint: info.Endpoint, BufKey: info.BufKey, AtomKey: info.AtomKey}); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, stepTimeout)
	err = s.connect(cctx, endpointInfo{Endpoint: reply.Endpoint, BufKey: reply.BufKey, AtomKey: reply.AtomKey})
	cancel()
	if _, perr := b.peer.wait(); err == nil {
		err = perr
	}
	if err != nil {
		return err
	}

	steps := []struct {
		name string
		run  func() error
	}{
		{"write_lat", func() error { return b.writeLat(ctx) }},
		{"read_lat", func() error { return b.readLat(ctx) }},
		{"atomic_lat", func() error { return b.atomicLat(ctx) }},
		{"send_lat", func() error { return b.sendLat(ctx) }},
		{"write_bw", func() error { return b.bandwidth(ctx, "write_bw") }},
		{"read_bw", func() error { return b.bandwidth(ctx, "read_bw") }},
		{"arena", b.arena},
	}
	for _, st := range steps {
		if o.has(st.name) {
			if err := st.run(); err != nil {
				return err
			}
		}
	}
	_, err = b.peer.call(msg{Op: "close"})
	return err
}
