package main

import (
	"context"
	"os"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/bench/connbench"
)

func main() {
	benchkit.Main("sockbench", os.Args[1:], parseFlags, run)
}

func parseFlags(args []string) (*connbench.Options, error) {
	return connbench.ParseFlags("sockbench", args, os.Stderr)
}

func run(ctx context.Context, o *connbench.Options) error {
	return connbench.Run(ctx, o, os.Stdout, os.Stderr)
}
