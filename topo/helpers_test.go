package topo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// setups are the jobs every multi-rank test runs on: one host over shm, one host over
// tcp, and ranks spread over two hosts (shm within a host, tcp between them).
func setups(n int) []struct {
	name string
	opt  runtimetest.Options
} {
	hosts := make([]string, n)
	for r := range hosts {
		hosts[r] = fmt.Sprintf("h%d", r%2)
	}
	return []struct {
		name string
		opt  runtimetest.Options
	}{
		{fmt.Sprintf("shm/n=%d", n), runtimetest.Options{Transport: "shm"}},
		{fmt.Sprintf("tcp/n=%d", n), runtimetest.Options{Transport: "tcp"}},
		{fmt.Sprintf("two-hosts/n=%d", n), runtimetest.Options{Hosts: hosts}},
	}
}

// forEach runs f on every setup of every size, each rank with a 20-second context.
func forEach(t *testing.T, sizes []int, f func(ctx context.Context, w *runtime.World) error) {
	for _, n := range sizes {
		for _, s := range setups(n) {
			t.Run(s.name, func(t *testing.T) {
				s.opt.Timeout = 30 * time.Second
				runtimetest.Run(t, n, s.opt, func(w *runtime.World) error {
					ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
					defer cancel()
					return f(ctx, w)
				})
			})
		}
	}
}
