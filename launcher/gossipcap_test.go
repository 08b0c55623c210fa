package launcher

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestGossipStreamBound: a member serves at most maxGossipStreams inbound gossip streams
// at once; idle connections past that are closed at once and noted, and once the idle
// ones time out the member serves streams again (a second member joins through it).
func TestGossipStreamBound(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	var log lockedBuffer
	c, err := newCluster(clusterConfig{Name: "a", Bind: "127.0.0.1:0", Key: key, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	addr := c.ml.LocalNode().Address()
	var idle []net.Conn
	defer func() {
		for _, x := range idle {
			x.Close()
		}
	}()
	for range 2 * maxGossipStreams {
		x, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, x)
	}
	deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
	for !strings.Contains(log.String(), "streams already being served") {
		if time.Now().After(deadline) {
			t.Fatalf("no stream dropped at the bound; log:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, x := range idle {
		x.Close()
	}
	idle = nil
	for deadline := time.Now().Add(testbudget.Scale(10 * time.Second)); c.streams.pending.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams still pending after the idle connections closed", c.streams.pending.Load())
		}
	}
	b, err := newCluster(clusterConfig{Name: "b", Bind: "127.0.0.1:0", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	if _, err := b.ml.Join([]string{addr}); err != nil {
		t.Fatalf("join through the member after the idle streams: %v", err)
	}
	for deadline := time.Now().Add(testbudget.Scale(10 * time.Second)); c.ml.NumMembers() != 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d members after the join, want 2", c.ml.NumMembers())
		}
	}
}
