package launcher

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func testEnv(name string) (string, bool) {
	if name == "HOME" {
		return "/home/u", true
	}
	return "", false
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want func(*Options) bool
	}{
		{"n", []string{"-n", "4", "prog"}, func(o *Options) bool { return o.NP == 4 && o.Program == "prog" }},
		{"n attached", []string{"-n4", "prog"}, func(o *Options) bool { return o.NP == 4 }},
		{"np mpirun spelling", []string{"-np", "8", "prog", "a"}, func(o *Options) bool {
			return o.NP == 8 && o.Program == "prog" && reflect.DeepEqual(o.Args, []string{"a"})
		}},
		{"np equals", []string{"-np=3", "prog"}, func(o *Options) bool { return o.NP == 3 }},
		{"long np", []string{"--np", "2", "prog"}, func(o *Options) bool { return o.NP == 2 }},
		{"flags stop at program", []string{"-n", "2", "prog", "-n", "5", "-np", "7"}, func(o *Options) bool {
			return o.NP == 2 && reflect.DeepEqual(o.Args, []string{"-n", "5", "-np", "7"})
		}},
		{"np after a valued flag", []string{"-x", "A=1", "-np", "2", "prog"}, func(o *Options) bool {
			return o.NP == 2 && reflect.DeepEqual(o.Env, []string{"A=1"})
		}},
		{"-np as the value of -x is not rewritten", []string{"-x", "A=-np", "prog"}, func(o *Options) bool {
			return reflect.DeepEqual(o.Env, []string{"A=-np"})
		}},
		{"double dash", []string{"-n", "2", "--", "-prog", "x"}, func(o *Options) bool {
			return o.Program == "-prog" && reflect.DeepEqual(o.Args, []string{"x"})
		}},
		{"x forwards", []string{"-x", "HOME", "-x", "B=2=3", "prog"}, func(o *Options) bool {
			return reflect.DeepEqual(o.Env, []string{"HOME=/home/u", "B=2=3"})
		}},
		{"hosts", []string{"-H", "a:2,b,a:1", "prog"}, func(o *Options) bool {
			return reflect.DeepEqual(o.Hosts, []HostSlots{{"a", 3}, {"b", 1}})
		}},
		{"durations", []string{"--timeout", "1m30s", "--grace", "2", "--startup-timeout=0.5", "prog"}, func(o *Options) bool {
			return o.Timeout == 90*time.Second && o.Grace == 2*time.Second && o.StartupTimeout == 500*time.Millisecond
		}},
		{"defaults", []string{"prog"}, func(o *Options) bool {
			return o.NP == 0 && o.Grace == DefaultGrace && o.StartupTimeout == DefaultStartupTimeout &&
				o.Transport == "auto" && o.BindTo == BindAuto && o.tagDefault && o.Timeout == 0
		}},
		{"bind-to", []string{"--bind-to", "core", "prog"}, func(o *Options) bool { return o.BindTo == BindCore }},
		{"bind-to none", []string{"--bind-to=none", "prog"}, func(o *Options) bool { return o.BindTo == BindNone }},
		{"tag off", []string{"--tag-output=false", "prog"}, func(o *Options) bool { return !o.TagOutput && !o.tagDefault }},
		{"join", []string{"--join", "h:7946", "--keyfile", "k", "prog"}, func(o *Options) bool { return o.Join == "h:7946" }},
		{"help", []string{"--help"}, func(o *Options) bool { return o.Help }},
		{"help short", []string{"-h", "prog"}, func(o *Options) bool { return o.Help }},
		{"version", []string{"--version"}, func(o *Options) bool { return o.Version }},
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

func TestParseArgsErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the message
	}{
		{[]string{}, "no program"},
		{[]string{"-n", "2"}, "no program"},
		{[]string{"-n", "0", "prog"}, "at least 1"},
		{[]string{"-n", "x", "prog"}, "-n x: want a whole number of ranks, such as -n 4"},
		{[]string{"--bogus", "prog"}, "unknown flag --bogus"},
		{[]string{"-q", "prog"}, "-q: not supported"},
		{[]string{"--transport", "ib", "prog"}, "want auto, shm or tcp"},
		{[]string{"--bind-to", "l3cache", "prog"}, `--bind-to "l3cache": want auto, core, socket or none`},
		{[]string{"-x", "NOPE", "prog"}, "NOPE is not set"},
		{[]string{"-x", "1A=2", "prog"}, "not a valid variable name"},
		{[]string{"-x", "GOLAUNCH_RANK=2", "prog"}, "contract"},
		{[]string{"-H", "a:0", "prog"}, "slots"},
		{[]string{"-H", "a,,b", "prog"}, "empty entry"},
		{[]string{"-H", "a b", "prog"}, "not allowed"},
		{[]string{"-H", "a", "--hostfile", "f", "prog"}, "not both"},
		{[]string{"--hostfile", "/nonexistent/hosts", "prog"}, "no such file"},
		{[]string{"--timeout", "soon", "prog"}, "duration"},
		{[]string{"--grace", "-1s", "prog"}, "negative"},
		{[]string{"--join", "h:1", "prog"}, "needs --keyfile"},
		{[]string{"--join", "nohost", "--keyfile", "k", "prog"}, "--join"},
		{[]string{"--keyfile", "k", "prog"}, "only make sense with --join"},
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
	}
}

func TestParseAgentArgs(t *testing.T) {
	o, _, err := ParseAgentArgs([]string{"--bind", "127.0.0.1:0", "--join", "a:1,b:2", "--join", "c:3",
		"--slots", "3", "--keyfile", "k", "--name", "h1", "--join-retry", "1m"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Bind != "127.0.0.1:0" || !reflect.DeepEqual(o.Join, []string{"a:1", "b:2", "c:3"}) || o.Slots != 3 || o.Name != "h1" || o.JoinRetry != time.Minute {
		t.Errorf("got %+v", o)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--keyfile", "k"}, "--bind"},
		{[]string{"--bind", "x", "--keyfile", "k"}, "--bind"},
		{[]string{"--bind", "h:1"}, "--keyfile"},
		{[]string{"--bind", "h:1", "--keyfile", "k", "--slots", "0"}, "--slots"},
		{[]string{"--bind", "h:1", "--keyfile", "k", "--name", "a b"}, "--name"},
		{[]string{"--bind", "h:1", "--keyfile", "k", "extra"}, "unexpected argument"},
		{[]string{"--bind", "h:1", "--keyfile", "k", "--join", "nojoinport"}, "--join"},
		{[]string{"--bind", "h:1", "--keyfile", "k", "--join-retry", "5s"}, "--join-retry"},
		{[]string{"--bind", "h:1", "--keyfile", "k", "--join", "a:1", "--join-retry", "-1s"}, "--join-retry"},
		{[]string{"--bind", "h:1", "--keyfile", "k", "--join", "a:1", "--join-retry", "soon"}, "join-retry"},
	} {
		_, _, err := ParseAgentArgs(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseAgentArgs(%q) = %v, want an error about %s", tt.args, err, tt.want)
		}
	}
}
