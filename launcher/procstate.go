package launcher

import (
	"os"
	"strconv"
	"strings"

	"github.com/gorma-hpc/gorma/internal/hang"
)

// A rank that is stopped (SIGSTOP, a debugger) or no longer running cannot answer a
// hang report's request, and a silent rank keeps the quiet-period check from ever finding
// the job hung. So the agent answers for such a rank from its process state.

// statState returns the state letter of a /proc/PID/stat line: the first field after
// the command name, which is in parentheses and may itself hold spaces and parentheses.
func statState(stat string) (byte, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+1] != ' ' {
		return 0, false
	}
	return stat[i+2], true
}

// stalledState maps a process state letter to what the agent reports for a rank that
// cannot answer: Stopped for T (stopped) and t (stopped by a tracer), Exited for Z
// (a zombie) and X (dead). ok is false for every other state: the rank answers for itself.
func stalledState(state byte) (s hang.State, ok bool) {
	switch state {
	case 'T', 't':
		return hang.Stopped, true
	case 'Z', 'X':
		return hang.Exited, true
	}
	return 0, false
}

// procStalled reports what process pid's state says about a rank that cannot answer;
// a process that is gone has exited.
func procStalled(pid int) (hang.State, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if os.IsNotExist(err) {
			return hang.Exited, true
		}
		return 0, false
	}
	c, ok := statState(string(b))
	if !ok {
		return 0, false
	}
	return stalledState(c)
}

// reportStalled answers a report request for each local rank that is stopped or no
// longer running, which cannot answer it itself.
func (j *agentJob) reportStalled() {
	for _, p := range j.procList() {
		select {
		case <-p.ended:
			continue // its exit is reported
		default:
		}
		if st, ok := procStalled(p.pid); ok {
			rep := hang.Report{Rank: p.rank, Host: j.host(), State: st}
			j.send(fReport, reportMsg{Rank: p.rank, Text: string(hang.AppendReport(nil, rep))})
		}
	}
}

// procList returns the job's rank processes on this host.
func (j *agentJob) procList() []*rankProc {
	j.mu.Lock()
	defer j.mu.Unlock()
	procs := make([]*rankProc, 0, len(j.procs))
	for _, p := range j.procs {
		procs = append(procs, p)
	}
	return procs
}
