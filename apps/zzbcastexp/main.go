package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func main() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		panic(err)
	}
	n := 1 << 20
	heap := make([]byte, n)
	mm, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	if os.Getenv("NOHUGE") != "" {
		syscall.Madvise(mm, 14) // MADV_NOHUGEPAGE
	} else {
		syscall.Madvise(mm, 14)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{{"heap", heap}, {"mmap4k", mm}, {"heap", heap}, {"mmap4k", mm}} {
		for i := 0; i < 5; i++ {
			collectives.Bcast(ctx, w, c.b, 0)
		}
		var r0, r1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		t0 := time.Now()
		const it = 200
		for i := 0; i < it; i++ {
			collectives.Bcast(ctx, w, c.b, 0)
		}
		el := time.Since(t0)
		syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		cpu := time.Duration((r1.Utime.Nano() + r1.Stime.Nano()) - (r0.Utime.Nano() + r0.Stime.Nano()))
		fmt.Printf("rank %d %s: wall %v/call cpu %v/call sys %v/call\n", w.Rank(), c.name, el/it, cpu/it, time.Duration(r1.Stime.Nano()-r0.Stime.Nano())/it)
	}
	w.Finalize(ctx)
}
