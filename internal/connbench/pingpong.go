package connbench

import (
	"context"
	"fmt"
	"io"
)

// runPingPong times round trips of each size over one connection: write, then read the
// echo back in full.
func runPingPong(ctx context.Context, env *Env) (Result, error) {
	r := Result{Name: "pingpong", Kind: kindLatency, Title: "round trip (write, read the echo)"}
	c, err := env.Dial(ctx)
	if err != nil {
		return r, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	for _, size := range env.O.Sizes {
		iters := scaledIters(env.O.Iters, size, 200)
		warmup := max(iters/10, 3)
		if err := writeHeader(c, header{op: opEcho, size: uint32(size), count: uint64(warmup + iters)}); err != nil {
			return r, err
		}
		out, in := fill(make([]byte, size)), make([]byte, size)
		samples, err := measure(warmup, iters, func() error {
			if _, err := c.Write(out); err != nil {
				return err
			}
			_, err := io.ReadFull(c, in)
			return err
		})
		if err != nil {
			return r, fmt.Errorf("%d bytes: %w", size, err)
		}
		r.Rows = append(r.Rows, latencyRow(size, iters, samples))
	}
	return r, nil
}

// fill writes non-zero bytes into b and returns it.
func fill(b []byte) []byte {
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}
