package connbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// serveHTTP answers every request with --response bytes.
func serveHTTP(l net.Listener, o *Options) error {
	body := Fill(make([]byte, o.Response))
	size := strconv.Itoa(len(body))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", size)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body)
	})}
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// runHTTP runs --clients keep-alive clients, each GETting in a loop for --warmup and then
// --duration, and counts the requests of the second span whose bodies were read in full.
// The counted span lasts until at least one request is counted: on a loaded host, none
// may complete within a short --duration.
func runHTTP(ctx context.Context, env *Env) (Result, error) {
	r := Result{Name: "http", Kind: KindRate, Title: fmt.Sprintf("net/http requests per second, %d keep-alive clients", env.O.Clients)}
	tr := &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return env.DialServed(ctx) },
		MaxIdleConnsPerHost: env.O.Clients,
		MaxConnsPerHost:     env.O.Clients,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	get := func(buf *bytes.Buffer) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://sockbench/", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		buf.Reset()
		_, err = io.Copy(buf, resp.Body)
		resp.Body.Close()
		if err == nil && (resp.StatusCode != http.StatusOK || buf.Len() != env.O.Response) {
			err = fmt.Errorf("status %d, %d body bytes", resp.StatusCode, buf.Len())
		}
		return err
	}
	var (
		count    atomic.Int64
		measured atomic.Bool
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	stop := make(chan struct{})
	counted := make(chan struct{}) // closed by the first counted request
	failed := make(chan struct{})  // closed with firstErr
	for range env.O.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := get(&buf); err != nil {
					errOnce.Do(func() { firstErr = err; close(failed) })
					return
				}
				if measured.Load() && count.Add(1) == 1 {
					close(counted)
				}
			}
		}()
	}
	time.Sleep(env.O.Warmup)
	measured.Store(true)
	t0 := time.Now()
	time.Sleep(env.O.Duration)
	select {
	case <-counted:
	case <-failed:
	case <-ctx.Done():
	}
	measured.Store(false)
	n, secs := count.Load(), time.Since(t0).Seconds()
	close(stop)
	wg.Wait()
	if firstErr != nil {
		return r, firstErr
	}
	r.Rows = []Row{{Bytes: env.O.Response, PerS: round3(float64(n) / secs), Count: int(n)}}
	return r, nil
}
