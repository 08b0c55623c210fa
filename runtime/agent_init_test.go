package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestAgentInitGets: under an agent that serves the node map, as golaunch's does, a rank
// joins with one fence and at most one get (its node's first rank's card), whatever the
// job's size. The map decides each pair's transport, and --transport overrides it.
func TestAgentInitGets(t *testing.T) {
	for _, tc := range []struct {
		name, transport string
		hosts           []string
		want            func(a, b string) string
	}{
		{"64 ranks on one host", "auto", repeat("h0", 64), nodeTransport},
		{"two hosts", "auto", []string{"h0", "h0", "h1", "h1", "h1"}, nodeTransport},
		{"two hosts over tcp", "tcp", []string{"h0", "h0", "h1"}, func(a, b string) string { return "tcp" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			n := len(tc.hosts)
			j, err := runtimetest.Start(ctx, n, runtimetest.Options{Transport: tc.transport, Hosts: tc.hosts, Timeout: 60 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			fences, gets := j.PMICalls()
			if fences != n || gets > n {
				t.Errorf("Init of %d ranks: %d PMI fences and %d gets, want %d and at most %d", n, fences, gets, n, n)
			}
			for a, w := range j.Worlds {
				for b := range n {
					if b != a && w.Transport(b) != tc.want(tc.hosts[a], tc.hosts[b]) {
						t.Errorf("rank %d reaches rank %d over %q, want %q", a, b, w.Transport(b), tc.want(tc.hosts[a], tc.hosts[b]))
					}
				}
			}
			errs := make(chan error, n)
			for _, w := range j.Worlds {
				go func() {
					r := w.Rank()
					got := []int64{-1}
					_, err := runtime.Sendrecv(ctx, w, []int64{int64(r)}, (r+1)%n, 3, got, (r+n-1)%n, 3)
					if err == nil && got[0] != int64((r+n-1)%n) {
						err = fmt.Errorf("rank %d got %d from rank %d", r, got[0], (r+n-1)%n)
					}
					errs <- err
				}()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			if err := j.Finalize(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func repeat(s string, n int) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = s
	}
	return l
}

func nodeTransport(a, b string) string {
	if a == b {
		return "shm"
	}
	return "tcp"
}
