package sockets

import (
	"bytes"
	"io"
	"testing"
)

func TestReadWrite(t *testing.T) {
	d, a := pair(t, nil)
	msg := []byte("hello over shm")
	if n, err := d.Write(msg); err != nil || n != len(msg) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(a, buf, len(msg))
	if err != nil || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if _, err := a.Write([]byte("back")); err != nil {
		t.Fatal(err)
	}
	n, err = io.ReadAtLeast(d, buf, 4)
	if err != nil || string(buf[:n]) != "back" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
}
