package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
)

// valueLen is the length of each rank's value: several times a PMI vallen_max of 1024,
// so that Put splits it.
const valueLen = 5000

// value returns rank's value: every byte value, in a pattern that differs by rank.
func value(rank int) []byte {
	b := make([]byte, valueLen)
	for i := range b {
		b[i] = byte(i*31 + rank*7 + i/256)
	}
	return b
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(time.Minute))
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "pmiclientprog:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	f, err := pmi.Connect(ctx, os.Getenv)
	if err != nil {
		return err
	}
	defer f.Close()
	if len(os.Args) == 3 && os.Args[1] == "abort" {
		return abort(ctx, f)
	}
	if err := f.Put(ctx, "card", value(f.Rank())); err != nil {
		return err
	}
	if err := f.Fence(ctx); err != nil {
		return err
	}
	for r := 0; r < f.Size(); r++ {
		got, err := f.Get(ctx, r, "card")
		if err != nil {
			return err
		}
		if !bytes.Equal(got, value(r)) {
			return fmt.Errorf("rank %d read a wrong value of rank %d (%d bytes)", f.Rank(), r, len(got))
		}
	}
	nodes, err := f.Nodes(ctx)
	if err != nil {
		return err
	}
	if err := f.Fence(ctx); err != nil { // nobody finalizes while another still reads
		return err
	}
	if err := f.Finalize(ctx); err != nil {
		return err
	}
	fmt.Printf("ok %d %d %s %s\n", f.Rank(), f.Size(), f.Version(), nodeList(nodes))
	return nil
}

func nodeList(nodes []int) string {
	if nodes == nil {
		return "none"
	}
	var b []byte
	for i, n := range nodes {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(b)
}

// abort: the rank named by the second argument asks the server to end the job with code
// 7; the others wait in a fence that never completes, until the server kills them.
func abort(ctx context.Context, f *pmi.Foreign) error {
	if strconv.Itoa(f.Rank()) == os.Args[2] {
		if err := f.Abort(7, "pmiclientprog: abort on request"); err != nil {
			return err
		}
		<-ctx.Done()
		return fmt.Errorf("rank %d: still running after Abort: %w", f.Rank(), ctx.Err())
	}
	return f.Fence(ctx)
}
