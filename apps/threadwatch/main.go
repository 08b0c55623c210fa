package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
)

// summary is the JSON document.
type summary struct {
	Comm      string   `json:"comm"`
	Command   []string `json:"command"`
	Interval  string   `json:"interval"`
	Processes int      `json:"processes"` // distinct matching processes seen
	Samples   int      `json:"samples"`   // process samples (one process at one tick)
	// RunnableMean is the mean runnable threads per process sample.
	RunnableMean float64 `json:"runnable_mean"`
	// MultiShare is the share of process samples with more than one runnable thread.
	MultiShare  float64 `json:"multi_runnable_share"`
	ThreadsMean float64 `json:"threads_mean"`
	ThreadsMax  int     `json:"threads_max"`
	// Histogram counts process samples by their runnable threads (index 0, 1, 2, ...).
	Histogram []int `json:"runnable_histogram"`
}

func main() {
	fs := pflag.NewFlagSet("threadwatch", pflag.ContinueOnError)
	comm := fs.String("comm", "", "the rank processes' name as /proc/PID/comm shows it (the program's file name, at most 15 bytes)")
	interval := fs.Duration("interval", 5*time.Millisecond, "time between samples")
	jsonOut := fs.String("json", "", "also write the summary as JSON to FILE")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: threadwatch --comm NAME [--interval 5ms] [--json=FILE] -- COMMAND [ARGS...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	args := fs.Args()
	if *comm == "" || len(args) == 0 || *interval <= 0 {
		fs.Usage()
		os.Exit(2)
	}
	s, code, err := watch(*comm, *interval, args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "threadwatch:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "threadwatch: %s: %d processes, %d samples every %s: runnable threads per process %.2f (more than one in %.1f%% of samples), threads %.1f (max %d), histogram %v\n",
		s.Comm, s.Processes, s.Samples, s.Interval, s.RunnableMean, 100*s.MultiShare, s.ThreadsMean, s.ThreadsMax, s.Histogram)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(s, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "threadwatch:", err)
			os.Exit(1)
		}
	}
	os.Exit(code)
}

// watch runs args and samples its descendants named comm until it exits; it returns the
// summary and the command's exit code.
func watch(comm string, interval time.Duration, args []string) (summary, int, error) {
	s := summary{Comm: comm, Command: args, Interval: interval.String()}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return s, 0, err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for v := range sig {
			cmd.Process.Signal(v)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	seen := map[int]bool{}
	var runnable, threads, multi int
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var pids []int
	for n := 0; ; n++ {
		select {
		case err := <-done:
			s.Processes = len(seen)
			if s.Samples > 0 {
				s.RunnableMean = float64(runnable) / float64(s.Samples)
				s.MultiShare = float64(multi) / float64(s.Samples)
				s.ThreadsMean = float64(threads) / float64(s.Samples)
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return s, ee.ExitCode(), nil
			}
			return s, 0, err
		case <-tick.C:
		}
		if n%20 == 0 { // the tree changes rarely: rescan every 20 samples
			pids = descendants(cmd.Process.Pid, comm)
		}
		for _, pid := range pids {
			r, t, ok := sample(pid)
			if !ok {
				continue
			}
			seen[pid] = true
			s.Samples++
			runnable += r
			threads += t
			s.ThreadsMax = max(s.ThreadsMax, t)
			if r > 1 {
				multi++
			}
			for len(s.Histogram) <= r {
				s.Histogram = append(s.Histogram, 0)
			}
			s.Histogram[r]++
		}
	}
}

// descendants returns the processes below root (at any depth) whose comm is comm.
func descendants(root int, comm string) []int {
	ents, _ := os.ReadDir("/proc")
	parent, name := map[int]int{}, map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		c, rest, ok := splitStat(string(b))
		if !ok || len(rest) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(rest[1])
		parent[pid], name[pid] = pp, c
	}
	var out []int
	for pid, c := range name {
		if c != comm {
			continue
		}
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// sample reads the states of pid's threads: how many are runnable, how many there are.
func sample(pid int) (runnable, threads int, ok bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, false
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue
		}
		_, rest, ok := splitStat(string(b))
		if !ok || len(rest) < 1 {
			continue
		}
		threads++
		if rest[0] == "R" {
			runnable++
		}
	}
	return runnable, threads, threads > 0
}

// splitStat splits a /proc stat line into the command name (between the first '(' and
// the last ')') and the fields after it (state, ppid, ...).
func splitStat(line string) (comm string, rest []string, ok bool) {
	i, j := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if i < 0 || j < i {
		return "", nil, false
	}
	return line[i+1 : j], strings.Fields(line[j+1:]), true
}
