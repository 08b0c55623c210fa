package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
)

func main() {
	sizesFlag := flag.String("sizes", "1048576,4194304", "comma-separated sizes in bytes (multiples of 8 times the rank count)")
	seccomp := flag.Bool("seccomp", false, "refuse process_vm_readv in this process (a seccomp filter) before Init")
	refuse := flag.String("refuse", "", "RANK:N: rank RANK refuses its Nth single-copy read")
	flag.Parse()
	var sizes []int
	for f := range strings.SplitSeq(*sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n%8 != 0 {
			fmt.Fprintf(os.Stderr, "singleprog: --sizes: %q is not a positive multiple of 8\n", f)
			os.Exit(2)
		}
		sizes = append(sizes, n)
	}
	if *seccomp {
		if err := refuseCMA(); err != nil {
			fmt.Printf("singleprog: no seccomp: %v\n", err)
			os.Exit(3)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "singleprog: init: %v\n", err)
		os.Exit(1)
	}
	if rank, n, ok := strings.Cut(*refuse, ":"); ok && rank == strconv.Itoa(w.Rank()) {
		os.Setenv("GORMA_TEST_REFUSE_READ", n)
	}
	for _, size := range sizes {
		if err := moves(ctx, w, size/8); err != nil {
			fmt.Fprintf(os.Stderr, "singleprog: rank %d: %v\n", w.Rank(), err)
			os.Exit(1)
		}
	}
	if err := collectives.Barrier(ctx, w); err != nil {
		fmt.Fprintf(os.Stderr, "singleprog: rank %d: final Barrier: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	if w.Rank() == 0 {
		fmt.Printf("PASS singleprog %d ranks\n", w.Size())
	}
	if err := w.Finalize(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "singleprog: rank %d: finalize: %v\n", w.Rank(), err)
		os.Exit(1)
	}
}

// value is element i of rank r's data in the call numbered call.
func value(call, r, i int) int64 { return int64(call)<<48 ^ int64(r)<<32 ^ int64(i) }

// moves makes a Bcast of n elements from rank 0, an Allgather of n-element blocks, an
// Alltoall of n elements per rank and a Scatter of n-element blocks from rank 0, and
// checks each result.
func moves(ctx context.Context, w *runtime.World, n int) error {
	me, p := w.Rank(), w.Size()
	buf := make([]int64, n)
	for i := range buf {
		buf[i] = -1
		if me == 0 {
			buf[i] = value(1, 0, i)
		}
	}
	if err := collectives.Bcast(ctx, w, buf, 0); err != nil {
		return fmt.Errorf("bcast of %d bytes: %w", 8*n, err)
	}
	if err := check("Bcast", 8*n, buf, func(i int) int64 { return value(1, 0, i) }); err != nil {
		return err
	}
	send := make([]int64, n)
	for i := range send {
		send[i] = value(2, me, i)
	}
	recv := make([]int64, p*n)
	for i := range recv {
		recv[i] = -1
	}
	if err := collectives.Allgather(ctx, w, send, recv); err != nil {
		return fmt.Errorf("allgather of %d-byte blocks: %w", 8*n, err)
	}
	if err := check("Allgather", 8*n, recv, func(i int) int64 { return value(2, i/n, i%n) }); err != nil {
		return err
	}
	b := n / p // Alltoall: n elements per rank, b per block
	send = send[:b*p]
	for i := range send {
		send[i] = value(3, me, i)
	}
	recv = recv[:b*p]
	for i := range recv {
		recv[i] = -1
	}
	if err := collectives.Alltoall(ctx, w, send, recv); err != nil {
		return fmt.Errorf("alltoall of %d bytes: %w", 8*b*p, err)
	}
	// Block s of recv is block me of rank s's send.
	if err := check("Alltoall", 8*b*p, recv, func(i int) int64 { return value(3, i/b, me*b+i%b) }); err != nil {
		return err
	}
	var all []int64 // Scatter: rank 0's p blocks of n elements
	if me == 0 {
		all = make([]int64, p*n)
		for i := range all {
			all[i] = value(4, i/n, i%n)
		}
	}
	recv = recv[:n]
	for i := range recv {
		recv[i] = -1
	}
	if err := collectives.Scatter(ctx, w, all, recv, 0); err != nil {
		return fmt.Errorf("scatter of %d-byte blocks: %w", 8*n, err)
	}
	return check("Scatter", 8*n, recv, func(i int) int64 { return value(4, me, i) })
}

// check compares got with want element by element and names the first difference.
func check(what string, bytes int, got []int64, want func(i int) int64) error {
	for i, v := range got {
		if v != want(i) {
			return fmt.Errorf("%s of %d bytes: element %d is %#x, want %#x", what, bytes, i, v, want(i))
		}
	}
	return nil
}
