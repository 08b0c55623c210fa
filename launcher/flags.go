package launcher

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Defaults of the job flags.
const (
	DefaultGrace          = 3 * time.Second
	DefaultStartupTimeout = 60 * time.Second
	DefaultHangReport     = 30 * time.Second
)

// Options are golaunch's job flags, parsed.
type Options struct {
	NP             int         // ranks; 0 means "the slots of the host list" (or the CPUs)
	Hosts          []HostSlots // from -H and --hostfile, in order; nil means "every agent"
	Env            []string    // -x, resolved to NAME=VALUE
	TagOutput      bool        // prefix each line with "[rank] "
	OutputDir      string      // one file per rank instead of the terminal
	Timeout        time.Duration
	StartupTimeout time.Duration
	HangReport     time.Duration // quiet period after which a hang is reported; 0: never
	Stacks         bool          // hang reports carry the ranks' goroutine stacks
	Grace          time.Duration
	Transport      string // auto, shm or tcp
	BindTo         string // auto, core or none: binding of ranks to processors (bind.go)
	Join           string // agent address to submit to; "" runs locally
	Keyfile        string // cluster key, with Join
	Bind           string // gossip address of the submitter, with Join
	Verbose        bool   // memberlist and protocol logs on stderr
	Version, Help  bool
	Program        string
	Args           []string

	tagDefault bool // --tag-output was not given: on when N>1
}

// UsageError is a mistake on the command line: golaunch prints it and exits with
// ExitUsage.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// durationFlag is a pflag.Value taking a Go duration ("90s", "1m30s") or plain seconds.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string { return f.d.String() }
func (f durationFlag) Type() string   { return "duration" }
func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, err2 := strconv.ParseFloat(s, 64)
		if err2 != nil || secs > 1e9 {
			return fmt.Errorf("want a duration such as 90s, 1m30s or 2h (or plain seconds)")
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return fmt.Errorf("negative duration")
	}
	*f.d = d
	return nil
}

// jobFlags declares the job flags on a new FlagSet writing into o.
func jobFlags(o *Options) (*pflag.FlagSet, *string, *string, *[]string) {
	fs := pflag.NewFlagSet("golaunch", pflag.ContinueOnError)
	fs.SetInterspersed(false) // flags stop at the program name
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	hostList, hostfile := new(string), new(string)
	env := new([]string)
	o.Grace, o.StartupTimeout, o.Transport, o.BindTo = DefaultGrace, DefaultStartupTimeout, "auto", BindAuto
	o.HangReport = DefaultHangReport
	fs.IntVarP(&o.NP, "np", "n", 0, "number of ranks (also -np N); default: the slots of -H/--hostfile, the cluster's slots with --join, else the CPUs")
	fs.StringVarP(hostList, "host", "H", "", "`host:slots,...` to place ranks on, in order (with --join: agent names; locally: this host only)")
	fs.StringVar(hostfile, "hostfile", "", "`file` of hosts, one per line: \"host slots=N\" or \"host:N\", # comments")
	fs.StringArrayVarP(env, "env", "x", nil, "pass `NAME[=VALUE]` to the ranks (repeatable); NAME alone forwards golaunch's value")
	fs.BoolVar(&o.TagOutput, "tag-output", false, "prefix each output line with \"[rank] \" (default on when N>1; --tag-output=false to turn off)")
	fs.StringVar(&o.OutputDir, "output-dir", "", "write each rank's stdout and stderr to `dir`/rank.N.log instead of the terminal")
	fs.Var(durationFlag{&o.Timeout}, "timeout", "abort the job after this wall-clock `duration` (exit 124); 0 means none")
	fs.Var(durationFlag{&o.StartupTimeout}, "startup-timeout", "every rank must reach PMI init within this `duration` of the start (checked again each period until one rank has reached it); 0 means no limit")
	fs.Var(durationFlag{&o.Grace}, "grace", "delay between SIGTERM and SIGKILL when the job is aborted")
	fs.Var(durationFlag{&o.HangReport}, "hang-report", "print where every rank is blocked once no rank has made progress for this `duration` (also on SIGUSR1 or SIGQUIT, and at --timeout); 0 means only on those")
	fs.BoolVar(&o.Stacks, "stacks", false, "hang reports include every rank's goroutine stacks")
	fs.StringVar(&o.Transport, "transport", "auto", "transport between ranks: auto, shm or tcp")
	fs.StringVar(&o.BindTo, "bind-to", BindAuto, "bind ranks to processors: auto (hosts with more ranks than processors, the ranks in turn), core (every host) or none")
	fs.StringVar(&o.Join, "join", "", "submit to the agent cluster at `host:port` instead of running locally")
	fs.StringVar(&o.Keyfile, "keyfile", "", "cluster key `file` (with --join): 16, 24 or 32 bytes, raw or hex")
	fs.StringVar(&o.Bind, "bind", "", "gossip `address` of this submitter with --join (default: the local address that reaches --join, port 0)")
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "log membership and protocol events to stderr")
	fs.BoolVar(&o.Version, "version", false, "print the version and exit")
	fs.BoolVarP(&o.Help, "help", "h", false, "print this help and exit")
	return fs, hostList, hostfile, env
}

// ParseArgs parses golaunch's job command line (without the program name of golaunch
// itself). getenv resolves -x NAME. Mistakes come back as *UsageError.
func ParseArgs(args []string, getenv func(string) (string, bool)) (*Options, error) {
	o := &Options{}
	fs, hostList, hostfile, env := jobFlags(o)
	if err := fs.Parse(fixNP(fs, args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			o.Help = true
			return o, nil
		}
		return nil, usagef("%v", err)
	}
	if o.Help || o.Version {
		return o, nil
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, usagef("no program to run (usage: golaunch [flags] PROGRAM [ARGS...])")
	}
	o.Program, o.Args = rest[0], rest[1:]
	if o.Program == "" {
		return nil, usagef("empty program name")
	}
	if fs.Changed("np") && o.NP < 1 {
		return nil, usagef("-n %d: want at least 1 rank", o.NP)
	}
	// A local run gives this host -n slots; bound it as an agent's --slots is bound, so
	// that a typo is a usage error instead of a rank table of billions (an out-of-memory
	// crash). With --join, the cluster's slots bound -n.
	if o.Join == "" && o.NP > maxSlots {
		return nil, usagef("-n %d: a local run starts at most %d ranks (use --join to spread more over agents)", o.NP, maxSlots)
	}
	switch o.Transport {
	case "auto", "shm", "tcp":
	default:
		return nil, usagef("--transport %q: want auto, shm or tcp", o.Transport)
	}
	if err := checkBindTo(o.BindTo); err != nil {
		return nil, usagef("%v", err)
	}
	if err := o.parseHosts(*hostList, *hostfile); err != nil {
		return nil, err
	}
	var err error
	if o.Env, err = resolveEnv(*env, getenv); err != nil {
		return nil, err
	}
	if o.Join != "" {
		if o.Keyfile == "" {
			return nil, usagef("--join needs --keyfile (the cluster key the agents were started with)")
		}
		if err := checkHostPort(o.Join); err != nil {
			return nil, usagef("--join %q: %v", o.Join, err)
		}
	} else if o.Keyfile != "" || o.Bind != "" {
		return nil, usagef("--keyfile and --bind only make sense with --join")
	}
	if !fs.Changed("tag-output") {
		o.tagDefault = true // decided once N is known
	}
	return o, nil
}

// fixNP rewrites the mpirun spelling -np (which pflag reads as -n -p) to --np, in the
// flags before the program name only.
func fixNP(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || !strings.HasPrefix(a, "-") || a == "-":
			return append(out, args[i:]...) // the program (or --) and everything after it
		case a == "-np" || strings.HasPrefix(a, "-np="):
			out = append(out, "-"+a)
			if a == "-np" && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			continue
		}
		out = append(out, a)
		if takesValue(fs, a) && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// takesValue reports whether flag argument a (without =value) consumes the next
// argument as its value.
func takesValue(fs *pflag.FlagSet, a string) bool {
	if strings.Contains(a, "=") {
		return false
	}
	var f *pflag.Flag
	if strings.HasPrefix(a, "--") {
		f = fs.Lookup(a[2:])
	} else {
		// A run of short flags: only the last one may take the next argument, and only
		// when nothing follows it in the same word.
		sh := a[1:]
		f = fs.ShorthandLookup(sh[len(sh)-1:])
		if f != nil && len(sh) > 1 {
			prev := fs.ShorthandLookup(sh[:1])
			if prev != nil && prev.NoOptDefVal == "" {
				return false // -n4: the value is attached
			}
		}
	}
	return f != nil && f.NoOptDefVal == ""
}

func (o *Options) parseHosts(hostList, hostfile string) error {
	if hostList != "" && hostfile != "" {
		return usagef("give -H or --hostfile, not both")
	}
	var err error
	switch {
	case hostList != "":
		if o.Hosts, err = ParseHostList(hostList); err != nil {
			return usagef("-H %q: %v", hostList, err)
		}
	case hostfile != "":
		if o.Hosts, err = ReadHostfile(hostfile); err != nil {
			return usagef("%v", err)
		}
	}
	return nil
}

// resolveEnv turns -x arguments into NAME=VALUE.
func resolveEnv(xs []string, getenv func(string) (string, bool)) ([]string, error) {
	var env []string
	for _, x := range xs {
		name, val, hasVal := strings.Cut(x, "=")
		if err := checkEnvName(name); err != nil {
			return nil, usagef("-x %q: %v", x, err)
		}
		if !hasVal {
			v, ok := getenv(name)
			if !ok {
				return nil, usagef("-x %s: %s is not set in golaunch's environment (use -x %s=VALUE)", name, name, name)
			}
			val = v
		}
		env = append(env, name+"="+val)
	}
	return env, nil
}

func checkEnvName(name string) error {
	if name == "" {
		return fmt.Errorf("empty variable name")
	}
	for i, c := range []byte(name) {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("%q is not a valid variable name", name)
		}
	}
	if strings.HasPrefix(name, "GOLAUNCH_") {
		return fmt.Errorf("GOLAUNCH_* variables are golaunch's own contract with the ranks")
	}
	return nil
}

// checkHostPort checks a host:port address (port 0 allowed).
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if host == "" {
		return fmt.Errorf("no host (want host:port)")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port %q: want 0 to 65535", port)
	}
	return nil
}

// AgentOptions are the flags of `golaunch agent`.
type AgentOptions struct {
	Bind        string        // gossip address host:port (port 0 picks one)
	Join        []string      // agents to join
	JoinRetry   time.Duration // keep trying the first join this long (0: fail at once)
	Slots       int
	Keyfile     string
	Name        string // memberlist name, default the host name
	Advertise   string // address advertised to the cluster (default: derived from Bind)
	ControlPort int    // control listener port on the bind IP (0 picks one)
	Verbose     bool
	Help        bool
}

// ParseAgentArgs parses the arguments after `golaunch agent`.
func ParseAgentArgs(args []string) (*AgentOptions, *pflag.FlagSet, error) {
	o := &AgentOptions{}
	fs := pflag.NewFlagSet("golaunch agent", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.StringVar(&o.Bind, "bind", "", "gossip `address` host:port to listen on (UDP and TCP); port 0 picks one")
	fs.StringSliceVar(&o.Join, "join", nil, "`address` of an agent already in the cluster (repeatable or comma-separated)")
	fs.DurationVar(&o.JoinRetry, "join-retry", 0, "keep trying --join every second for this `duration` when no agent answers (agents started in any order); 0 fails at once")
	fs.IntVar(&o.Slots, "slots", runtime.NumCPU(), "ranks this host runs")
	fs.StringVar(&o.Keyfile, "keyfile", "", "cluster key `file`: 16, 24 or 32 bytes, raw or hex (mode 0600)")
	fs.StringVar(&o.Name, "name", "", "this agent's `name` in the cluster (default: the host name); -H and GOLAUNCH_HOST use it")
	fs.StringVar(&o.Advertise, "advertise", "", "`IP` advertised to the cluster (default: the bind IP, or a private IP when binding 0.0.0.0)")
	fs.IntVar(&o.ControlPort, "control-port", 0, "TCP `port` for job submissions on the bind IP (0 picks one; it travels in the node metadata)")
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "log membership debug messages too")
	fs.BoolVarP(&o.Help, "help", "h", false, "print this help and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			o.Help = true
			return o, fs, nil
		}
		return nil, fs, usagef("agent: %v", err)
	}
	if o.Help {
		return o, fs, nil
	}
	if fs.NArg() > 0 {
		return nil, fs, usagef("agent: unexpected argument %q", fs.Arg(0))
	}
	if o.Bind == "" {
		return nil, fs, usagef("agent: --bind host:port is required (e.g. --bind 10.0.0.2:7946)")
	}
	if err := checkHostPort(o.Bind); err != nil {
		return nil, fs, usagef("agent: --bind %q: %v", o.Bind, err)
	}
	if o.JoinRetry < 0 || (o.JoinRetry > 0 && len(o.Join) == 0) {
		return nil, fs, usagef("agent: --join-retry %v: want a duration >= 0, with --join", o.JoinRetry)
	}
	for _, j := range o.Join {
		if err := checkHostPort(j); err != nil {
			return nil, fs, usagef("agent: --join %q: %v", j, err)
		}
	}
	if o.Slots < 1 || o.Slots > maxSlots {
		return nil, fs, usagef("agent: --slots %d: want 1 to %d", o.Slots, maxSlots)
	}
	if o.Keyfile == "" {
		return nil, fs, usagef("agent: --keyfile is required (the cluster key; e.g. `head -c 32 /dev/urandom | xxd -p -c 64 > key; chmod 600 key`)")
	}
	if o.ControlPort < 0 || o.ControlPort > 65535 {
		return nil, fs, usagef("agent: --control-port %d out of range", o.ControlPort)
	}
	if o.Name == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fs, usagef("agent: no --name and no host name: %v", err)
		}
		o.Name = h
	}
	if err := checkHostName(o.Name); err != nil {
		return nil, fs, usagef("agent: --name: %v", err)
	}
	return o, fs, nil
}

// usageText is golaunch --help.
func usageText() string {
	o := &Options{}
	fs, _, _, _ := jobFlags(o)
	return `golaunch runs N copies of a program as one parallel job (an MPI-style launcher).

Usage:
  golaunch [flags] PROGRAM [ARGS...]
  golaunch agent --bind ADDR [--join ADDR] --slots N --keyfile FILE [--name NAME]

Flags stop at the program name (or at --). Flags:
` + fs.FlagUsages() + `
Examples:
  golaunch -n 4 ./hello                     4 ranks on this host
  golaunch -np 8 --timeout 10m ./solver in.dat
  golaunch -n 2 -x OMP_NUM_THREADS=1 -x PATH ./bench --json
  golaunch -n 4 --output-dir logs ./prog    logs/rank.0.log ... logs/rank.3.log
  golaunch -n 8 --bind-to none ./prog       more ranks than cores, left unbound
  golaunch -n 16 --join node1:7946 --keyfile ~/.gorma.key ./prog
  golaunch -H node1:4,node2:4 --join node1:7946 --keyfile ~/.gorma.key ./prog

A cluster: on every host run
  golaunch agent --bind 10.0.0.2:7946 --join 10.0.0.1:7946 --slots 8 --keyfile /etc/gorma.key

Exit status: 0 when every rank called Finalize and exited 0; otherwise the first failing
rank's exit code, 123 when it panicked (a Go panic, which exits 2 itself), 128+N when it
was killed by signal N, 124 when --timeout expired, 125 when the job failed without an
exit code of its own (an agent lost, a rank that exited without Finalize or never reached
PMI init), 2 for a usage error. One summary line on stderr names the cause.
`
}

// agentUsageText is golaunch agent --help.
func agentUsageText(fs *pflag.FlagSet) string {
	return `golaunch agent runs one host's agent: it joins the cluster (memberlist, encrypted with
the cluster key) and runs the ranks of jobs submitted with golaunch --join.

Usage:
  golaunch agent --bind ADDR [--join ADDR] --slots N --keyfile FILE [--name NAME]

Flags:
` + fs.FlagUsages() + `
Example:
  head -c 32 /dev/urandom | xxd -p -c 64 > /etc/gorma.key; chmod 600 /etc/gorma.key
  golaunch agent --bind 10.0.0.1:7946 --slots 8 --keyfile /etc/gorma.key              # first host
  golaunch agent --bind 10.0.0.2:7946 --join 10.0.0.1:7946 --slots 8 --keyfile /etc/gorma.key
`
}
