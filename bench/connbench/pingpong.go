package connbench

import (
	"context"
	"fmt"
	"io"
)

// runPingPong times round trips of each size over one connection: write, then read the
// echo back in full.
func runPingPong(ctx context.Context, env *Env) (Result, error) {
	r := Result{Name: "pingpong", Kind: KindLatency, Title: "round trip (write, read the echo)"}
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
		out, in := Fill(make([]byte, size)), make([]byte, size)
		row, err := Time(size, warmup, iters, func() error {
			if _, err := c.Write(out); err != nil {
				return err
			}
			_, err := io.ReadFull(c, in)
			return err
		})
		if err != nil {
			return r, fmt.Errorf("%d bytes: %w", size, err)
		}
		r.Rows = append(r.Rows, row)
	}
	return r, nil
}

// Fill writes non-zero bytes into b and returns it.
func Fill(b []byte) []byte {
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}
