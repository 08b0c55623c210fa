package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// transports are the launcher's --transport values every multi-rank test runs with.
var transports = []string{"shm", "tcp"}

// forEach runs f as a subtest for every transport and rank count.
func forEach(t *testing.T, sizes []int, f func(t *testing.T, tr string, n int)) {
	for _, tr := range transports {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) { f(t, tr, n) })
		}
	}
}

func run(t *testing.T, tr string, n int, f func(ctx context.Context, w *runtime.World) error) {
	t.Helper()
	runtimetest.Run(t, n, runtimetest.Options{Transport: tr, Timeout: 30 * time.Second}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		return f(ctx, w)
	})
}

// attachFrom receives the description of a region of rank owner (tag 1) and attaches it,
// with a counter for requests on it; done closes both.
func attachFrom(ctx context.Context, w *runtime.World, owner int) (rm *substrate.Remote, c *substrate.Counter, done func(), err error) {
	desc := make([]byte, 256) // at least any rank's DescLen
	st, err := runtime.Recv(ctx, w, desc, owner, 1)
	if err != nil {
		return nil, nil, nil, err
	}
	if rm, err = substrate.Attach(w, owner, desc[:st.Bytes]); err != nil {
		return nil, nil, nil, err
	}
	c = substrate.NewCounter(w)
	return rm, c, func() { c.Close(); rm.Close() }, nil
}

// pattern fills b with bytes that depend on seed and position.
func pattern(b []byte, seed int) {
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i>>8)
	}
}

func checkPattern(b []byte, seed int) error {
	for i := range b {
		if want := byte(i*7 + seed*13 + i>>8); b[i] != want {
			return fmt.Errorf("byte %d of %d is %d, want %d", i, len(b), b[i], want)
		}
	}
	return nil
}
