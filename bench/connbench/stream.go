package connbench

import (
	"context"
	"fmt"
	"io"
	"time"
)

// runStream times one-way transfers of --stream-bytes in writes of each stream size:
// from the first write to the server's one-byte answer after the last byte, --reps
// times per size, over one connection.
func runStream(ctx context.Context, env *Env) (Result, error) {
	r := Result{Name: "stream", Kind: KindBandwidth, Title: fmt.Sprintf("one-way throughput, %d bytes a repetition", env.O.StreamBytes)}
	c, err := env.Dial(ctx)
	if err != nil {
		return r, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	ack := make([]byte, 1)
	for _, size := range env.O.StreamSizes {
		buf := Fill(make([]byte, size))
		total := max(env.O.StreamBytes/size, 1) * size
		row := Row{Bytes: size}
		for rep := -1; rep < env.O.Reps; rep++ { // rep -1 warms up
			if err := writeHeader(c, header{op: opSink, size: uint32(size), count: uint64(total)}); err != nil {
				return r, err
			}
			t0 := time.Now()
			for sent := 0; sent < total; sent += size {
				if _, err := c.Write(buf); err != nil {
					return r, fmt.Errorf("%d-byte writes: %w", size, err)
				}
			}
			if _, err := io.ReadFull(c, ack); err != nil {
				return r, fmt.Errorf("%d-byte writes: %w", size, err)
			}
			if rep >= 0 {
				mbps := float64(total) / time.Since(t0).Seconds() / 1e6
				row.RepsMBps = append(row.RepsMBps, round3(mbps))
			}
		}
		row.MBps = round3(median(row.RepsMBps))
		row.Iterations = total / size
		r.Rows = append(r.Rows, row)
	}
	return r, nil
}
