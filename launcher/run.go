package launcher

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Stdio is where golaunch reads and writes: os.Stdin, os.Stdout and os.Stderr in the
// command, buffers in tests.
type Stdio struct {
	In       io.Reader // forwarded to rank 0; nil for none
	Out, Err io.Writer
}

// Main runs golaunch with args (without the command name) on the process's stdio and
// signals, and returns the exit code.
func Main(args []string) int {
	sigs := make(chan os.Signal, 4)
	// SIGPIPE too: a closed stdout (| head) then fails writes instead of killing golaunch
	// while its ranks run on; the failed write ends the job (outputSink.gone).
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGUSR1, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	filtered := make(chan os.Signal, 4)
	go func() {
		for s := range sigs {
			if s != syscall.SIGPIPE {
				filtered <- s
			}
		}
	}()
	io := Stdio{In: stdinToForward(), Out: os.Stdout, Err: os.Stderr}
	if len(args) > 0 && args[0] == "agent" {
		agentSigs := make(chan os.Signal, 4)
		go func() {
			for s := range filtered {
				if !reportSignal(s) { // a hang report is asked of golaunch, not of its agents
					agentSigs <- s
				}
			}
		}()
		return AgentMain(args[1:], io, agentSigs)
	}
	return Launch(args, io, filtered)
}

// stdinToForward returns os.Stdin, or nil when reading it would stop golaunch: a
// terminal of which golaunch is not in the foreground (golaunch ... &).
func stdinToForward() io.Reader {
	fd := int(os.Stdin.Fd())
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err == nil && pgrp != unix.Getpgrp() {
		return nil
	}
	return os.Stdin
}

// Launch runs one job as `golaunch [flags] PROGRAM [ARGS...]` would and returns the exit
// code. Signals to golaunch arrive on sigs.
func Launch(args []string, stdio Stdio, sigs <-chan os.Signal) int {
	o, err := ParseArgs(args, os.LookupEnv)
	switch {
	case err != nil:
		return usageExit(stdio.Err, err)
	case o.Help:
		fmt.Fprint(stdio.Out, usageText())
		return ExitOK
	case o.Version:
		fmt.Fprintln(stdio.Out, versionText())
		return ExitOK
	}
	for _, n := range o.Notes {
		fmt.Fprintf(stdio.Err, "golaunch: note: %s\n", n)
	}
	logw := io.Discard
	if o.Verbose {
		logw = stdio.Err
	}
	lg := log.New(logw, "golaunch: ", log.Lmicroseconds)
	id, secret, err := newJobID()
	if err != nil {
		fmt.Fprintf(stdio.Err, "golaunch: %v\n", err)
		return ExitFailure
	}
	var node *Agent
	var hosts []HostSlots
	var addrs map[string]string
	if o.Join == "" {
		node, hosts, err = startLocal(o, lg, logw)
	} else {
		node, hosts, err = startJoined(o, id, lg, logw)
	}
	if err != nil {
		return usageExit(stdio.Err, err)
	}
	defer node.close()
	addrs = controlAddrs(node)
	if o.NP == 0 {
		o.NP = o.Placement().DefaultRanks(hosts)
	}
	roster, err := Place(hosts, o.NP, o.Placement())
	if err != nil {
		return usageExit(stdio.Err, &UsageError{Msg: err.Error() + heldDeadNote(node.heldDead)})
	}
	if o.Transport == "shm" && len(roster.Hosts) > 1 {
		return usageExit(stdio.Err, usagef("--transport shm needs every rank on one host; the job spans %d", len(roster.Hosts)))
	}
	if o.tagDefault {
		o.TagOutput = roster.Size > 1
	}
	if o.OutputDir != "" {
		if err := prepareOutputDir(o.OutputDir); err != nil {
			return usageExit(stdio.Err, &UsageError{Msg: err.Error()})
		}
	}
	prog, err := programFor(o, o.Program)
	if err != nil {
		return usageExit(stdio.Err, err)
	}
	var apps []appSpec
	for _, a := range o.Apps {
		p, err := programFor(o, a.Program)
		if err != nil {
			return usageExit(stdio.Err, err)
		}
		apps = append(apps, appSpec{Program: p, Args: a.Args, Env: a.Env, Ranks: a.NP})
	}
	cwd, _ := os.Getwd()
	s := &submitter{
		spec: jobSpec{ID: id, Submitter: node.name, Program: prog, Args: o.Args, Env: o.Env, Apps: apps, Dir: cwd,
			Secret: secret, Roster: roster, Transport: o.Transport, BindTo: o.BindTo, Grace: o.Grace, FT: o.FT, Fanout: cmp.Or(o.TreeFanout, defaultFanout)},
		reportBindings: o.ReportBindings,
		roster:         roster, key: node.ckey, stderr: newStallWriter(stdio.Err, outputStall), stdin: stdio.In, grace: o.Grace,
		out:     newOutputSink(stdio.Out, stdio.Err, o.TagOutput, roster.Size > 1, o.OutputDir),
		timeout: o.Timeout, startup: o.StartupTimeout, signals: sigs,
		hang: hangWatch{every: o.HangReport}, stacks: o.Stacks, trace: o.Trace,
	}
	for _, h := range roster.Hosts {
		s.addrs = append(s.addrs, addrs[h])
	}
	s.grow = newGrowth(node, o, hosts)
	// Departures of the roster's hosts since the member list was read come first.
	s.leaves, s.unwatch = node.cl.watchLeaves(roster.Hosts...)
	defer func() { s.unwatch() }()
	lg.Printf("job %s: %d ranks on %s", id, roster.Size, strings.Join(roster.Hosts, ", "))
	return s.run()
}

func usageExit(w io.Writer, err error) int {
	var ue *UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "golaunch: %v\nRun 'golaunch --help' for usage.\n", err)
		return ExitUsage
	}
	fmt.Fprintf(w, "golaunch: %v\n", err)
	return ExitFailure
}

// programFor resolves the program: locally it must exist and be executable here; with
// --join a path is made absolute (the agents resolve a bare name in their PATH).
func programFor(o *Options, program string) (string, error) {
	if o.Join == "" {
		p, err := resolveProgram(program)
		if err != nil {
			return "", &UsageError{Msg: err.Error()}
		}
		return filepath.Abs(p)
	}
	if strings.Contains(program, "/") {
		return filepath.Abs(program)
	}
	return program, nil
}

// localNames are the -H names that mean this host in a local run, in lower case (host
// names are case-insensitive: -H LOCALHOST is this host too).
func localNames(agentName string) map[string]bool {
	names := map[string]bool{"localhost": true, "127.0.0.1": true, strings.ToLower(agentName): true}
	if h, err := os.Hostname(); err == nil {
		h = strings.ToLower(h)
		names[h] = true
		if short, _, ok := strings.Cut(h, "."); ok {
			names[short] = true
		}
	}
	return names
}

// startLocal makes golaunch agent 0 and the seed of a one-member cluster on loopback
// (with a random key), exactly as an agent of a multi-host cluster, and returns the one
// host with its slots.
func startLocal(o *Options, lg *log.Logger, logw io.Writer) (*Agent, []HostSlots, error) {
	name, err := os.Hostname()
	if err != nil || checkHostName(name) != nil {
		name = "localhost"
	}
	slots := o.NP
	if o.Hosts != nil {
		local := localNames(name)
		slots = 0
		maxes, bounded := 0, true
		for _, h := range o.Hosts {
			if !local[strings.ToLower(h.Name)] {
				return nil, nil, usagef("host %q is not this host: a local run uses this host only (start `golaunch agent` on each host and submit with --join)", h.Name)
			}
			slots += h.Slots
			maxes += o.MaxSlots[h.Name]
			bounded = bounded && o.MaxSlots[h.Name] > 0
		}
		o.MaxSlots = nil
		if bounded {
			o.MaxSlots = map[string]int{name: maxes}
		}
	} else if slots == 0 {
		slots = runtime.NumCPU()
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, nil, err
	}
	a, err := startAgent(agentConfig{Name: name, Bind: "127.0.0.1:0", Slots: max(slots, 1), Key: key,
		Log: lg, GossipLog: logw})
	if err != nil {
		return nil, nil, err
	}
	return a, []HostSlots{{Name: name, Slots: slots}}, nil
}

// startJoined joins the cluster at o.Join as a member with no slots, and returns the
// agents it learned of in host order: the -H/--hostfile order with its slots, or every
// agent by name with the slots it advertises.
func startJoined(o *Options, id string, lg *log.Logger, logw io.Writer) (*Agent, []HostSlots, error) {
	key, err := LoadKey(o.Keyfile)
	if err != nil {
		return nil, nil, &UsageError{Msg: err.Error()}
	}
	bind := o.GossipAddr
	if bind == "" {
		bind = net.JoinHostPort(localIPToward(o.Join), "0")
	}
	a, err := startAgent(agentConfig{Name: "golaunch-" + id, Bind: bind, Key: key, Log: lg, GossipLog: logw})
	if err != nil {
		return nil, nil, err
	}
	if err := a.cl.join([]string{o.Join}); err != nil {
		a.close()
		return nil, nil, err
	}
	agents, names := liveAgents(a, lg)
	// An agent that memberlist declared dead although it is alive (a loaded host) is
	// missing from the list until it is back, within seconds. A job that the listed agents
	// cannot hold waits for it a little before it is refused, and longer while the seed
	// held some agent as suspect or dead.
	for start := time.Now(); !enoughAgents(o, agents) && time.Since(start) < settleFor(a.cl.heldDeadAgents()); {
		time.Sleep(50 * time.Millisecond)
		agents, names = liveAgents(a, lg)
	}
	if !enoughAgents(o, agents) {
		a.heldDead = a.cl.heldDeadAgents()
	}
	var hosts []HostSlots
	if o.Hosts == nil {
		for _, n := range names {
			hosts = append(hosts, HostSlots{Name: n, Slots: agents[n].Meta.Slots})
		}
	}
	for _, h := range o.Hosts {
		if _, ok := agents[h.Name]; !ok {
			a.close()
			return nil, nil, usagef("host %q is not an agent of the cluster at %s (agents: %s)%s", h.Name, o.Join, strings.Join(names, ", "), heldDeadNote(a.heldDead))
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		a.close()
		return nil, nil, fmt.Errorf("the cluster at %s has no agent with slots", o.Join)
	}
	a.peers = agents
	return a, hosts, nil
}

// agentSettle bounds how long a submitter waits, after its join, for the agents a job
// needs (named by -H, or enough slots for -n) to be in its member list. heldDeadSettle
// replaces it while the seed held an agent as suspect or dead: an alive agent refutes
// the verdict once a member's gossip or rejoin (every rejoinInterval) reaches it, which
// takes seconds on a loaded host.
const (
	agentSettle    = 3 * time.Second
	heldDeadSettle = 10 * time.Second
)

// settleFor is the submitter's wait for the agents a job needs, given the agents the
// seed held as suspect or dead that are not live now.
func settleFor(heldDead []string) time.Duration {
	if len(heldDead) > 0 {
		return heldDeadSettle
	}
	return agentSettle
}

// heldDeadNote is appended to a refusal for want of agents: it names the agents the
// cluster held as suspect or dead, "" when there are none.
func heldDeadNote(heldDead []string) string {
	if len(heldDead) == 0 {
		return ""
	}
	return fmt.Sprintf("; the cluster holds agent %s as dead (its host is down, overloaded or cut off): "+
		"retry once it answers, or start its golaunch agent again", strings.Join(heldDead, ", "))
}

// liveAgents returns the live agents a submitter's member a knows of, by name, and their
// names, sorted.
func liveAgents(a *Agent, lg *log.Logger) (map[string]member, []string) {
	agents := map[string]member{}
	var names []string
	for _, m := range a.cl.members() {
		switch {
		case m.Name == a.name:
		case m.MetaErr != nil:
			lg.Printf("ignoring member %s: %v", m.Name, m.MetaErr)
		case m.Meta.Version != controlVersion:
			lg.Printf("ignoring member %s: control protocol v%d (this golaunch: v%d)", m.Name, m.Meta.Version, controlVersion)
		case m.Meta.Leaving:
			lg.Printf("ignoring member %s: it is leaving the cluster", m.Name)
		case m.Meta.Slots > 0:
			agents[m.Name] = m
			names = append(names, m.Name)
		}
	}
	return agents, names
}

// enoughAgents tells whether agents can hold the job of o: every -H host is one of them,
// or, without -H, their slots cover -n.
func enoughAgents(o *Options, agents map[string]member) bool {
	if o.Hosts != nil {
		for _, h := range o.Hosts {
			if _, ok := agents[h.Name]; !ok {
				return false
			}
		}
		return true
	}
	var hosts []HostSlots
	for n, m := range agents {
		hosts = append(hosts, HostSlots{Name: n, Slots: m.Meta.Slots})
	}
	p := o.Placement()
	return o.NP <= p.DefaultRanks(hosts) || len(hosts) > 0 && p.Oversubscribe && p.PerNode == 0
}

// controlAddrs maps host names to control addresses: the agent itself in a local run,
// the members learned at join otherwise.
func controlAddrs(a *Agent) map[string]string {
	m := map[string]string{}
	if a.ln != nil {
		m[a.name] = a.controlAddr()
	}
	for n, p := range a.peers {
		m[n] = p.Meta.Control
	}
	return m
}

// localIPToward returns the local IP that routes to addr (no packet is sent).
func localIPToward(addr string) string {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return "0.0.0.0"
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}

// joinRetryEvery is the pause between an agent's attempts at its first join with
// --join-retry.
const joinRetryEvery = time.Second

// AgentMain runs `golaunch agent` with args until a signal ends it.
func AgentMain(args []string, stdio Stdio, sigs <-chan os.Signal) int {
	o, fs, err := ParseAgentArgs(args)
	if err != nil {
		return usageExit(stdio.Err, err)
	}
	if o.Help {
		fmt.Fprint(stdio.Out, agentUsageText(fs))
		return ExitOK
	}
	key, err := LoadKey(o.Keyfile)
	if err != nil {
		return usageExit(stdio.Err, &UsageError{Msg: "agent: " + err.Error()})
	}
	lg := log.New(stdio.Err, "golaunch agent "+o.Name+": ", log.LstdFlags)
	a, err := startAgent(agentConfig{Name: o.Name, Bind: o.Bind, Advertise: o.Advertise, ControlPort: o.ControlPort,
		Slots: o.Slots, Key: key, Log: lg, GossipLog: stdio.Err, Debug: o.Verbose})
	if err != nil {
		fmt.Fprintf(stdio.Err, "golaunch agent: %v\n", err)
		return ExitFailure
	}
	if len(o.Join) > 0 {
		err := a.cl.join(o.Join)
		if err != nil && o.JoinRetry > 0 {
			lg.Printf("%v: retrying every second for %v (--join-retry)", err, o.JoinRetry)
			for deadline := time.Now().Add(o.JoinRetry); err != nil && time.Now().Before(deadline); {
				select {
				case sig := <-sigs:
					lg.Printf("%v while joining: exiting", sig)
					a.close()
					return ExitOK
				case <-time.After(joinRetryEvery):
				}
				err = a.cl.join(o.Join)
			}
			if err != nil {
				err = fmt.Errorf("%w; gave up after --join-retry %v", err, o.JoinRetry)
			}
		}
		if err != nil {
			a.close()
			fmt.Fprintf(stdio.Err, "golaunch agent: %v\n", err)
			return ExitFailure
		}
		if other := a.cl.nameTaken(); other != "" {
			return nameTakenExit(a, stdio.Err, other)
		}
	}
	a.cl.keepJoined(o.Join, lg)
	fmt.Fprintf(stdio.Out, "golaunch agent %s: gossip %s, control %s, %d slots, %d members\n",
		a.name, a.cl.addr(), a.controlAddr(), o.Slots, len(a.cl.members()))
	if f, ok := stdio.Out.(*os.File); ok {
		f.Sync()
	}
	select {
	case sig := <-sigs:
		lg.Printf("%v: leaving the cluster", sig)
		a.close()
		return ExitOK
	case other := <-a.cl.clashes():
		// Found after the join: the cluster probes the other agent by this name, not this
		// one (rejoin.go). Its jobs are aborted, as a lost agent's would be.
		lg.Printf("the cluster knows the agent at %s by this name, not this one: giving up", other)
		return nameTakenExit(a, stdio.Err, other)
	}
}

// nameTakenExit ends an agent whose name belongs to the agent at other: without a
// goodbye, as a leave in this name would tell the cluster the other agent left.
func nameTakenExit(a *Agent, stderr io.Writer, other string) int {
	a.cl.vanish()
	a.close()
	fmt.Fprintf(stderr, "golaunch agent: the name %s is taken by the agent at %s; pick another --name\n", a.name, other)
	return ExitFailure
}

func versionText() string {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("golaunch %s (gorma; %s %s/%s; control protocol v%d)", v, runtime.Version(),
		runtime.GOOS, runtime.GOARCH, controlVersion)
}
