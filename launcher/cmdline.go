package launcher

import (
	"strings"

	"github.com/spf13/pflag"
)

// The shape of golaunch's command line, before pflag reads the flags:
//
//	golaunch [FLAGS] PROGRAM [ARGS...] [: [-n N] [-x VAR]... PROGRAM [ARGS...]]...
//
// Flags stop at the program name. A standalone ":" after a program's arguments ends them
// and starts the next program of an MPMD job; an argument that merely contains a colon
// ("a:b") is an argument. "--" where a flag or a program may stand makes the next
// argument the program and every argument after it that program's, ":" included, so a
// program that takes a literal ":" is written last, after "--". The flags before the
// first program are the job's; a later program takes only -n and -x.

// cmdSegment is one program of the command line and the flags before it.
type cmdSegment struct {
	flags      []string // the flag arguments, spelled as pflag reads them
	program    string
	args       []string
	hasProgram bool
}

// segmentFlags are the flags a program after the first ':' may take (by long name).
var segmentFlags = map[string]bool{"np": true, "env": true}

// splitCommandLine splits args into programs and normalizes their flags against fs:
// single-dash long names (-hostfile, -np, -ppn) become double-dash ones, and an unknown
// flag fails with a sentence (foreignFlag) rather than pflag's. The first segment may
// lack a program (--help); a later one may not.
func splitCommandLine(fs *pflag.FlagSet, args []string) ([]cmdSegment, error) {
	var segs []cmdSegment
	seg := cmdSegment{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == ":":
			if len(segs) == 0 && len(seg.flags) == 0 {
				return nil, usagef("':' cannot come first: it separates the programs of one job (golaunch -n 2 ./a : -n 2 ./b)")
			}
			return nil, usagef("no program before ':' (each ':' ends a program's arguments: golaunch -n 2 ./a : -n 2 ./b)")
		case a == "--":
			if i+1 < len(args) {
				return append(segs, cmdSegment{flags: seg.flags, program: args[i+1], args: args[i+2:], hasProgram: true}), nil
			}
			i = len(args) // no program: as if the line ended here
		case a == "-" || !strings.HasPrefix(a, "-"):
			seg.program, seg.hasProgram = a, true
			j := i + 1
			for j < len(args) && args[j] != ":" {
				j++
			}
			seg.args = args[i+1 : j]
			segs = append(segs, seg)
			if j == len(args) {
				return segs, nil
			}
			if j == len(args)-1 {
				return nil, usagef("':' at the end of the command line: a program must follow it (to pass a literal ':' to a program, put -- before the program and the program last: golaunch -n 1 -- ./a x : y)")
			}
			seg, i = cmdSegment{}, j
			continue
		}
		spelled, flags, next, err := normalizeFlag(fs, a)
		if err != nil {
			return nil, err
		}
		if len(segs) > 0 {
			for _, f := range flags {
				if !segmentFlags[f.Name] {
					return nil, usagef("%s applies to the whole job: give it before the first program (a program after ':' takes only -n and -x)", flagSpelling(f))
				}
			}
		}
		seg.flags = append(seg.flags, spelled)
		if next {
			if i+1 == len(args) {
				return nil, usagef("%s needs a value%s", a, valueExample(flags[len(flags)-1]))
			}
			i++
			seg.flags = append(seg.flags, args[i])
		}
	}
	if len(segs) > 0 {
		return nil, usagef("no program after ':' (each ':' starts another program: golaunch -n 2 ./a : -n 2 ./b)")
	}
	return append(segs, seg), nil
}

// normalizeFlag checks one flag argument against fs and returns its spelling for pflag,
// the flags it names (one, or a run of short flags such as -vn), and whether the last of
// them takes the next argument as its value. A single-dash long name (-hostfile, -np) is
// spelled with two dashes.
func normalizeFlag(fs *pflag.FlagSet, a string) (string, []*pflag.Flag, bool, error) {
	_, _, hasValue := strings.Cut(a, "=")
	if strings.HasPrefix(a, "--") {
		name, _, _ := strings.Cut(a[2:], "=")
		if f := fs.Lookup(name); f != nil && name != "" {
			return a, []*pflag.Flag{f}, f.NoOptDefVal == "" && !hasValue, nil
		}
		return "", nil, false, foreignFlag("--" + name)
	}
	word, _, _ := strings.Cut(a[1:], "=")
	if len(word) > 1 {
		// mpiexec's -env NAME VALUE is not golaunch's --env NAME=VALUE.
		if _, known := foreignFlags[word]; known {
			return "", nil, false, foreignFlag("-" + word)
		}
		if f := fs.Lookup(word); f != nil {
			return "-" + a, []*pflag.Flag{f}, f.NoOptDefVal == "" && !hasValue, nil
		}
	}
	flags, rest := shortRun(fs, a[1:])
	if flags == nil {
		return "", nil, false, foreignFlag("-" + word)
	}
	return a, flags, flags[len(flags)-1].NoOptDefVal == "" && rest == "", nil
}

// shortRun parses s (after the dash) as a run of short flags (-vn), the last of which may
// take the rest of s as its value (-n4, -xA=1, -v=true), and returns the flags and that
// rest. Nil when a letter is no flag's.
func shortRun(fs *pflag.FlagSet, s string) ([]*pflag.Flag, string) {
	var flags []*pflag.Flag
	for i := 0; i < len(s); i++ {
		if s[i] == '=' && i > 0 {
			return flags, s[i:]
		}
		f := fs.ShorthandLookup(s[i : i+1])
		if f == nil {
			return nil, ""
		}
		flags = append(flags, f)
		if f.NoOptDefVal == "" {
			return flags, s[i+1:]
		}
	}
	return flags, ""
}

// flagSpelling names f as a user would type it: -n or --timeout.
func flagSpelling(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "-" + f.Shorthand
	}
	return "--" + f.Name
}

// valueExample suggests a value for a flag given without one.
func valueExample(f *pflag.Flag) string {
	switch f.Name {
	case "np":
		return " (a number of ranks: -n 4)"
	case "env":
		return " (NAME or NAME=VALUE: -x OMP_NUM_THREADS=1)"
	case "npernode":
		return " (ranks per host: --npernode 2)"
	}
	if f.Value.Type() == "duration" {
		return " (a duration: " + "--" + f.Name + " 90s)"
	}
	return ""
}

// foreignFlag is the error for a flag golaunch does not know: what golaunch calls it,
// or why it has none, for the flags of mpirun, mpiexec (Hydra) and srun.
func foreignFlag(spelled string) error {
	name := strings.TrimLeft(spelled, "-")
	if msg, ok := foreignFlags[name]; ok {
		return usagef("%s: %s", spelled, msg)
	}
	if len(name) > 1 && !strings.HasPrefix(spelled, "--") {
		return usagef("unknown flag %s (golaunch's long flags take two dashes, and --%s is not one either; golaunch --help lists them)", spelled, name)
	}
	return usagef("unknown flag %s (golaunch --help lists the flags)", spelled)
}
