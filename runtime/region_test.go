package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestAllocHostRegion: a host-local region is mapped by the rank on the same host, which
// sees its bytes, and a rank on another host (over tcp) cannot attach it: the error says
// the description has no tcp key. A rank without a shared-memory device cannot make one.
func TestAllocHostRegion(t *testing.T) {
	opt := runtimetest.Options{Hosts: []string{"a", "a", "b"}, Timeout: 30 * time.Second}
	runtimetest.Run(t, 3, opt, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		desc := make([]byte, 256) // the owner's description: DescLen of its two devices
		if w.Rank() == 0 {
			r, err := w.AllocHostRegion(4096)
			if err != nil {
				return err
			}
			defer r.Free()
			copy(r.Bytes(), "host-local")
			for peer := 1; peer <= 2; peer++ {
				if err := runtime.Send(ctx, w, r.AppendDesc(nil), peer, 1); err != nil {
					return err
				}
			}
			return runtime.Barrier(ctx, w)
		}
		st, err := runtime.Recv(ctx, w, desc, 0, 1)
		if err != nil {
			return err
		}
		rm, err := w.Attach(0, desc[:st.Bytes])
		switch w.Rank() {
		case 1:
			if err != nil {
				return fmt.Errorf("the rank on the same host: %w", err)
			}
			if got := string(rm.Mapped()[:10]); got != "host-local" {
				return fmt.Errorf("the rank on the same host maps %q", got)
			}
			rm.Close()
		case 2:
			if err == nil || !errors.Is(err, runtime.ErrTransport) || !strings.Contains(err.Error(), "no tcp key") {
				return fmt.Errorf("the rank on another host attached a host-local region: %v", err)
			}
		}
		return runtime.Barrier(ctx, w)
	})
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "tcp", Timeout: 30 * time.Second}, func(w *runtime.World) error {
		if _, err := w.AllocHostRegion(64); !errors.Is(err, runtime.ErrTransport) || !strings.Contains(err.Error(), "shared-memory") {
			return fmt.Errorf("a tcp-only rank made a host-local region: %v", err)
		}
		return nil
	})
}
