package sockets

import (
	"net"
	"testing"

	"golang.org/x/net/nettest"
)

// TestConn runs x/net's net.Conn conformance suite over shm pairs.
func TestConn(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		name := uniqueName(t)
		l, err := Listen("shm", name)
		if err != nil {
			return nil, nil, nil, err
		}
		defer l.Close()
		done := make(chan net.Conn, 1)
		go func() {
			c, _ := l.Accept()
			done <- c
		}()
		c1, err = Dial("shm", name)
		if err != nil {
			return nil, nil, nil, err
		}
		c2 = <-done
		return c1, c2, func() { c1.Close(); c2.Close() }, nil
	})
}
