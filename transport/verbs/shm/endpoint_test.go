package shm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

func sampleEndpoint() endpoint {
	return endpoint{host: localHost(), pid: 4242, nonce: 0x1234567890abcdef, qpn: 7,
		hdrOff: 1 << 16, dataOff: 1 << 17, slots: defaultRingSlots,
		desc: arena.SegmentDesc{PID: 4242, FD: 5, Size: 64 << 20}}
}

func TestEndpointRoundTrip(t *testing.T) {
	ep := sampleEndpoint()
	b, err := ep.appendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEndpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != ep {
		t.Fatalf("round trip: %+v, want %+v", got, ep)
	}
	if err := got.checkHost(localHost()); err != nil {
		t.Fatal(err)
	}
	// Every truncation and a trailing byte are refused.
	for n := range len(b) {
		if _, err := decodeEndpoint(b[:n]); !errors.Is(err, errEndpoint) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	if _, err := decodeEndpoint(append(bytes.Clone(b), 0)); !errors.Is(err, errEndpoint) {
		t.Fatalf("trailing byte: %v", err)
	}
}

func TestEndpointChecks(t *testing.T) {
	mods := map[string]func(*endpoint){
		"pid mismatch":       func(e *endpoint) { e.pid++ },
		"qpn 0":              func(e *endpoint) { e.qpn = 0 },
		"slots not pow2":     func(e *endpoint) { e.slots = 1000 },
		"slots too few":      func(e *endpoint) { e.slots = 8 },
		"ring past segment":  func(e *endpoint) { e.dataOff = uint64(e.desc.Size) - 64 },
		"header misaligned":  func(e *endpoint) { e.hdrOff++ },
		"offset overflowing": func(e *endpoint) { e.hdrOff = ^uint64(0) &^ 63 },
	}
	for name, mod := range mods {
		ep := sampleEndpoint()
		mod(&ep)
		b, _ := ep.appendBinary(nil)
		if _, err := decodeEndpoint(b); !errors.Is(err, errEndpoint) {
			t.Errorf("%s: %v, want errEndpoint", name, err)
		}
	}
	other := localHost()
	other.bootID[0]++
	ep := sampleEndpoint()
	if err := ep.checkHost(other); !errors.Is(err, errEndpoint) {
		t.Errorf("other boot id: %v", err)
	}
	other = localHost()
	other.pidNS++
	if err := ep.checkHost(other); !errors.Is(err, errEndpoint) {
		t.Errorf("other pid namespace: %v", err)
	}
}

// FuzzEndpoint checks that decoding never panics and that what decodes re-encodes to the
// same bytes.
func FuzzEndpoint(f *testing.F) {
	ep := sampleEndpoint()
	valid, _ := ep.appendBinary(nil)
	f.Add(valid)
	f.Add([]byte{})
	f.Add([]byte("gshm\x01"))
	f.Add(valid[:len(valid)-3])
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEndpoint(b)
		if err != nil {
			if !errors.Is(err, errEndpoint) {
				t.Fatalf("error %v does not wrap errEndpoint", err)
			}
			return
		}
		again, err := e.appendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
		}
	})
}
