package launcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseArgsMPMD(t *testing.T) {
	tests := []struct {
		name string
		args []string
		np   int
		apps []App // nil: one program
		prog string
		pa   []string
		env  []string
	}{
		{name: "two programs", args: []string{"-n", "2", "./a", ":", "-n", "2", "./b"}, np: 4,
			apps: []App{{NP: 2, Program: "./a", Args: []string{}}, {NP: 2, Program: "./b", Args: []string{}}}, prog: "./a", pa: []string{}},
		{name: "arguments and -np", args: []string{"-np", "1", "./a", "x", "-n", "9", ":", "-np", "3", "./b", "y:z", "--", "w"}, np: 4,
			apps: []App{{NP: 1, Program: "./a", Args: []string{"x", "-n", "9"}}, {NP: 3, Program: "./b", Args: []string{"y:z", "--", "w"}}},
			prog: "./a", pa: []string{"x", "-n", "9"}},
		{name: "three programs with their own -x", args: []string{"-x", "G=1", "-n", "1", "a", ":", "-x", "B=2", "-n2", "b", ":", "--np=1", "--env", "C=3", "c"}, np: 4,
			apps: []App{{NP: 1, Program: "a", Args: []string{}}, {NP: 2, Program: "b", Args: []string{}, Env: []string{"B=2"}},
				{NP: 1, Program: "c", Args: []string{}, Env: []string{"C=3"}}},
			prog: "a", pa: []string{}, env: []string{"G=1"}},
		{name: "-x NAME after ':' forwards", args: []string{"-n", "1", "a", ":", "-n", "1", "-x", "HOME", "b"}, np: 2,
			apps: []App{{NP: 1, Program: "a", Args: []string{}}, {NP: 1, Program: "b", Args: []string{}, Env: []string{"HOME=/home/u"}}},
			prog: "a", pa: []string{}},
		{name: "-- makes ':' an argument", args: []string{"-n", "1", "--", "./a", "x", ":", "y"}, np: 1,
			prog: "./a", pa: []string{"x", ":", "y"}},
		{name: "-- in the last program", args: []string{"-n", "1", "./a", ":", "-n", "1", "--", "./b", ":"}, np: 2,
			apps: []App{{NP: 1, Program: "./a", Args: []string{}}, {NP: 1, Program: "./b", Args: []string{":"}}}, prog: "./a", pa: []string{}},
		{name: "colons inside arguments", args: []string{"-n", "1", "./a", "host:1", "::", "a:"}, np: 1,
			prog: "./a", pa: []string{"host:1", "::", "a:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParseArgs(tt.args, testEnv)
			if err != nil {
				t.Fatalf("ParseArgs(%q): %v", tt.args, err)
			}
			if o.NP != tt.np || o.Program != tt.prog || !reflect.DeepEqual(o.Args, tt.pa) || !reflect.DeepEqual(o.Apps, tt.apps) ||
				!reflect.DeepEqual(o.Env, tt.env) {
				t.Errorf("ParseArgs(%q) = np %d prog %q args %q apps %+v env %q;\nwant np %d prog %q args %q apps %+v env %q",
					tt.args, o.NP, o.Program, o.Args, o.Apps, o.Env, tt.np, tt.prog, tt.pa, tt.apps, tt.env)
			}
		})
	}
}

func TestParseArgsMPIRunHabits(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want func(*Options) bool
	}{
		{"-hostfile", []string{"-hostfile", "testdata/hosts", "p"}, func(o *Options) bool { return len(o.Hosts) == 2 }},
		{"-machinefile", []string{"-machinefile", "testdata/hosts", "p"}, func(o *Options) bool { return len(o.Hosts) == 2 }},
		{"--machinefile=", []string{"--machinefile=testdata/hosts", "p"}, func(o *Options) bool { return len(o.Hosts) == 2 }},
		{"-f", []string{"-f", "testdata/hosts", "p"}, func(o *Options) bool { return len(o.Hosts) == 2 }},
		{"max_slots", []string{"--hostfile", "testdata/hosts", "p"}, func(o *Options) bool {
			return reflect.DeepEqual(o.MaxSlots, map[string]int{"localhost": 4})
		}},
		{"-ppn", []string{"-ppn", "2", "p"}, func(o *Options) bool { return o.PerNode == 2 }},
		{"--ppn", []string{"--ppn=3", "p"}, func(o *Options) bool { return o.PerNode == 3 }},
		{"-npernode", []string{"-npernode", "2", "p"}, func(o *Options) bool { return o.PerNode == 2 }},
		{"--npernode", []string{"--npernode", "5", "-n", "5", "p"}, func(o *Options) bool { return o.PerNode == 5 && o.NP == 5 }},
		{"--map-by node", []string{"--map-by", "node", "p"}, func(o *Options) bool { return o.MapBy == MapNode }},
		{"-map-by socket", []string{"-map-by", "socket", "p"}, func(o *Options) bool { return o.MapBy == MapSocket }},
		{"--map-by slot", []string{"--map-by=slot", "p"}, func(o *Options) bool { return o.MapBy == MapCore }},
		{"--map-by ppr", []string{"--map-by", "ppr:2:node", "p"}, func(o *Options) bool { return o.PerNode == 2 && o.MapBy == MapCore }},
		{"default map-by", []string{"p"}, func(o *Options) bool { return o.MapBy == MapCore && o.PerNode == 0 && !o.Oversubscribe }},
		{"--oversubscribe notes", []string{"--oversubscribe", "-n", "8", "p"}, func(o *Options) bool {
			return o.Oversubscribe && len(o.Notes) == 1 && strings.Contains(o.Notes[0], "changes only Spawn")
		}},
		{"-oversubscribe with -H", []string{"-oversubscribe", "-H", "localhost:1", "p"}, func(o *Options) bool {
			return o.Oversubscribe && len(o.Notes) == 0
		}},
		{"--report-bindings", []string{"--report-bindings", "p"}, func(o *Options) bool { return o.ReportBindings }},
		{"-report-bindings", []string{"-report-bindings", "p"}, func(o *Options) bool { return o.ReportBindings }},
		{"-bind-to", []string{"-bind-to", "core", "p"}, func(o *Options) bool { return o.BindTo == BindCore }},
		{"-host", []string{"-host", "a:2", "p"}, func(o *Options) bool { return reflect.DeepEqual(o.Hosts, []HostSlots{{"a", 2}}) }},
		{"-hosts", []string{"-hosts", "a,b", "p"}, func(o *Options) bool { return len(o.Hosts) == 2 }},
		{"--allow-run-as-root", []string{"--allow-run-as-root", "p"}, func(o *Options) bool { return o.Program == "p" }},
		{"-tag-output", []string{"-tag-output", "p"}, func(o *Options) bool { return o.TagOutput }},
		{"-timeout", []string{"-timeout", "5", "p"}, func(o *Options) bool { return o.Timeout.Seconds() == 5 }},
		{"-verbose", []string{"-verbose", "p"}, func(o *Options) bool { return o.Verbose }},
		{"run of short flags", []string{"-vn3", "p"}, func(o *Options) bool { return o.Verbose && o.NP == 3 }},
		{"run ending in -n", []string{"-vn", "3", "p"}, func(o *Options) bool { return o.Verbose && o.NP == 3 }},
		{"-xA=1", []string{"-xA=1", "p"}, func(o *Options) bool { return reflect.DeepEqual(o.Env, []string{"A=1"}) }},
		{"--gossip-addr", []string{"--join", "h:1", "--keyfile", "k", "--gossip-addr", "10.0.0.1:0", "p"}, func(o *Options) bool {
			return o.GossipAddr == "10.0.0.1:0" && len(o.Notes) == 0
		}},
		{"--bind is --gossip-addr", []string{"--join", "h:1", "--keyfile", "k", "--bind", "10.0.0.1:0", "p"}, func(o *Options) bool {
			return o.GossipAddr == "10.0.0.1:0" && len(o.Notes) == 1 && strings.Contains(o.Notes[0], "former name of --gossip-addr")
		}},
		// mpirun's flags that golaunch takes with a note: the option they map to, and one note.
		{"--display-map", []string{"--display-map", "p"}, func(o *Options) bool {
			return o.ReportBindings && onlyNote(o, "--display-map is --report-bindings here")
		}},
		{"-display-map", []string{"-display-map", "p"}, func(o *Options) bool {
			return o.ReportBindings && onlyNote(o, "--display-map is --report-bindings here")
		}},
		{"--display-map twice", []string{"--display-map", "-display-map", "p"}, func(o *Options) bool {
			return o.ReportBindings && onlyNote(o, "--display-map")
		}},
		{"--display-map=false", []string{"--display-map=false", "p"}, func(o *Options) bool { return !o.ReportBindings && len(o.Notes) == 0 }},
		{"--output-filename", []string{"--output-filename", "logs", "p"}, func(o *Options) bool {
			return o.OutputDir == "logs" && onlyNote(o, "--output-filename logs is --output-dir logs here: each rank's stdout and stderr go to logs/rank.N.log")
		}},
		{"-output-filename", []string{"-output-filename", "logs", "p"}, func(o *Options) bool {
			return o.OutputDir == "logs" && onlyNote(o, "--output-filename logs is --output-dir logs")
		}},
		{"--output-filename=", []string{"--output-filename=out/run1", "p"}, func(o *Options) bool { return o.OutputDir == "out/run1" && onlyNote(o, "") }},
		{"-output-filename with modifiers", []string{"-output-filename", "logs:nojobid,nocopy", "p"}, func(o *Options) bool {
			return o.OutputDir == "logs" && onlyNote(o, "--output-filename logs is")
		}},
		{"-output-filename with a colon", []string{"-output-filename", "a:b", "p"}, func(o *Options) bool { return o.OutputDir == "a:b" }},
		{"--bind-to socket", []string{"--bind-to", "socket", "p"}, func(o *Options) bool { return o.BindTo == BindSocket && len(o.Notes) == 0 }},
		{"-bind-to socket", []string{"-bind-to", "socket", "p"}, func(o *Options) bool { return o.BindTo == BindSocket && len(o.Notes) == 0 }},
		{"--bind-to=package", []string{"--bind-to=package", "p"}, func(o *Options) bool { return o.BindTo == BindSocket && len(o.Notes) == 0 }},
		{"all three", []string{"-display-map", "-output-filename", "d", "-bind-to", "socket", "p"}, func(o *Options) bool {
			return o.ReportBindings && o.OutputDir == "d" && o.BindTo == BindSocket && len(o.Notes) == 2
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParseArgs(tt.args, testEnv)
			if err != nil {
				t.Fatalf("ParseArgs(%q): %v", tt.args, err)
			}
			if !tt.want(o) {
				t.Errorf("ParseArgs(%q) = %+v", tt.args, o)
			}
		})
	}
}

// TestLaunchMPIRunHabits runs a job with mpirun's -display-map, -output-filename DIR and
// --bind-to socket: golaunch prints each note once, a binding line per rank (bound to
// its socket), and the ranks' output goes to DIR/rank.N.log.
func TestLaunchMPIRunHabits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	r := runGL(t, "", "-np", "2", "-display-map", "-output-filename", dir, "--bind-to", "socket", pmiprogBinPath(t), "env", "GOLAUNCH_RANK")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	for _, note := range []string{
		"golaunch: note: --display-map is --report-bindings here",
		"golaunch: note: --output-filename " + dir + " is --output-dir " + dir + " here",
	} {
		if n := strings.Count(r.stderr, note); n != 1 {
			t.Errorf("%d notes %q, want 1:\n%s", n, note, r.stderr)
		}
	}
	for rank := range 2 {
		l := lineWith(r.stderr, fmt.Sprintf("golaunch: rank %d (host %s, pid ", rank, hostName()))
		if !strings.Contains(l, "): bound to CPUs ") {
			t.Errorf("rank %d: no binding line:\n%s", rank, r.stderr)
		}
		// pmiprog also prints the job's events it is told of (a loaded host's agents
		// suspect each other): the file holds the rank's line among them.
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank.%d.log", rank)))
		if want := fmt.Sprintf("env %d GOLAUNCH_RANK=%d\n", rank, rank); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("rank %d file: %q, %v; want a line %q", rank, b, err, want)
		}
	}
}

// onlyNote reports whether o has one note and it holds want.
func onlyNote(o *Options, want string) bool {
	return len(o.Notes) == 1 && strings.Contains(o.Notes[0], want)
}

// TestParseArgsSentences checks that every mistake gets a sentence of golaunch's: no
// pflag wording ("unknown shorthand flag", "invalid argument", "flag needs an argument")
// and no Go internals (strconv).
func TestParseArgsSentences(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		// A lone ':' where it cannot mean MPMD.
		{[]string{":", "./a"}, "':' cannot come first"},
		{[]string{"-n", "1", "./a", ":"}, "':' at the end of the command line"},
		{[]string{"-n", "1", "./a", ":", ":", "./b"}, "no program before ':'"},
		{[]string{"-n", "1", ":", "./b"}, "no program before ':'"},
		{[]string{"-n", "1", "./a", ":", "-n", "1"}, "no program after ':'"},
		{[]string{"-n", "1", "./a", ":", "./b"}, "./b: each program of an MPMD job needs its own -n"},
		{[]string{"./a", ":", "-n", "1", "./b"}, "./a: each program of an MPMD job needs its own -n"},
		{[]string{"-n", "1", "./a", ":", "-n", "0", "./b"}, "-n 0 for ./b: want at least 1 rank"},
		{[]string{"-n", "1", "./a", ":", "-n", "x", "./b"}, "-n x: want a whole number of ranks"},
		{[]string{"-n", "1", "./a", ":", "--timeout", "5", "-n", "1", "./b"}, "--timeout applies to the whole job: give it before the first program"},
		{[]string{"-n", "1", "./a", ":", "-H", "h", "-n", "1", "./b"}, "-H applies to the whole job"},
		{[]string{"-n", "1", "./a", ":", "-n", "1", "-x", "NOPE", "./b"}, "NOPE is not set"},
		{[]string{"-n", "1", "./a", ":", "-n", "1", "-genv", "A", "1", "./b"}, "-genv: golaunch spells it -x NAME=VALUE"},
		// Counts.
		{[]string{"-n", "abc", "p"}, "-n abc: want a whole number of ranks, such as -n 4"},
		{[]string{"-np", "abc", "p"}, "-n abc: want a whole number of ranks"},
		{[]string{"-n"}, "-n needs a value (a number of ranks: -n 4)"},
		{[]string{"-ppn", "two", "p"}, "-ppn two: want a whole number of ranks per host"},
		{[]string{"--npernode", "0", "p"}, "--npernode 0: want at least 1 rank per host"},
		{[]string{"--timeout"}, "--timeout needs a value (a duration: --timeout 90s)"},
		{[]string{"--tag-output=maybe", "p"}, "want true or false"},
		// Placement.
		{[]string{"--map-by", "numa", "p"}, `--map-by "numa": want core, socket or node`},
		{[]string{"--map-by", "core:PE=2", "p"}, "modifiers such as :PE=2 are not supported"},
		{[]string{"--map-by", "ppr:2:node", "-ppn", "2", "p"}, "give one"},
		{[]string{"--gossip-addr", "x:1", "--bind", "y:1", "--join", "h:1", "--keyfile", "k", "p"}, "--bind is the former name of --gossip-addr: give one"},
		{[]string{"--gossip-addr", "nope", "--join", "h:1", "--keyfile", "k", "p"}, `--gossip-addr "nope"`},
		{[]string{"--gossip-addr", "h:0", "p"}, "only make sense with --join"},
		// mpirun, mpiexec and srun flags golaunch spells otherwise or does not have.
		{[]string{"-wdir", "/tmp", "p"}, "-wdir: not supported: ranks run in golaunch's working directory"},
		{[]string{"--output-filename", "d", "--output-dir", "e", "p"}, "--output-filename is mpirun's spelling of --output-dir: give one"},
		{[]string{"-output-filename", "", "p"}, `--output-filename "": want a folder, such as --output-filename logs`},
		{[]string{"--output-filename"}, "--output-filename needs a value"},
		{[]string{"--bind-to", "numa", "p"}, `--bind-to "numa": want auto, core, socket or none`},
		{[]string{"-genv", "A", "1", "p"}, "-genv: golaunch spells it -x NAME=VALUE"},
		{[]string{"-env", "A", "1", "p"}, "-env: golaunch spells it -x NAME=VALUE"},
		{[]string{"--mca", "btl", "self", "p"}, "--mca: not supported: golaunch has no MCA parameters"},
		{[]string{"-mca", "btl", "self", "p"}, "-mca: not supported"},
		{[]string{"--ntasks-per-node=2", "p"}, "--ntasks-per-node: golaunch spells it --npernode N"},
		{[]string{"-N", "2", "p"}, "-N: golaunch spells it -H"},
		{[]string{"-l", "p"}, "-l: golaunch spells it --tag-output"},
		{[]string{"--label", "p"}, "--label: golaunch spells it --tag-output"},
		{[]string{"--mpi=pmi2", "p"}, "--mpi: not needed"},
		{[]string{"-c", "2", "p"}, "golaunch spells mpirun's -c as -n N"},
		{[]string{"-nolocal", "p"}, "-nolocal: not supported"},
		{[]string{"-xml", "p"}, "-xml: not supported"},
		{[]string{"--pernode", "p"}, "--pernode: golaunch spells it --npernode 1"},
		{[]string{"--cpu-bind=cores", "p"}, "--cpu-bind: golaunch spells it --bind-to core"},
		{[]string{"--multi-prog", "conf"}, "golaunch -n 2 ./a : -n 2 ./b"},
		// Unknown flags golaunch has nothing to say about.
		{[]string{"-ostfile", "h", "p"}, "unknown flag -ostfile (golaunch's long flags take two dashes, and --ostfile is not one either"},
		{[]string{"--frob", "p"}, "unknown flag --frob (golaunch --help lists the flags)"},
		{[]string{"-Z", "p"}, "unknown flag -Z"},
	}
	for _, tt := range tests {
		_, err := ParseArgs(tt.args, testEnv)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("ParseArgs(%q) = %v, want a *UsageError", tt.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseArgs(%q) = %q, want it to mention %q", tt.args, err, tt.want)
		}
		for _, bad := range []string{"shorthand", "invalid argument", "flag needs", "strconv", "Parse"} {
			if strings.Contains(err.Error(), bad) {
				t.Errorf("ParseArgs(%q) = %q: parser wording %q", tt.args, err, bad)
			}
		}
	}
}

// TestForeignFlagsAnswered checks that every entry of the table is answered with its
// sentence in both spellings a user may type, and is not a flag of golaunch's own.
func TestForeignFlagsAnswered(t *testing.T) {
	fs, _ := jobFlags(&Options{})
	for name, msg := range foreignFlags {
		if !strings.HasPrefix(msg, "golaunch spells") && !strings.HasPrefix(msg, "not supported: ") &&
			!strings.HasPrefix(msg, "not needed: ") && !strings.HasPrefix(msg, "golaunch never") && !strings.HasPrefix(msg, "golaunch prints") {
			t.Errorf("%s: %q says neither how golaunch spells it nor that it is not supported", name, msg)
		}
		spellings := []string{"-" + name}
		if len(name) > 1 {
			spellings = append(spellings, "--"+name)
			if fs.Lookup(name) != nil && name != "env" {
				t.Errorf("%s is golaunch's own flag and in the table", name)
			}
		} else if fs.ShorthandLookup(name) != nil {
			t.Errorf("-%s is golaunch's own flag and in the table", name)
		}
		for _, s := range spellings {
			if s == "--env" {
				continue // golaunch's -x
			}
			_, err := ParseArgs([]string{s, "p"}, testEnv)
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("ParseArgs(%q) = %v, want %q", s, err, msg)
			}
		}
	}
}

// FuzzParseArgs feeds command lines of ':'-separated programs and flags: ParseArgs must
// not panic, returns only usage errors, and a parsed MPMD line's programs add up.
func FuzzParseArgs(f *testing.F) {
	f.Add("-n\x002\x00./a\x00:\x00-n\x002\x00./b")
	f.Add("-hostfile\x00h\x00-ppn\x002\x00p")
	f.Add(":\x00./a")
	f.Add("-n\x001\x00./a\x00:")
	f.Add("-vn3\x00--\x00p\x00:\x00x")
	f.Add("-xA=1\x00--map-by\x00ppr:2:node\x00p")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		if len(args) > 64 {
			return
		}
		o, err := ParseArgs(args, testEnv)
		if err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("ParseArgs(%q): %v is not a *UsageError", args, err)
			}
			return
		}
		if o.Help || o.Version {
			return
		}
		if o.Program == "" {
			t.Fatalf("ParseArgs(%q): no program and no error", args)
		}
		if o.Apps != nil {
			n := 0
			for _, a := range o.Apps {
				if a.NP < 1 || a.Program == "" {
					t.Fatalf("ParseArgs(%q): program %+v", args, a)
				}
				n += a.NP
			}
			if n != o.NP || o.Apps[0].Program != o.Program {
				t.Fatalf("ParseArgs(%q): NP %d, programs %+v", args, o.NP, o.Apps)
			}
		}
	})
}

// TestParseArgsObserve: --profile, --trace and --summary become the ranks' variables,
// after -x so that the flags win, with absolute paths; a path of the wrong kind is a
// usage error.
func TestParseArgsObserve(t *testing.T) {
	dir := t.TempDir()
	getenv := func(string) (string, bool) { return "", false }
	o, err := ParseArgs([]string{"-x", "GORMA_PROFILE=x", "--profile", dir + "/p", "--trace", dir + "/t.json", "--summary", "-n", "2", "prog"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"GORMA_PROFILE=x", "GORMA_PROFILE=" + dir + "/p", "GORMA_TRACE=" + dir + "/t.json", "GORMA_SUMMARY=1"}
	if !reflect.DeepEqual(o.Env, want) || o.Trace != dir+"/t.json" {
		t.Errorf("env %q, trace %q; want %q", o.Env, o.Trace, want)
	}
	for _, args := range [][]string{{"--profile", "/dev/null"}, {"--trace", dir}} {
		_, err := ParseArgs(append(args, "prog"), getenv)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "want a") {
			t.Errorf("%q: %v, want a usage error that says what to give", args, err)
		}
	}
}
