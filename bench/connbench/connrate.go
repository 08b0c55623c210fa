package connbench

import (
	"context"
	"time"
)

// runConnRate counts dial + close of new connections for --duration (and at least one),
// one at a time, after a warmup of 100. The server accepts each and closes it at its end of stream.
func runConnRate(ctx context.Context, env *Env) (Result, error) {
	r := Result{Name: "connrate", Kind: KindRate, Title: "connections per second (dial + close, one at a time)"}
	once := func() error {
		c, err := env.Dial(ctx)
		if err != nil {
			return err
		}
		return c.Close()
	}
	for range 100 {
		if err := once(); err != nil {
			return r, err
		}
	}
	n, t0 := 0, time.Now()
	for n == 0 || time.Since(t0) < env.O.Duration {
		if err := once(); err != nil {
			return r, err
		}
		n++
	}
	r.Rows = []Row{{Bytes: 0, PerS: round3(float64(n) / time.Since(t0).Seconds()), Count: n}}
	return r, nil
}
