package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
)

// scenario is one MPICH test re-expressed: the file it re-expresses, the rank count
// testlist.in runs it with, and the check itself, which returns an error naming what
// differs at this rank.
type scenario struct {
	mpich string
	ranks int
	run   func(ctx context.Context, w *runtime.World) error
}

// scenarios is the registry, by name; every file adds its own in init.
var scenarios = map[string]scenario{}

// knownFailing names the scenarios that fail because gorma departs from MPI there (see
// doc.go); the test does not run them.
var knownFailing = map[string]string{}

// finalizing names the scenarios that call Finalize themselves (what they check happens
// in it): they agree on the outcome before its end, and main neither Barriers nor
// Finalizes after them.
var finalizing = map[string]bool{}

func register(name, mpich string, ranks int, run func(ctx context.Context, w *runtime.World) error) {
	if _, dup := scenarios[name]; dup {
		panic("mpichport: scenario " + name + " registered twice")
	}
	scenarios[name] = scenario{mpich: mpich, ranks: ranks, run: run}
}

// names returns the scenarios' names, sorted.
func names() []string {
	ns := make([]string, 0, len(scenarios))
	for n := range scenarios {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-list" {
		for _, n := range names() {
			s := scenarios[n]
			fmt.Printf("%s %d %s\n", n, s.ranks, s.mpich)
		}
		return
	}
	if len(os.Args) != 2 || scenarios[os.Args[1]].run == nil {
		fmt.Fprintf(os.Stderr, "usage: mpichport SCENARIO | -list; scenarios: %v\n", names())
		os.Exit(2)
	}
	name := os.Args[1]
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mpichport: init: %v\n", err)
		os.Exit(1)
	}
	if err := scenarios[name].run(ctx, w); err != nil {
		fmt.Fprintf(os.Stderr, "mpichport: rank %d: %s (%s): %v\n", w.Rank(), name, scenarios[name].mpich, err)
		os.Exit(1)
	}
	if finalizing[name] {
		if w.Rank() == 0 {
			fmt.Printf("PASS %s\n", name)
		}
		return
	}
	// Every rank passed its checks; the barrier makes rank 0's line mean all of them.
	if err := runtime.Barrier(ctx, w); err != nil {
		fmt.Fprintf(os.Stderr, "mpichport: rank %d: %s: final barrier: %v\n", w.Rank(), name, err)
		os.Exit(1)
	}
	if w.Rank() == 0 {
		fmt.Printf("PASS %s\n", name)
	}
	if err := w.Finalize(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "mpichport: rank %d: finalize: %v\n", w.Rank(), err)
		os.Exit(1)
	}
}
