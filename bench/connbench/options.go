package connbench

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Options are the command line of a program built on this package.
type Options struct {
	Transport   string
	Tests       []string
	Sizes       []int // pingpong (and grpc) message sizes
	Iters       int   // pingpong round trips up to 4 KiB; fewer above
	StreamSizes []int // stream write sizes
	StreamBytes int   // bytes a stream repetition sends
	Reps        int   // stream repetitions
	Duration    time.Duration
	Warmup      time.Duration // http clients run this long before the count starts
	Clients     int           // concurrent HTTP clients
	Response    int           // HTTP response body bytes
	JSON        string
	Timeout     time.Duration
	Role        string // client (default) or server
	Addr        string // server's address: the client connects to it instead of starting a server
	Spawned     bool   // hidden: the server exits when its standard input ends
}

// ParseFlags parses the flags of the program prog.
func ParseFlags(prog string, args []string, errOut io.Writer) (*Options, error) {
	o := &Options{}
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.SortFlags = false
	var tests, sizes, streamSizes, streamBytes, response string
	names := make([]string, 0)
	for _, t := range registeredTests() {
		names = append(names, t.Name)
	}
	fs.StringVar(&o.Transport, "transport", "unix", "connections to measure: "+strings.Join(Transports(), "|"))
	fs.StringVar(&tests, "test", "all", "comma list of tests, or all: "+strings.Join(names, ","))
	fs.StringVar(&sizes, "sizes", "64,4K,64K,1M", "pingpong message sizes (K, M: powers of 1024)")
	fs.IntVar(&o.Iters, "iters", 20000, "pingpong round trips per size up to 4 KiB (scaled down above, at least 200)")
	fs.StringVar(&streamSizes, "stream-sizes", "64K,4K,1M", "stream write sizes")
	fs.StringVar(&streamBytes, "stream-bytes", "256M", "bytes one stream repetition sends")
	fs.IntVar(&o.Reps, "reps", 5, "stream repetitions per write size (the median is reported)")
	fs.DurationVar(&o.Duration, "duration", time.Second, "how long connrate, http and grpc run (each counts at least one call)")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "how long the http clients run before they are counted: every client connects and each connection's buffers come into use (a fresh shm ring faults its pages in on its first pass, TCP grows its socket buffers)")
	fs.IntVar(&o.Clients, "clients", 16, "concurrent keep-alive HTTP clients")
	fs.StringVar(&response, "response", "1K", "HTTP response body size")
	fs.StringVar(&o.JSON, "json", "", "also write every result as one JSON document to `FILE`; --json alone prints it on stdout instead of the text")
	fs.Lookup("json").NoOptDefVal = "-"
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up when the whole run takes longer")
	fs.StringVar(&o.Role, "role", "client", "client: start a server process (unless --addr) and measure; server: listen at --addr and serve")
	fs.StringVar(&o.Addr, "addr", "", "the server's address (default: the client starts its own server)")
	fs.BoolVar(&o.Spawned, "spawned", false, "serve until standard input ends (internal)")
	_ = fs.MarkHidden("spawned")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (%s takes flags only)", fs.Arg(0), prog)
	}
	var err error
	if _, err = lookupTransport(o.Transport); err != nil {
		return nil, err
	}
	if o.Tests, err = parseTests(tests, names); err != nil {
		return nil, err
	}
	if o.Sizes, err = parseSizes(sizes); err != nil {
		return nil, fmt.Errorf("--sizes: %w", err)
	}
	if o.StreamSizes, err = parseSizes(streamSizes); err != nil {
		return nil, fmt.Errorf("--stream-sizes: %w", err)
	}
	if o.StreamBytes, err = parseSize(streamBytes); err != nil {
		return nil, fmt.Errorf("--stream-bytes: %w", err)
	}
	if o.Response, err = parseSize(response); err != nil {
		return nil, fmt.Errorf("--response: %w", err)
	}
	switch {
	case o.Role != "client" && o.Role != "server":
		return nil, fmt.Errorf("--role %q: want client or server", o.Role)
	case o.Role == "server" && o.Addr == "":
		return nil, errors.New("--role server needs --addr")
	case o.Iters < 1 || o.Reps < 1 || o.Clients < 1:
		return nil, errors.New("--iters, --reps and --clients must be at least 1")
	case o.Warmup < 0:
		return nil, errors.New("--warmup must not be negative")
	case o.Duration <= 0 || o.Timeout <= 0:
		return nil, errors.New("--duration and --timeout must be positive")
	case o.StreamBytes < 1:
		return nil, errors.New("--stream-bytes must be at least 1")
	}
	return o, nil
}

func parseTests(s string, names []string) ([]string, error) {
	want := map[string]bool{}
	for t := range strings.SplitSeq(s, ",") {
		t = strings.TrimSpace(t)
		switch {
		case t == "all":
			for _, n := range names {
				want[n] = true
			}
		case slices.Contains(names, t):
			want[t] = true
		default:
			return nil, fmt.Errorf("unknown --test %q: choose from all, %s", t, strings.Join(names, ", "))
		}
	}
	var out []string
	for _, n := range names {
		if want[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := parseSize(f)
		if err != nil {
			return nil, err
		}
		if n < 1 || n > maxSize {
			return nil, fmt.Errorf("size %d: want 1 to %d", n, maxSize)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseSize parses a byte count with an optional K, M or G suffix (powers of 1024).
func parseSize(s string) (int, error) {
	s = strings.TrimSpace(s)
	mult := 1
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		}
		if mult > 1 {
			s = s[:n-1]
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("bad size %q: want a byte count such as 64, 4K or 1M", s)
	}
	return n * mult, nil
}
