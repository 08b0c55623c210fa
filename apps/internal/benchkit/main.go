package benchkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

// Main is a benchmark program's main: it parses args with parse, and runs run with a
// context that SIGINT and SIGTERM cancel. --help (pflag.ErrHelp) exits 0 after pflag's
// usage text; a flag error is printed as "name: error" and exits 2, a run error exits 1.
func Main[O any](name string, args []string, parse func([]string) (O, error), run func(context.Context, O) error) {
	os.Exit(mainCode(name, args, os.Stderr, parse, run))
}

// mainCode is Main without the exit: it returns the exit code.
func mainCode[O any](name string, args []string, stderr io.Writer, parse func([]string) (O, error), run func(context.Context, O) error) int {
	o, err := parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}
