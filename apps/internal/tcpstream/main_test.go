package main

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLoopback streams over loopback and checks the report, with the kernel's default
// TCP_NOTSENT_LOWAT and congestion control and with the provider's.
func TestLoopback(t *testing.T) {
	for _, extra := range [][]string{nil, {"--notsent-lowat", "32K"}, {"--notsent-lowat", "32K", "--congestion", "reno"}} {
		t.Run(strings.Join(extra, "="), func(t *testing.T) { testLoopback(t, extra) })
	}
}

func testLoopback(t *testing.T, extra []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sink(ctx, ln) }()
	var out bytes.Buffer
	args := append([]string{"send", "--to", ln.Addr().String(), "--duration", "300ms", "--msg", "64K",
		"--start-at", strconv.FormatInt(time.Now().Add(50*time.Millisecond).UnixNano(), 10)}, extra...)
	err = run(context.Background(), args, &out)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, " GB/s (") || !strings.Contains(s, "-> "+ln.Addr().String()) {
		t.Errorf("report %q", s)
	}
}

func TestBadArgs(t *testing.T) {
	for _, args := range [][]string{nil, {"bogus"}, {"sink"}, {"send"}, {"send", "--to", "x:1", "--duration", "1ms"},
		{"send", "--to", "x:1", "--notsent-lowat", "-1"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q) accepted", args)
		}
	}
}

// TestBadCongestion: a congestion control the kernel refuses fails the sender, naming it.
func TestBadCongestion(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go sink(ctx, ln)
	err = run(context.Background(), []string{"send", "--to", ln.Addr().String(), "--duration", "60ms", "--congestion", "nosuchcc"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--congestion nosuchcc") {
		t.Fatalf("send --congestion nosuchcc: %v, want an error naming it", err)
	}
}
