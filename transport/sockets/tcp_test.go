package sockets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/nettest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// listenTCPTest starts an upgrading TCP listener on address that the test closes at its end.
func listenTCPTest(t testing.TB, address string) net.Listener {
	t.Helper()
	l, err := Listen("tcp", address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// echo serves l: every connection's bytes come back until it half-closes.
func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			io.Copy(c, c)
			c.Close()
		}()
	}
}

// echoBack sends msg over c, half-closes, and returns what comes back.
func echoBack(t *testing.T, c net.Conn, msg []byte) []byte {
	t.Helper()
	go func() {
		c.Write(msg)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}()
	back, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestTCPUpgrade: this package's Dialer reaches an upgrading listener over shm, whether
// it listens on one address or on all of them and whatever name the dialer uses for
// this host; a plain TCP client and a NoUpgrade Dialer reach it over TCP; both get the
// same bytes back.
func TestTCPUpgrade(t *testing.T) {
	for _, tc := range []struct{ listen, dialHost string }{
		{"127.0.0.1:0", "127.0.0.1"},
		{":0", "127.0.0.1"},
		{":0", "localhost"},
	} {
		t.Run(tc.listen+"/"+tc.dialHost, func(t *testing.T) {
			l := listenTCPTest(t, tc.listen)
			go echo(l)
			_, port, _ := net.SplitHostPort(l.Addr().String())
			addr := net.JoinHostPort(tc.dialHost, port)
			msg := bytes.Repeat([]byte("upgrade "), 200_000)
			c, err := Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, ok := c.(*Conn); !ok {
				t.Errorf("Dial(tcp, %s) gave a %T, want an upgraded *sockets.Conn", addr, c)
			}
			if ra, ok := c.RemoteAddr().(*net.TCPAddr); !ok || fmt.Sprint(ra.Port) != port {
				t.Errorf("RemoteAddr %v, want the TCP address", c.RemoteAddr())
			}
			if back := echoBack(t, c, msg); !bytes.Equal(back, msg) {
				t.Errorf("shm: %d bytes back of %d", len(back), len(msg))
			}
			for name, dial := range map[string]func() (net.Conn, error){
				"net.Dial":  func() (net.Conn, error) { return net.Dial("tcp", addr) },
				"NoUpgrade": func() (net.Conn, error) { return (&Dialer{NoUpgrade: true}).DialContext(t.Context(), "tcp", addr) },
			} {
				c, err := dial()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if _, ok := c.(*net.TCPConn); !ok {
					t.Errorf("%s gave a %T, want a *net.TCPConn", name, c)
				}
				if back := echoBack(t, c, msg); !bytes.Equal(back, msg) {
					t.Errorf("%s: %d bytes back of %d", name, len(back), len(msg))
				}
				c.Close()
			}
		})
	}
}

// TestTCPFallback: with no upgrading listener (a plain TCP server, or nothing), the
// Dialer falls back to TCP by itself and reports TCP's own error.
func TestTCPFallback(t *testing.T) {
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	go echo(plain)
	c, err := Dial("tcp", plain.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*net.TCPConn); !ok {
		t.Errorf("Dial of a plain TCP server gave a %T", c)
	}
	if back := echoBack(t, c, []byte("hello")); string(back) != "hello" {
		t.Errorf("got %q back", back)
	}
	c.Close()
	addr := plain.Addr().String()
	plain.Close()
	if _, err := Dial("tcp", addr); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Dial with nothing listening: %v, want TCP's connection refused", err)
	}
}

// TestTCPUpgradeConn runs x/net's conformance suite over upgraded connections.
func TestTCPUpgradeConn(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		l, err := Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, nil, err
		}
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := l.Accept()
			accepted <- c
		}()
		c1, err = Dial("tcp", l.Addr().String())
		if err != nil {
			l.Close()
			return nil, nil, nil, err
		}
		c2 = <-accepted
		if _, ok := c2.(*Conn); !ok {
			return nil, nil, nil, fmt.Errorf("accepted a %T, want an upgraded *sockets.Conn", c2)
		}
		return c1, c2, func() { c1.Close(); c2.Close(); l.Close() }, nil
	})
}

// TestHTTPUpgrade: net/http unchanged but for its listener and its Transport's DialContext:
// 16 concurrent keep-alive clients, large request and response bodies, and a streamed
// response, every connection upgraded to shm.
func TestHTTPUpgrade(t *testing.T) {
	l := listenTCPTest(t, "127.0.0.1:0")
	var shmConns, tcpConns atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/sum", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte{'g'}, 8<<20))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		f := w.(http.Flusher)
		for i := range 50 {
			fmt.Fprintf(w, "chunk %d\n", i)
			f.Flush()
		}
	})
	srv := &http.Server{Handler: mux, ConnState: func(c net.Conn, s http.ConnState) {
		if s != http.StateNew {
			return
		}
		if _, ok := c.(*Conn); ok {
			shmConns.Add(1)
		} else {
			tcpConns.Add(1)
		}
	}}
	go srv.Serve(l)
	defer srv.Close()
	tr := &http.Transport{DialContext: (&Dialer{}).DialContext, MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	base := "http://" + l.Addr().String()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- httpClient(client, base, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if shmConns.Load() == 0 || tcpConns.Load() != 0 {
		t.Errorf("server saw %d shm and %d tcp connections, want only shm", shmConns.Load(), tcpConns.Load())
	}
}

// httpClient runs one client's requests against the TestHTTPUpgrade server.
func httpClient(client *http.Client, base string, i int) error {
	body := bytes.Repeat([]byte{byte('a' + i)}, 1<<20+i)
	for range 5 {
		resp, err := client.Post(base+"/sum", "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("%d %x", len(body), sha256.Sum256(body)); err != nil || string(got) != want {
			return fmt.Errorf("client %d: /sum gave %q, %v", i, got, err)
		}
	}
	resp, err := client.Get(base + "/big")
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != 8<<20 {
		return fmt.Errorf("client %d: /big gave %d bytes, %v", i, n, err)
	}
	resp, err = client.Get(base + "/stream")
	if err != nil {
		return err
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || strings.Count(string(got), "chunk ") != 50 {
		return fmt.Errorf("client %d: /stream gave %d bytes, %v", i, len(got), err)
	}
	return nil
}

// TestGRPC: a gRPC server and client unchanged but for the listener and
// grpc.WithContextDialer: unary calls (health Check) and a server stream (health Watch)
// over an upgraded connection.
func TestGRPC(t *testing.T) {
	l := listenTCPTest(t, "127.0.0.1:0")
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(l)
	defer srv.Stop()
	var upgraded atomic.Bool
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&Dialer{}).DialContext(ctx, "tcp", addr)
		if _, ok := c.(*Conn); ok {
			upgraded.Store(true)
		}
		return c, err
	}
	cc, err := grpc.NewClient("passthrough:///"+l.Addr().String(),
		grpc.WithContextDialer(dial), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), testbudget.Scale(20*time.Second))
	defer cancel()
	client := healthpb.NewHealthClient(cc)
	for range 100 {
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Check: %v, %v", resp, err)
		}
	}
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	want := []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_SERVICE_UNKNOWN,
		healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING}
	for i, w := range want {
		resp, err := stream.Recv()
		if err != nil || resp.Status != w {
			t.Fatalf("Watch update %d: %v, %v, want %v", i, resp, err, w)
		}
		if i+1 < len(want) {
			hs.SetServingStatus("svc", want[i+1])
		}
	}
	if !upgraded.Load() {
		t.Error("the gRPC client's connection was not upgraded to shm")
	}
}

// TestDialerRefusesOtherUsers: a listener run by another user (as the dialer sees it)
// is refused: "shm" fails naming the uids, "tcp" falls back to TCP.
func TestDialerRefusesOtherUsers(t *testing.T) {
	l := listenTCPTest(t, "127.0.0.1:0")
	go echo(l)
	shm, name := listen(t, nil)
	defer shm.Close()
	defer func(f func(uint32) bool) { trustListener = f }(trustListener)
	trustListener = func(uint32) bool { return false }
	if _, err := Dial("shm", name); err == nil || !strings.Contains(err.Error(), "runs as uid") {
		t.Errorf("Dial(shm) of another user's listener: %v", err)
	}
	c, err := Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*net.TCPConn); !ok {
		t.Errorf("Dial(tcp) of another user's upgrade gave a %T, want TCP", c)
	}
}
