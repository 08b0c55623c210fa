package launcher

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/memberlist"
)

// maxGossipStreams bounds the inbound gossip streams a member serves at once. A member's
// streams are push-pull exchanges and fallback probes, a few at a time; a stream past
// the bound is closed at once, and a member whose exchange was dropped so tries again
// at its next interval.
const maxGossipStreams = 64

// cappedTransport is memberlist's NetTransport with a bound on the inbound streams
// memberlist serves at once (memberlist's own accept loop backs off on Accept errors and
// gives each stream TCPTimeout, but serves any number). A stranger opening idle
// connections holds at most maxGossipStreams of them, each for at most the stream
// timeout, and is noted through shed instead of filling the descriptor table.
type cappedTransport struct {
	*memberlist.NetTransport
	streams chan net.Conn
	pending atomic.Int64
	shed    func(from net.Addr)
	quit    chan struct{}
	once    sync.Once
}

// newCappedTransport binds memberlist's transport as memberlist.Create would (trying
// again on a clash of a picked port) and starts the forwarder of its streams.
func newCappedTransport(nc *memberlist.NetTransportConfig, shed func(net.Addr)) (*cappedTransport, error) {
	tries := 1
	if nc.BindPort == 0 {
		tries = 10 // the picked TCP port may be taken for UDP
	}
	var nt *memberlist.NetTransport
	var err error
	for range tries {
		if nt, err = memberlist.NewNetTransport(nc); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	t := &cappedTransport{NetTransport: nt, streams: make(chan net.Conn), shed: shed, quit: make(chan struct{})}
	go t.forward()
	return t, nil
}

// StreamCh returns the streams memberlist serves: those the bound admits.
func (t *cappedTransport) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown shuts the transport down and stops the forwarder.
func (t *cappedTransport) Shutdown() error {
	err := t.NetTransport.Shutdown()
	t.once.Do(func() { close(t.quit) })
	return err
}

// forward passes the transport's streams on to memberlist, counting each as pending
// until memberlist closes it, and closes those past the bound.
func (t *cappedTransport) forward() {
	for {
		var c net.Conn
		select {
		case c = <-t.NetTransport.StreamCh():
		case <-t.quit:
			return
		}
		if t.pending.Load() >= maxGossipStreams {
			t.shed(c.RemoteAddr())
			c.Close()
			continue
		}
		t.pending.Add(1)
		tc := &trackedConn{Conn: c, done: func() { t.pending.Add(-1) }}
		select {
		case t.streams <- tc:
		case <-t.quit:
			tc.Close()
			return
		}
	}
}

// trackedConn calls done at its first Close.
type trackedConn struct {
	net.Conn
	once sync.Once
	done func()
}

func (c *trackedConn) Close() error {
	c.once.Do(c.done)
	return c.Conn.Close()
}

// shedStream is the detail of a gossip stream dropped at the bound, as gossipLog notes
// memberlist's own lines about strangers' streams.
func shedStream(from net.Addr) string {
	return fmt.Sprintf("from %s: %d streams already being served", from, maxGossipStreams)
}
