package sockets

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"golang.org/x/sys/unix"
)

// stalledFlood is how many stalled clients TestStalledHelloFlood holds: more than the
// kernel's default backlog (4096) plus maxPending.
const stalledFlood = 4500

// stalledDial connects to the rendezvous socket of name, sends a valid hello and reads
// nothing more: a client of this uid that stalls after its hello.
func stalledDial(name string, deadline time.Time) (*net.UnixConn, error) {
	c, err := silentDial(name, deadline)
	if err != nil {
		return nil, err
	}
	hello := message{version: protocolVersion, kind: kindHello}.encode()
	if _, err := c.Write(hello[:]); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// TestStalledHelloFlood holds stalledFlood clients that send a valid hello and then
// stall, and keeps replacing the ones the listener sheds, while 25 dialers must each get
// a connection that echoes. Each stalled client is offered a segment and never takes it:
// the listener withdraws the offer and sheds it.
func TestStalledHelloFlood(t *testing.T) {
	floodDials(t, crowd{n: stalledFlood, dialers: 25, dial: stalledDial, what: "clients stalled after their hello",
		unshed: "the listener's backlog stayed full: it does not shed stalled clients"})
}

// offered is a raw client that sent its hello and read the reply: its socket and the
// segment the reply offered, mapped (mem nil once a Conn owns them).
type offered struct {
	uc       *net.UnixConn
	mem      []byte
	ringSize int
}

// offerDial connects to name, sends a hello and maps the segment of the reply, without
// taking the offer or sending the ready.
func offerDial(t *testing.T, name string) *offered {
	t.Helper()
	c := rawDial(t, name)
	hello := message{version: protocolVersion, kind: kindHello}.encode()
	if _, err := c.Write(hello[:]); err != nil {
		t.Fatal(err)
	}
	var b [messageSize]byte
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(b[:], oob)
	if err != nil || n != messageSize {
		t.Fatalf("reading the reply: %d bytes, %v", n, err)
	}
	reply, err := decodeReply(b[:], 0)
	fds := parseRights(oob[:oobn])
	if err != nil || len(fds) != 1 {
		t.Fatalf("reply: %v, %d descriptors", err, len(fds))
	}
	mem, err := mapSegment(fds[0], int(reply.ringSize))
	unix.Close(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	o := &offered{c, mem, int(reply.ringSize)}
	t.Cleanup(func() { // unless a Conn took them over
		if o.mem != nil {
			unix.Munmap(o.mem)
			o.uc.Close()
		}
	})
	return o
}

// TestShedWithdrawsOffer fills a listener's pending slots with clients that read their
// reply and send no ready. The accept loop sheds the one that has owed its ready longest
// and withdraws its offer first; it never sheds one whose offer was taken, whose ready,
// sent later, still gets it a connection.
func TestShedWithdrawsOffer(t *testing.T) {
	l, name := listen(t, &ListenConfig{RingSize: minRingSize})
	taken := offerDial(t, name)
	if !takeOffer(taken.mem) {
		t.Fatal("the offer of the first client was withdrawn before any socket was shed")
	}
	first := offerDial(t, name)
	var rest []*offered
	for range maxPending - 3 {
		rest = append(rest, offerDial(t, name))
	}
	if got := l.(*shmListener).shed.Load(); got != 0 {
		t.Fatalf("%d sockets shed with %d of %d slots taken", got, maxPending-1, maxPending)
	}

	// The last slot: the accept loop finds the listener full and sheds the longest owing
	// client whose offer it can withdraw, first.
	offerDial(t, name)
	first.uc.SetDeadline(time.Now().Add(testbudget.Scale(10 * time.Second)))
	if got := replyTo(t, first.uc); got != statusShed {
		t.Fatalf("the longest owing client read %d after its reply, want statusShed (%d)", got, statusShed)
	}
	if w := offerWord(first.mem).Load(); w != offerWithdrawn {
		t.Fatalf("offer word of the shed client is %d, want %d (withdrawn)", w, offerWithdrawn)
	}
	if takeOffer(first.mem) {
		t.Fatal("a withdrawn offer was taken")
	}

	// More clients shed the rest, one each, and never the client that took its offer.
	for range len(rest) + 8 {
		offerDial(t, name)
	}
	for i, r := range rest {
		if w := offerWord(r.mem).Load(); w != offerWithdrawn {
			t.Fatalf("offer word of owing client %d is %d after %d newer clients, want %d (withdrawn)", i, w, len(rest)+8, offerWithdrawn)
		}
	}
	if w := offerWord(taken.mem).Load(); w != offerTaken {
		t.Fatalf("offer word of the client that took it is %d, want %d (taken)", w, offerTaken)
	}
	ready := message{version: protocolVersion, kind: kindReady, ringSize: uint32(taken.ringSize)}.encode()
	if _, err := taken.uc.Write(ready[:]); err != nil {
		t.Fatalf("ready of the client that took its offer: %v", err)
	}
	a, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	d := newConn(taken.uc, taken.mem, taken.ringSize, true, Addr{netName, name}, Addr{netName, name})
	taken.mem = nil
	defer d.Close()
	if _, err := d.Write([]byte{42}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	a.SetDeadline(time.Now().Add(testbudget.Scale(10 * time.Second)))
	if _, err := io.ReadFull(a, b); err != nil || b[0] != 42 {
		t.Fatalf("the connection of the client that took its offer: read %v, %v", b, err)
	}
}
