package sockets

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestHTTP serves net/http over a shm listener to keep-alive clients dialing through
// Dialer.DialContext.
func TestHTTP(t *testing.T) {
	l, name := listen(t, nil)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s:%d", r.URL.Path, len(body))
	})}
	go srv.Serve(l)
	defer srv.Close()
	var d Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "shm", name)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				body := strings.Repeat("x", 1024*i)
				resp, err := client.Post(fmt.Sprintf("http://shm/%d/%d", g, i), "text/plain", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf("/%d/%d:%d", g, i, len(body)); err != nil || string(got) != want {
					t.Errorf("response %q, %v; want %q", got, err, want)
				}
			}
		})
	}
	wg.Wait()
}
