package launcher

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// foreignFlags answers the flags of mpirun (Open MPI), mpiexec (MPICH's Hydra) and srun
// that golaunch does not take, by name without dashes: what golaunch calls the same
// thing, or why it has none. The flags golaunch takes under their mpirun spellings
// (-np, -hostfile, -machinefile, -f, -ppn, -npernode, --oversubscribe, --map-by,
// --report-bindings, -bind-to, -host, -hosts) are flags of its own, and those it takes
// with a note (--display-map, --output-filename) are mpirunFlags; none
// is an entry here.
var foreignFlags = map[string]string{
	// Hosts and placement.
	"w":                  "golaunch spells it -H host1,host2 (srun's --nodelist)",
	"nodelist":           "golaunch spells it -H host1,host2",
	"N":                  "golaunch spells it -H host1,host2 (or --npernode N with -n)",
	"nodes":              "golaunch spells it -H host1,host2 (or --npernode N with -n)",
	"ntasks":             "golaunch spells it -n N",
	"ntasks-per-node":    "golaunch spells it --npernode N",
	"pernode":            "golaunch spells it --npernode 1",
	"npersocket":         "not supported: golaunch places ranks per host (--npernode N); --bind-to decides the processors",
	"rank-by":            "not supported: ranks are numbered in the order --map-by places them",
	"rankfile":           "not supported: ranks follow the -H or --hostfile order and --map-by",
	"rf":                 "not supported: ranks follow the -H or --hostfile order and --map-by",
	"nolocal":            "not supported: list the hosts to use with -H or --hostfile",
	"nooversubscribe":    "golaunch never oversubscribes unless given --oversubscribe",
	"default-hostfile":   "golaunch spells it --hostfile FILE",
	"display-allocation": "golaunch spells it --report-bindings",
	"cpus-per-proc":      "not supported: --bind-to core gives each rank its share of the host's processors",
	"cpus-per-rank":      "not supported: --bind-to core gives each rank its share of the host's processors",
	"cpus-per-task":      "not supported: --bind-to core gives each rank its share of the host's processors",
	"c":                  "golaunch spells mpirun's -c as -n N; srun's -c (--cpus-per-task) has no equivalent: --bind-to core gives each rank its share of the host's processors",
	"cpu-bind":           "golaunch spells it --bind-to core (or none)",
	"use-hwthread-cpus":  "not supported: golaunch binds within the processors the kernel lists, hardware threads included",
	"exclusive":          "not supported: golaunch has no resource manager (that is srun's)",
	"partition":          "not supported: golaunch has no resource manager (that is srun's)",
	"p":                  "not supported: golaunch has no resource manager (that is srun's -p)",
	"account":            "not supported: golaunch has no resource manager (that is srun's)",
	"A":                  "not supported: golaunch has no resource manager (that is srun's -A)",
	"mem":                "not supported: golaunch has no resource manager (that is srun's)",
	"gres":               "not supported: golaunch has no resource manager (that is srun's)",
	"launcher":           "not supported: golaunch starts ranks through its own agents (golaunch agent, --join)",
	"bootstrap":          "not supported: golaunch starts ranks through its own agents (golaunch agent, --join)",
	"rmk":                "not supported: golaunch reads hosts from -H or --hostfile, or from its agents",
	"iface":              "not supported: the agents advertise their address (golaunch agent --advertise IP)",

	// Programs and environment.
	"genv":           "golaunch spells it -x NAME=VALUE (for every program)",
	"env":            "golaunch spells it -x NAME=VALUE",
	"genvlist":       "golaunch spells it -x NAME, once per variable",
	"envlist":        "golaunch spells it -x NAME, once per variable",
	"genvall":        "not needed: the ranks of a local run inherit golaunch's environment; -x NAME forwards one variable to other hosts",
	"envall":         "not needed: the ranks of a local run inherit golaunch's environment; -x NAME forwards one variable to other hosts",
	"genvnone":       "not supported: ranks inherit their agent's environment",
	"envnone":        "not supported: ranks inherit their agent's environment",
	"export":         "golaunch spells it -x NAME[=VALUE]",
	"mca":            "not supported: golaunch has no MCA parameters; gorma reads GORMA_* variables (pass them with -x)",
	"gmca":           "not supported: golaunch has no MCA parameters; gorma reads GORMA_* variables (pass them with -x)",
	"am":             "not supported: golaunch has no MCA parameters; gorma reads GORMA_* variables (pass them with -x)",
	"tune":           "not supported: golaunch has no MCA parameters; gorma reads GORMA_* variables (pass them with -x)",
	"app":            "not supported: give the programs on the command line, separated by ':' (golaunch -n 2 ./a : -n 2 ./b)",
	"configfile":     "not supported: give the programs on the command line, separated by ':' (golaunch -n 2 ./a : -n 2 ./b)",
	"multi-prog":     "golaunch spells it golaunch -n 2 ./a : -n 2 ./b",
	"wdir":           "not supported: ranks run in golaunch's working directory (cd there first)",
	"wd":             "not supported: ranks run in golaunch's working directory (cd there first)",
	"chdir":          "not supported: ranks run in golaunch's working directory (cd there first)",
	"D":              "not supported: ranks run in golaunch's working directory (cd there first)",
	"prefix":         "not supported: give the program's path, or put it on the agents' PATH",
	"noprefix":       "not supported: give the program's path, or put it on the agents' PATH",
	"preload-binary": "not supported: the program must exist at the same path on every host",
	"s":              "not supported: the program must exist at the same path on every host",
	"mpi":            "not needed: golaunch serves every rank PMI-1 on PMI_FD and PMIx on loopback TCP, so gorma ranks, MPICH and Open MPI programs run as they are",

	// Output.
	"l":                      "golaunch spells it --tag-output (on by default with more than one rank)",
	"label":                  "golaunch spells it --tag-output (on by default with more than one rank)",
	"prepend-rank":           "golaunch spells it --tag-output (on by default with more than one rank)",
	"outfile-pattern":        "golaunch spells it --output-dir DIR (DIR/rank.N.log per rank)",
	"errfile-pattern":        "golaunch spells it --output-dir DIR (DIR/rank.N.log per rank)",
	"output":                 "golaunch spells it --output-dir DIR (DIR/rank.N.log per rank)",
	"o":                      "golaunch spells it --output-dir DIR (DIR/rank.N.log per rank)",
	"error":                  "golaunch spells it --output-dir DIR (DIR/rank.N.log per rank)",
	"e":                      "golaunch spells it --output-dir DIR (DIR/rank.N.log per rank)",
	"timestamp-output":       "not supported: golaunch prefixes lines with the rank only (--tag-output)",
	"merge-stderr-to-stdout": "not supported: each rank's stderr goes to golaunch's stderr",
	"xml":                    "not supported: golaunch's output is plain text",
	"q":                      "not supported: golaunch prints only the ranks' output and, on failure, one summary line",
	"quiet":                  "not supported: golaunch prints only the ranks' output and, on failure, one summary line",
	"stdin":                  "not supported: rank 0 reads golaunch's standard input",
	"print-all-exitcodes":    "not supported: the summary line names the rank that failed first",

	// Time and failure.
	"t":                       "golaunch spells it --timeout DURATION",
	"time":                    "golaunch spells it --timeout DURATION",
	"kill-on-bad-exit":        "not needed: golaunch aborts the job when a rank fails, and --ft lets the job go on instead",
	"K":                       "not needed: golaunch aborts the job when a rank fails, and --ft lets the job go on instead",
	"no-kill":                 "golaunch spells it --ft: the job goes on after a rank or an agent fails",
	"disable-auto-cleanup":    "golaunch spells it --ft: the job goes on after a rank or an agent fails",
	"with-ft":                 "golaunch spells it --ft: the job goes on after a rank or an agent fails",
	"enable-recovery":         "golaunch spells it --ft: the job goes on after a rank fails, which is not restarted",
	"max-restarts":            "not supported: a failed rank is not restarted; --ft lets the job go on without it",
	"get-stack-traces":        "golaunch spells it --hang-report DURATION (with --stacks); or send golaunch SIGUSR1",
	"report-state-on-timeout": "golaunch prints a hang report at --timeout by itself (add --stacks for goroutine stacks)",
	"debug":                   "not supported: see --hang-report and --stacks",
	"info":                    "golaunch spells it --version",
}

// mpirunFlags declares, hidden, the mpirun flags that golaunch takes with a note
// (mpirunHabits): a script written for mpirun runs on.
func mpirunFlags(fs *pflag.FlagSet, r *rawFlags) {
	fs.BoolVar(&r.displayMap, "display-map", false, "mpirun's --display-map: --report-bindings")
	fs.StringVar(&r.outputFilename, "output-filename", "", "mpirun's --output-filename `dir`: --output-dir")
	fs.MarkHidden("display-map")
	fs.MarkHidden("output-filename")
}

// mpirunHabits maps mpirun's --display-map and --output-filename DIR onto what golaunch
// does, with one note each, and --bind-to package onto --bind-to socket.
func (o *Options) mpirunHabits(fs *pflag.FlagSet, raw *rawFlags) error {
	if raw.displayMap {
		o.ReportBindings = true
		o.Notes = append(o.Notes, "--display-map is --report-bindings here: a line per rank on stderr with its host, pid and processors")
	}
	if fs.Changed("output-filename") {
		if fs.Changed("output-dir") {
			return usagef("--output-filename is mpirun's spelling of --output-dir: give one")
		}
		dir := outputFilenameDir(raw.outputFilename)
		if dir == "" {
			return usagef("--output-filename %q: want a folder, such as --output-filename logs (golaunch writes logs/rank.N.log)", raw.outputFilename)
		}
		o.OutputDir = dir
		o.Notes = append(o.Notes, fmt.Sprintf("--output-filename %s is --output-dir %s here: each rank's stdout and stderr go to %s/rank.N.log, not to the terminal (mpirun writes %s/JOBID/rank.N/stdout and stderr)", dir, dir, dir, dir))
	}
	if strings.ToLower(o.BindTo) == "package" {
		o.BindTo = BindSocket // hwloc's name for a socket, which mpirun takes too
	}
	return nil
}

// outputFilenameDir is the folder of mpirun's --output-filename DIR[:nojobid,nocopy]:
// golaunch has neither a job folder nor a copy to the terminal, so the modifiers go.
func outputFilenameDir(v string) string {
	i := strings.LastIndexByte(v, ':')
	if i < 0 {
		return v
	}
	dir, mods := v[:i], v[i+1:]
	for _, m := range strings.Split(mods, ",") {
		if m != "nojobid" && m != "nocopy" {
			return v // a colon of the folder's name
		}
	}
	return dir
}
