package launcher

import (
	"bytes"
	"github.com/gorma-hpc/gorma/pmi"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// handshakePair returns both ends of an authenticated, sealed connection.
func handshakePair(t *testing.T) (client, server *ctlConn, raw net.Conn) {
	t.Helper()
	key := controlKey(randomKey(t))
	c, s := net.Pipe()
	t.Cleanup(func() { c.Close(); s.Close() })
	type res struct {
		cc  *ctlConn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		cc, err := serverHandshake(s, key)
		ch <- res{cc, err}
	}()
	client, err := clientHandshake(c, key)
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	return client, r.cc, c
}

func TestHandshake(t *testing.T) {
	client, server, _ := handshakePair(t)
	go client.send(fSignal, signalMsg{Signal: 2})
	typ, p, err := server.recv()
	if err != nil || typ != fSignal || string(p) != `{"Signal":2}` {
		t.Fatalf("%v %q %v", typ, p, err)
	}
	go server.send(fStdinAck, nil)
	if typ, _, err := client.recv(); err != nil || typ != fStdinAck {
		t.Fatalf("%v %v", typ, err)
	}
}

// Frames are sealed: the job (with its secret) is not readable on the wire, and a frame
// altered in flight, replayed or reordered is refused.
func TestFramesSealed(t *testing.T) {
	key := controlKey(randomKey(t))
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	done := make(chan *ctlConn, 1)
	go func() {
		cc, _ := serverHandshake(s, key)
		done <- cc
	}()
	client, err := clientHandshake(c, key)
	if err != nil {
		t.Fatal(err)
	}
	server := <-done
	// Capture what the client writes, by sending through a second pipe we read raw.
	rawC, rawS := net.Pipe()
	defer rawC.Close()
	defer rawS.Close()
	tap := &ctlConn{c: rawC, wr: client.wr}
	secret := []byte("the-per-job-secret-0123456789abc")
	go tap.send(fJob, jobSpec{ID: "j", Program: "/bin/true", Secret: secret, Env: []string{"TOKEN=hunter2"}})
	hdr := make([]byte, 5)
	_, wire, err := readFrame(rawS, hdr)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(wire, []byte("hunter2")) || bytes.Contains(wire, []byte("/bin/true")) {
		t.Fatal("a job frame is readable on the wire")
	}
	frame := append(append([]byte{}, hdr...), wire...)
	// The genuine frame opens at the server (sequence 0).
	go c.Write(frame)
	if typ, p, err := server.recv(); err != nil || typ != fJob || !bytes.Contains(p, []byte("hunter2")) {
		t.Fatalf("genuine frame: %v %v", typ, err)
	}
	// Replayed: sequence 1 expected, the frame was sealed as 0.
	go c.Write(frame)
	if _, _, err := server.recv(); err == nil {
		t.Fatal("a replayed frame was accepted")
	}
	// Altered: the next frame (sequence 1) with one bit flipped is refused, the same frame
	// intact opens.
	go tap.send(fSignal, signalMsg{Signal: 15})
	_, wire, err = readFrame(rawS, hdr)
	if err != nil {
		t.Fatal(err)
	}
	frame = append(append([]byte{}, hdr...), wire...)
	bad := append([]byte{}, frame...)
	bad[len(bad)-1] ^= 1
	go c.Write(bad)
	if _, _, err := server.recv(); err == nil {
		t.Fatal("an altered frame was accepted")
	}
	go c.Write(frame)
	if typ, _, err := server.recv(); err != nil || typ != fSignal {
		t.Fatalf("intact frame after a refused one: %v %v", typ, err)
	}
	// A frame sealed for another connection is refused.
	_, server2, raw2 := handshakePair(t)
	go raw2.Write(frame)
	if _, _, err := server2.recv(); err == nil {
		t.Fatal("a frame of another connection was accepted")
	}
}

func TestHandshakeWrongKey(t *testing.T) {
	c, s := net.Pipe()
	defer c.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := serverHandshake(s, controlKey(randomKey(t)))
		s.Close()
		errc <- err
	}()
	if _, err := clientHandshake(c, controlKey(randomKey(t))); err == nil {
		t.Error("client handshake with the wrong key succeeded")
	}
	if err := <-errc; err == nil {
		t.Error("server accepted the wrong key")
	}
}

// A stranger's connection to an agent's control port is closed without the agent reading
// more than the hello or writing a single byte, and no job is created.
func TestControlRejectsStrangers(t *testing.T) {
	old, oldHello := handshakeTimeout, helloTimeout
	handshakeTimeout, helloTimeout = 300*time.Millisecond, 300*time.Millisecond
	defer func() { handshakeTimeout, helloTimeout = old, oldHello }()
	a := testAgent(t, "a", 1, randomKey(t))
	other := controlKey(randomKey(t))
	job, _ := encodeFrameForTest(fJob, testSpecBytes(t, 1))
	cases := map[string]func(c net.Conn){
		"garbage then a job frame": func(c net.Conn) {
			c.Write(bytes.Repeat([]byte{'G'}, helloSize))
			c.Write(job)
		},
		"a job frame first": func(c net.Conn) { c.Write(append(job, make([]byte, helloSize)...)) },
		"wrong key hello": func(c net.Conn) {
			hello := make([]byte, helloSize)
			copy(hello, helloMagic)
			hello[5] = controlVersion
			copy(hello[macOff:], mac(other, helloLabel, hello[:macOff]))
			c.Write(hello)
			c.Write(job)
		},
		"silence": func(c net.Conn) {},
	}
	for name, send := range cases {
		t.Run(name, func(t *testing.T) {
			before := a.rejected.Load()
			c, err := net.Dial("tcp", a.controlAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			send(c)
			c.SetReadDeadline(time.Now().Add(testbudget.Scale(5 * time.Second)))
			n, err := io.Copy(io.Discard, c)
			if n != 0 {
				t.Errorf("the agent wrote %d bytes to a stranger", n)
			}
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Error("the agent did not close the connection")
				}
			}
			for a.rejected.Load() == before {
				time.Sleep(time.Millisecond)
			}
			a.mu.Lock()
			jobs := len(a.jobs)
			a.mu.Unlock()
			if jobs != 0 {
				t.Errorf("a stranger created %d jobs", jobs)
			}
		})
	}
}

func encodeFrameForTest(t frameType, body []byte) ([]byte, error) {
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	go (&ctlConn{c: c}).send(t, body)
	buf := make([]byte, 5+len(body))
	_, err := io.ReadFull(s, buf)
	return buf, err
}

func TestFrameRoundTrip(t *testing.T) {
	cc, sc, _ := handshakePair(t)
	spec := jobSpec{ID: "j", Program: "/bin/true", Secret: make([]byte, 32)}
	spec.Roster, _ = PlanRanks([]HostSlots{{"a", 1}}, 1)
	block, err := pmi.AppendCards(nil, []pmi.Card{{Rank: 1, Key: "k", Value: []byte{1, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		cc.send(fJob, &spec)
		cc.send(fOutput, encodeOutput(3, 2, []byte("hi\n")))
		cc.send(fFenceDone, appendFenceDone(nil, 7, [][]byte{block}))
		cc.send(fDone, nil)
	}()
	typ, p, err := sc.recv()
	if err != nil || typ != fJob {
		t.Fatal(typ, err)
	}
	v, err := decodeBody(typ, p)
	if err != nil || v.(*jobSpec).check() != nil || v.(*jobSpec).Roster.Size != 1 {
		t.Fatalf("job: %+v %v", v, err)
	}
	typ, p, _ = sc.recv()
	if r, s, d, err := decodeOutput(p); typ != fOutput || err != nil || r != 3 || s != 2 || string(d) != "hi\n" {
		t.Fatalf("output: %v %d %d %q %v", typ, r, s, d, err)
	}
	typ, p, _ = sc.recv()
	v, err = decodeBody(typ, p)
	if err != nil || v.(*fenceDone).Round != 7 {
		t.Fatalf("fence-done: %+v %v", v, err)
	}
	if puts, err := v.(*fenceDone).puts(2); err != nil || !bytes.Equal(puts[1]["k"], []byte{1, 2}) {
		t.Fatalf("fence-done's puts: %v %v", puts, err)
	}
	if typ, _, _ = sc.recv(); typ != fDone {
		t.Fatal(typ)
	}
}

func FuzzControlFrame(f *testing.F) {
	for _, seed := range []struct {
		t frameType
		b string
	}{
		{fJob, string(testSpecBytes(f, 1))},
		{fExit, `{"Rank":1,"Pid":5,"Code":3}`},
		{fFenceDone, "\x02\x01\x0cGC\x01\x01\x01\x00\x01k\x00\x02\x01\x02"},
		{fFence, `{"Round":2,"Ranks":[3,4],"Block":"R0MBAA=="}`},
		{fJobTree, `{"ID":"j","Node":3}`},
		{fHostFailed, `{"Host":"h","Ranks":[1],"Pids":[9],"Code":1,"Why":"lost"}`},
		{fFetch, `{"Job":"j","From":1,"Round":1}`},
		{fFetchAns, `{"Puts":{"4":{"gorma/card":"AQI="}}}`},
		{fFetchAns, `{"Err":"no"}`},
		{fOutput, "\x00\x00\x00\x01\x01hello"},
		{fDone, ""},
	} {
		frame, _ := encodeFrameForTest(seed.t, []byte(seed.b))
		f.Add(frame)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		hdr := make([]byte, 5)
		for {
			typ, p, err := readFrame(r, hdr)
			if err != nil {
				return
			}
			switch typ {
			case fOutput:
				decodeOutput(p)
			default:
				v, err := decodeBody(typ, p)
				if fd, ok := v.(*fenceDone); ok && err == nil {
					fd.puts(64)
				}
				if spec, ok := v.(*jobSpec); ok && err == nil && spec.check() == nil {
					spec.Roster.RanksOn(spec.Node) // a checked roster is safe to index
					for r := range spec.Roster.Size {
						_ = spec.Roster.Hosts[spec.Roster.RankHost[r]]
					}
				}
			}
		}
	})
}
