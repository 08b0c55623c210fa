package accept

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// The back-off after a failed Accept: MinBackoff after the first failure in a row,
// doubling up to MaxBackoff.
const (
	MinBackoff = 5 * time.Millisecond
	MaxBackoff = time.Second
)

// Config tunes Serve. The zero Config retries every error and caps nothing.
type Config struct {
	// MaxPending bounds the connections accepted and not yet released. A connection
	// accepted while MaxPending are pending is closed at once. 0 sets no bound.
	MaxPending int
	// Shed, if not nil, is called with each connection accepted while MaxPending were
	// pending, before Serve closes it. It may write the peer a short notice (a few bytes
	// into a fresh socket's buffer, which never blocks) but must not read or close it.
	Shed func(c net.Conn)
	// Retry, if not nil, is called with each Accept error that Serve retries and the
	// back-off it waits first.
	Retry func(err error, backoff time.Duration)
}

// Handler takes an accepted connection c; it must not block. release ends c's pending
// state: call it once c's peer is authenticated or c is closed. Serve closes no
// connection it handed over.
type Handler func(c net.Conn, release func())

// Serve accepts connections on ln and hands them to handle until ln is closed or ctx
// ends; then it returns, having closed ln if ctx ended. It never returns on another
// Accept error: it retries after a back-off (package doc).
func Serve(ctx context.Context, ln net.Listener, cfg Config, handle Handler) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer func() {
		if !stop() {
			ln.Close() // the AfterFunc may still be under way: closed on return all the same
		}
	}()
	var pending atomic.Int64
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, MinBackoff), MaxBackoff)
			if cfg.Retry != nil {
				cfg.Retry(err, backoff)
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		if cfg.MaxPending > 0 && pending.Load() >= int64(cfg.MaxPending) {
			if cfg.Shed != nil {
				cfg.Shed(c)
			}
			c.Close()
			continue
		}
		pending.Add(1)
		var released atomic.Bool
		handle(c, func() {
			if released.CompareAndSwap(false, true) {
				pending.Add(-1)
			}
		})
	}
}
