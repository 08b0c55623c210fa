package launcher

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
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
	NP             int         // ranks (of every program); 0 means "the slots of the host list" (or the CPUs)
	Hosts          []HostSlots // from -H and --hostfile, in order; nil means "every agent"
	MaxSlots       map[string]int
	Env            []string // -x before the first program, resolved to NAME=VALUE: every program's
	TagOutput      bool     // prefix each line with "[rank] "
	OutputDir      string   // one file per rank instead of the terminal
	Timeout        time.Duration
	StartupTimeout time.Duration
	HangReport     time.Duration // quiet period after which a hang is reported; 0: never
	Stacks         bool          // hang reports carry the ranks' goroutine stacks
	Grace          time.Duration
	FT             bool   // --ft: a rank's failure does not abort the job (GORMA_FT=1 for the ranks)
	Transport      string // auto, shm or tcp
	BindTo         string // auto, core or none: binding of ranks to processors (bind.go)
	MapBy          string // core, socket or node: how ranks fill the hosts (Place)
	PerNode        int    // --npernode: at most this many ranks per host; 0: its slots
	Oversubscribe  bool   // ranks beyond the slots are allowed (Placement)
	ReportBindings bool   // print each rank's host and processors on stderr as it starts
	Join           string // agent address to submit to; "" runs locally
	Keyfile        string // cluster key, with Join
	GossipAddr     string // gossip address of the submitter, with Join
	TreeFanout     int    // --tree-fanout: children per agent in the job's agent tree, which the spec and gathering fences' cards go down (treespec.go, treefence.go)
	Verbose        bool   // memberlist and protocol logs on stderr
	Trace          string // --trace, absolute: the timeline's file (GORMA_TRACE), where a hang's dumps are merged
	Version, Help  bool
	Program        string // the (first) program
	Args           []string
	// Apps are the programs of an MPMD command line (golaunch -n 2 ./a : -n 2 ./b), in
	// rank order; nil for one program. Apps[0] is Program with Args, and NP their total.
	Apps  []App
	Notes []string // printed on stderr as "golaunch: note: ..." before the job starts

	tagDefault bool // --tag-output was not given: on when N>1
}

// App is one program of an MPMD job: its ranks follow those of the programs before it.
type App struct {
	NP      int
	Program string
	Args    []string
	Env     []string // its own -x variables, NAME=VALUE, after the job's (later ones win)
}

// Placement returns the placement the flags ask for.
func (o *Options) Placement() Placement {
	return Placement{MapBy: o.MapBy, PerNode: o.PerNode, Oversubscribe: o.Oversubscribe, MaxSlots: o.MaxSlots}
}

// UsageError is a mistake on the command line: golaunch prints it and exits with
// ExitUsage.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// valueErr records the first flag value that failed to parse, in the user's words: pflag
// wraps a Value's error in its own ("invalid argument ... for ... flag").
type valueErr struct{ err error }

func (v *valueErr) note(format string, a ...any) error {
	err := usagef(format, a...)
	if v.err == nil {
		v.err = err
	}
	return err
}

// durationFlag is a pflag.Value taking a Go duration ("90s", "1m30s") or plain seconds.
type durationFlag struct {
	d    *time.Duration
	name string
	errs *valueErr
}

func (f durationFlag) String() string { return f.d.String() }
func (f durationFlag) Type() string   { return "duration" }
func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, err2 := strconv.ParseFloat(s, 64)
		if err2 != nil || secs > 1e9 || secs != secs {
			return f.errs.note("--%s %s: want a duration such as 90s, 1m30s or 2h (or plain seconds)", f.name, s)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return f.errs.note("--%s %s: negative duration", f.name, s)
	}
	*f.d = d
	return nil
}

// countFlag is a pflag.Value taking a whole number (of ranks).
type countFlag struct {
	n          *int
	name, what string // "-n", "ranks"
	errs       *valueErr
}

func (f countFlag) String() string { return strconv.Itoa(*f.n) }
func (f countFlag) Type() string   { return "int" }
func (f countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return f.errs.note("%s %s: want a whole number of %s, such as %s 4", f.name, s, f.what, f.name)
	}
	*f.n = n
	return nil
}

// rawFlags are the job flags that ParseArgs checks and converts after pflag.
type rawFlags struct {
	hostList, hostfile, gossipBind, mapBy string
	env                                   []string
	allowRoot                             bool
	profile, trace                        string // --profile, --trace
	summary                               bool   // --summary
	displayMap                            bool   // mpirun's --display-map
	outputFilename                        string // mpirun's --output-filename
	errs                                  valueErr
}

// jobFlags declares the job flags on a new FlagSet writing into o. The hidden ones are
// mpirun's and mpiexec's spellings of golaunch's flags.
func jobFlags(o *Options) (*pflag.FlagSet, *rawFlags) {
	fs := pflag.NewFlagSet("golaunch", pflag.ContinueOnError)
	fs.SetInterspersed(false) // flags stop at the program name
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	r := &rawFlags{}
	o.Grace, o.StartupTimeout, o.Transport, o.BindTo = DefaultGrace, DefaultStartupTimeout, "auto", BindAuto
	o.HangReport, o.MapBy = DefaultHangReport, MapCore
	hidden := func(name string) { fs.MarkHidden(name) }
	fs.VarP(countFlag{&o.NP, "-n", "ranks", &r.errs}, "np", "n", "number of ranks (also -np N); default: the slots of -H/--hostfile, the cluster's slots with --join, else the CPUs")
	fs.StringVarP(&r.hostList, "host", "H", "", "`host:slots,...` to place ranks on, in order (with --join: agent names; locally: this host only)")
	fs.StringVar(&r.hostList, "hosts", "", "mpiexec's -hosts: -H")
	hidden("hosts")
	fs.StringVarP(&r.hostfile, "hostfile", "f", "", "`file` of hosts, one per line: \"host slots=N\" or \"host:N\", optionally max_slots=M, # comments (also -hostfile, -machinefile)")
	fs.StringVar(&r.hostfile, "machinefile", "", "mpirun's and mpiexec's -machinefile: --hostfile")
	hidden("machinefile")
	fs.StringVar(&r.mapBy, "map-by", MapCore, "how ranks fill the hosts: core (each host up to its slots, in order), socket (the same rank table) or node (one rank per host in turn)")
	fs.Var(countFlag{&o.PerNode, "--npernode", "ranks per host", &r.errs}, "npernode", "at most `N` ranks per host (also -ppn N); -n defaults to N per host")
	fs.Var(countFlag{&o.PerNode, "-ppn", "ranks per host", &r.errs}, "ppn", "mpiexec's -ppn: --npernode")
	hidden("ppn")
	fs.BoolVar(&o.Oversubscribe, "oversubscribe", false, "allow more ranks than slots on a host (up to a hostfile's max_slots); a local run without -H or --hostfile has -n slots anyway")
	fs.StringArrayVarP(&r.env, "env", "x", nil, "pass `NAME[=VALUE]` to the ranks (repeatable); NAME alone forwards golaunch's value")
	fs.BoolVar(&o.TagOutput, "tag-output", false, "prefix each output line with \"[rank] \" (default on when N>1; --tag-output=false to turn off)")
	fs.StringVar(&o.OutputDir, "output-dir", "", "write each rank's stdout and stderr to `dir`/rank.N.log instead of the terminal")
	fs.Var(durationFlag{&o.Timeout, "timeout", &r.errs}, "timeout", "abort the job after this wall-clock `duration` (exit 124); 0 means none")
	fs.Var(durationFlag{&o.StartupTimeout, "startup-timeout", &r.errs}, "startup-timeout", "every rank must reach PMI init within this `duration` of the start (checked again each period until one rank has reached it); 0 means no limit")
	fs.Var(durationFlag{&o.Grace, "grace", &r.errs}, "grace", "delay between SIGTERM and SIGKILL when the job is aborted")
	fs.BoolVar(&o.FT, "ft", false, "fault tolerant: a rank that dies or an agent that is lost does not abort the job; the other ranks are told, and the ranks get GORMA_FT=1")
	fs.StringVar(&r.profile, "profile", "", "count what each rank sends to each peer and the time of each call kind; at exit write Open MPI's .prof files, the job's JSON, a summary and a heat map into `dir` (GORMA_PROFILE)")
	fs.StringVar(&r.trace, "trace", "", "record every rank's calls and write the job's timeline to `file` at exit, as Chrome trace-event JSON for Perfetto (GORMA_TRACE)")
	fs.BoolVar(&r.summary, "summary", false, "print a profile's summary at exit: per call kind the calls, bytes, time, slowest rank and imbalance, and the heaviest rank pairs (GORMA_SUMMARY=1)")
	fs.Var(durationFlag{&o.HangReport, "hang-report", &r.errs}, "hang-report", "print where every rank is blocked once no rank has made progress for this `duration` (also on SIGUSR1 or SIGQUIT, and at --timeout); 0 means only on those")
	fs.BoolVar(&o.Stacks, "stacks", false, "hang reports include every rank's goroutine stacks")
	fs.StringVar(&o.Transport, "transport", "auto", "transport between ranks: auto, shm or tcp")
	fs.StringVar(&o.BindTo, "bind-to", BindAuto, "bind ranks to processors: core (a block each, or the ranks in turn on a host they outnumber), socket (every processor of the socket core would place the rank on), none, or auto (the default: no rank, as mpirun)")
	fs.BoolVar(&o.ReportBindings, "report-bindings", false, "print each rank's host, pid and processors on stderr as it starts")
	fs.StringVar(&o.Join, "join", "", "submit to the agent cluster at `host:port` instead of running locally")
	fs.StringVar(&o.Keyfile, "keyfile", "", "cluster key `file` (with --join): 16, 24 or 32 bytes, raw or hex")
	fs.StringVar(&o.GossipAddr, "gossip-addr", "", "gossip `address` of this submitter with --join (default: the local address that reaches --join, port 0)")
	o.TreeFanout = defaultFanout
	fs.Var(countFlag{&o.TreeFanout, "--tree-fanout", "agents", &r.errs}, "tree-fanout", "with --join: each agent passes the job's spec and each gathering fence's cards to at most `k` others, so the submitter sends them to k agents, not to every one")
	fs.StringVar(&r.gossipBind, "bind", "", "the former name of --gossip-addr")
	hidden("bind")
	fs.BoolVar(&r.allowRoot, "allow-run-as-root", false, "mpirun's --allow-run-as-root: golaunch runs as root without it")
	hidden("allow-run-as-root")
	mpirunFlags(fs, r)
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "log membership and protocol events to stderr")
	fs.BoolVar(&o.Version, "version", false, "print the version and exit")
	fs.BoolVarP(&o.Help, "help", "h", false, "print this help and exit")
	return fs, r
}

// ParseArgs parses golaunch's job command line (without the program name of golaunch
// itself). getenv resolves -x NAME. Mistakes come back as *UsageError.
func ParseArgs(args []string, getenv func(string) (string, bool)) (*Options, error) {
	o := &Options{}
	fs, raw := jobFlags(o)
	segs, err := splitCommandLine(fs, args)
	if err != nil {
		return nil, err
	}
	if err := fs.Parse(segs[0].flags); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			o.Help = true
			return o, nil
		}
		if raw.errs.err != nil {
			return nil, raw.errs.err
		}
		return nil, usagef("%s", plainFlagError(err))
	}
	if o.Help || o.Version {
		return o, nil
	}
	if !segs[0].hasProgram {
		return nil, usagef("no program to run (usage: golaunch [flags] PROGRAM [ARGS...])")
	}
	o.Program, o.Args = segs[0].program, segs[0].args
	if o.Program == "" {
		return nil, usagef("empty program name")
	}
	if fs.Changed("np") && o.NP < 1 {
		return nil, usagef("-n %d: want at least 1 rank", o.NP)
	}
	if err := o.parseApps(fs, segs, getenv); err != nil {
		return nil, err
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
	if err := o.mpirunHabits(fs, raw); err != nil {
		return nil, err
	}
	if err := checkBindTo(o.BindTo); err != nil {
		return nil, usagef("%v", err)
	}
	if err := o.parsePlacement(fs, raw.mapBy); err != nil {
		return nil, err
	}
	if err := o.parseHosts(raw.hostList, raw.hostfile); err != nil {
		return nil, err
	}
	if o.Env, err = resolveEnv(raw.env, getenv); err != nil {
		return nil, err
	}
	if o.Env, err = observeEnv(o, o.Env, raw); err != nil {
		return nil, err
	}
	if err := o.parseJoin(fs, raw.gossipBind); err != nil {
		return nil, err
	}
	if o.Oversubscribe && o.Join == "" && o.Hosts == nil && o.PerNode == 0 {
		o.Notes = append(o.Notes, "--oversubscribe changes only Spawn here: a local run without -H or --hostfile gives this host as many slots as -n, and ranks that Spawn adds take the slots beyond them")
	}
	if !fs.Changed("tag-output") {
		o.tagDefault = true // decided once N is known
	}
	return o, nil
}

// parseApps reads the programs after the first ':' (segs[1:]): each takes its own -n and
// -x. With more than one program every program needs -n, and NP is their total.
func (o *Options) parseApps(fs *pflag.FlagSet, segs []cmdSegment, getenv func(string) (string, bool)) error {
	if len(segs) == 1 {
		return nil
	}
	if !fs.Changed("np") {
		return usagef("%s: each program of an MPMD job needs its own -n (golaunch -n 2 ./a : -n 2 ./b)", o.Program)
	}
	o.Apps = []App{{NP: o.NP, Program: o.Program, Args: o.Args}}
	total := o.NP
	for _, seg := range segs[1:] {
		app := App{Program: seg.program, Args: seg.args}
		var env []string
		var errs valueErr
		sfs := pflag.NewFlagSet("golaunch", pflag.ContinueOnError)
		sfs.SetOutput(io.Discard)
		sfs.VarP(countFlag{&app.NP, "-n", "ranks", &errs}, "np", "n", "")
		sfs.StringArrayVarP(&env, "env", "x", nil, "")
		if err := sfs.Parse(seg.flags); err != nil {
			if errs.err != nil {
				return errs.err
			}
			return usagef("%s", plainFlagError(err))
		}
		switch {
		case app.Program == "":
			return usagef("empty program name after ':'")
		case !sfs.Changed("np"):
			return usagef("%s: each program of an MPMD job needs its own -n (golaunch -n 2 ./a : -n 2 %s)", app.Program, app.Program)
		case app.NP < 1:
			return usagef("-n %d for %s: want at least 1 rank", app.NP, app.Program)
		}
		var err error
		if app.Env, err = resolveEnv(env, getenv); err != nil {
			return err
		}
		total += app.NP
		o.Apps = append(o.Apps, app)
	}
	o.NP = total
	return nil
}

// parsePlacement checks --map-by and --npernode (mpirun's --map-by ppr:N:node is
// --npernode N).
func (o *Options) parsePlacement(fs *pflag.FlagSet, mapBy string) error {
	perNode := fs.Changed("npernode") || fs.Changed("ppn")
	switch m := strings.ToLower(mapBy); m {
	case MapCore, MapSocket, MapNode:
		o.MapBy = m
	case "slot":
		o.MapBy = MapCore
	default:
		n, ok := strings.CutPrefix(m, "ppr:")
		n, ok2 := strings.CutSuffix(n, ":node")
		ppn, err := strconv.Atoi(n)
		if !ok || !ok2 || err != nil || ppn < 1 {
			return usagef("--map-by %q: want core, socket or node (or ppr:N:node, which is --npernode N); modifiers such as :PE=2 are not supported", mapBy)
		}
		if perNode {
			return usagef("--map-by %s and --npernode both set the ranks per host: give one", mapBy)
		}
		o.MapBy, o.PerNode = MapCore, ppn
	}
	if perNode && o.PerNode < 1 {
		return usagef("--npernode %d: want at least 1 rank per host", o.PerNode)
	}
	if o.PerNode > maxSlots {
		return usagef("--npernode %d: want at most %d", o.PerNode, maxSlots)
	}
	return nil
}

// parseJoin checks --join, --keyfile and --gossip-addr (or its former name --bind).
func (o *Options) parseJoin(fs *pflag.FlagSet, bind string) error {
	if fs.Changed("bind") {
		if fs.Changed("gossip-addr") {
			return usagef("--bind is the former name of --gossip-addr: give one")
		}
		o.GossipAddr = bind
		o.Notes = append(o.Notes, "--bind is the former name of --gossip-addr (the submitter's gossip address); --bind-to binds ranks to processors")
	}
	if o.TreeFanout < 2 || o.TreeFanout > 1024 {
		return usagef("--tree-fanout %d: want 2 to 1024 agents", o.TreeFanout)
	}
	if o.Join == "" {
		if o.Keyfile != "" || o.GossipAddr != "" {
			return usagef("--keyfile and --gossip-addr only make sense with --join")
		}
		return nil
	}
	if o.Keyfile == "" {
		return usagef("--join needs --keyfile (the cluster key the agents were started with)")
	}
	if err := checkHostPort(o.Join); err != nil {
		return usagef("--join %q: %v", o.Join, err)
	}
	if o.GossipAddr != "" {
		if err := checkHostPort(o.GossipAddr); err != nil {
			return usagef("--gossip-addr %q: %v", o.GossipAddr, err)
		}
	}
	return nil
}

// plainFlagError rewords pflag's errors that name Go internals: `invalid argument "x"
// for "--tag-output" flag: strconv.ParseBool: ...` becomes "--tag-output=x: want true or
// false".
func plainFlagError(err error) string {
	msg := err.Error()
	m := pflagValueError.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	why := m[3]
	if strings.Contains(why, "strconv.ParseBool") {
		why = "want true or false"
	}
	return fmt.Sprintf("%s=%s: %s", m[2], m[1], why)
}

var pflagValueError = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-., )?(--[^"]+)" flag: (.*)$`)

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
		if o.Hosts, o.MaxSlots, err = readHostfile(hostfile); err != nil {
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
	fs, _ := jobFlags(o)
	return `golaunch runs N copies of a program as one parallel job (an MPI-style launcher).

Usage:
  golaunch [flags] PROGRAM [ARGS...]
  golaunch [flags] -n N PROGRAM [ARGS...] : -n N [-x VAR]... PROGRAM [ARGS...] ...
  golaunch agent --bind ADDR [--join ADDR] --slots N --keyfile FILE [--name NAME]

Flags stop at the program name (or at --). A standalone ':' ends a program's arguments
and starts another program of the same job (MPMD): its ranks follow, and World.AppNum
tells each rank its program's number. After --, every argument is the program's, ':'
included. A long flag also takes one dash, as mpirun spells it (-hostfile, -ppn).

Flags:
` + fs.FlagUsages() + `
Examples:
  golaunch -n 4 ./hello                     4 ranks on this host
  golaunch -np 8 --timeout 10m ./solver in.dat
  golaunch -n 2 -x OMP_NUM_THREADS=1 -x PATH ./bench --json
  golaunch -n 4 --output-dir logs ./prog    logs/rank.0.log ... logs/rank.3.log
  golaunch -n 8 --bind-to core ./prog       each rank bound to its cores
  golaunch -n 1 ./server : -n 4 ./worker    one job of 5 ranks: rank 0 runs server
  golaunch -hostfile hosts -ppn 2 --join node1:7946 --keyfile ~/.gorma.key ./prog
  golaunch -n 16 --join node1:7946 --keyfile ~/.gorma.key ./prog
  golaunch -H node1:4,node2:4 --join node1:7946 --keyfile ~/.gorma.key ./prog

A cluster: on every host run
  golaunch agent --bind 10.0.0.2:7946 --join 10.0.0.1:7946 --slots 8 --keyfile /etc/gorma.key

Exit status: 0 when every rank called Finalize and exited 0; otherwise the first failing
rank's exit code, 123 when it panicked (a Go panic, which exits 2 itself), 128+N when it
was killed by signal N, 124 when --timeout expired, 125 when the job failed without an
exit code of its own (an agent lost, a rank that exited without Finalize or never reached
PMI init), 2 for a usage error. One summary line on stderr names the cause.

With --ft a rank that dies, exits non-zero or exits without Finalize, and every rank of a
lost agent, is reported on stderr and the job goes on: the exit status is 0 when every
surviving rank called Finalize and exited 0. Abort, --timeout and signals abort the job
as without --ft. Under Slurm or Hydra set GORMA_FT=1 yourself and keep the process manager
from killing the job: srun --no-kill --kill-on-bad-exit=0, mpiexec.hydra -disable-auto-cleanup.
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

// observeEnv appends the variables of --profile, --trace and --summary to env, after -x
// so that the flags win. Paths are made absolute here: ranks may start in another
// directory, and rank 0 writes the job's files on its host.
func observeEnv(o *Options, env []string, raw *rawFlags) ([]string, error) {
	for _, f := range []struct{ flag, name, path string }{
		{"--profile", "GORMA_PROFILE", raw.profile}, {"--trace", "GORMA_TRACE", raw.trace},
	} {
		if f.path == "" {
			continue
		}
		abs, err := filepath.Abs(f.path)
		if err != nil {
			return nil, usagef("%s %s: %v", f.flag, f.path, err)
		}
		if fi, err := os.Stat(abs); err == nil && fi.IsDir() != (f.flag == "--profile") {
			want := "a folder"
			if f.flag == "--trace" {
				want = "a file, not a folder"
			}
			return nil, usagef("%s %s: want %s", f.flag, f.path, want)
		}
		env = append(env, f.name+"="+abs)
		if f.flag == "--trace" {
			o.Trace = abs
		}
	}
	if raw.summary {
		env = append(env, "GORMA_SUMMARY=1")
	}
	return env, nil
}
