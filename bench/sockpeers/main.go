package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/gorma-hpc/gorma/bench/connbench"
)

func main() {
	o, err := connbench.ParseFlags("sockpeers", os.Args[1:], os.Stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sockpeers: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = connbench.Run(ctx, o, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sockpeers: %v\n", err)
		os.Exit(1)
	}
}
