package hang

import (
	"strconv"
	"time"
)

// State is what a rank was doing when asked. The zero State is Silent: a Report nobody
// filled in says nothing.
type State uint8

const (
	Silent    State = iota // no answer
	Blocked                // blocked in the gorma calls of Records
	Running                // not blocked in any gorma call
	Finalized              // past Finalize
	Exited                 // the process has ended
	Stopped                // the process is stopped (SIGSTOP, a debugger): it cannot answer
	Foreign                // not a gorma rank (an MPI library's): PMI says what its agent saw of its PMI calls
)

var stateNames = [...]string{Silent: "silent", Blocked: "blocked", Running: "running", Finalized: "finalized",
	Exited: "exited", Stopped: "stopped", Foreign: "foreign"}

// String returns the state's name as the text form writes it: "blocked", "running", ...
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// parseState returns the State whose String is s.
func parseState(s string) (State, bool) {
	for i, n := range stateNames {
		if n == s {
			return State(i), true
		}
	}
	return 0, false
}

// Report is what one rank says when asked, or what its agent or the launcher says for it.
type Report struct {
	Rank     int
	Host     string
	Pid      int      // the rank's process; 0 when not told (a gorma rank's own answer)
	State    State    // Blocked (Records non-empty), Running, Finalized, Exited, Stopped, Silent, Foreign
	Records  []Record // one per blocked goroutine, longest-blocked first
	Omitted  int      // blocked goroutines left out of Records (AppendReport keeps at most MaxRecords)
	Done     []Record // the last collective calls the rank returned from, oldest first per communicator
	Progress uint64   // a counter of completed operations (equal across two reports: no progress)
	Stacks   string   // the rank's goroutine stacks, when asked for
	Trace    string   // the line that leads into the rank's timeline (trace.Pointer), "" for none
	PMI      PMICalls // a Foreign rank's PMI calls; Progress counts the answered ones
	End      string   // how a Finalized or Exited rank's process ended ("exit 0", "signal 9 (SIGKILL)"), "" untold
}

// PMICalls is what a rank's agent saw of the PMI requests of a rank whose calls it cannot
// see (a Foreign rank).
type PMICalls struct {
	Wire      string        // "PMI-1" or "PMIx"; "" when the rank made no PMI request
	Wait      string        // the fence the rank waits in ("barrier_in", "fence"), "" none
	Last      string        // the last request it made, when it waits in none
	Since     time.Duration // how long it has waited in Wait, or since Last
	Finalized bool          // it called PMI finalize
}

// Line returns the report as one line: "rank 0: Recv(src=1, tag=0, World) for 31.2s". A
// rank blocked in several calls shows the first and "(+N more)". The other states read
// "rank 0: running (in no gorma call)", "rank 0: finalized", "rank 0: exited", "rank 0:
// stopped (SIGSTOP or a debugger)", "rank 0: silent (no answer)". A report with a Pid
// names it ("rank 1 (pid 4242): ..."), and one with End adds it ("finalized (exit 0)").
// A Foreign rank's line is its PMI calls: "rank 1 (pid 4242): in PMIx fence (MPI_Init or
// MPI_Finalize) for 31.0s".
func (r Report) Line() string {
	head := "rank " + strconv.Itoa(r.Rank) + ": "
	if r.Pid > 0 {
		head = "rank " + strconv.Itoa(r.Rank) + " (pid " + strconv.Itoa(r.Pid) + "): "
	}
	switch r.State {
	case Blocked:
		if len(r.Records) == 0 {
			return head + "blocked"
		}
		s := head + r.Records[0].String() + " for " + seconds(r.Records[0].Since)
		if more := len(r.Records) - 1 + r.Omitted; more > 0 {
			s += " (+" + strconv.Itoa(more) + " more)"
		}
		return s
	case Running:
		return head + "running (in no gorma call)"
	case Finalized, Exited:
		if r.End != "" {
			return head + r.State.String() + " (" + r.End + ")"
		}
		return head + r.State.String()
	case Stopped:
		return head + "stopped (SIGSTOP or a debugger)"
	case Silent:
		return head + "silent (no answer)"
	case Foreign:
		return head + r.PMI.String()
	}
	return head + r.State.String()
}

// String says what the calls show: "in PMIx fence (MPI_Init or MPI_Finalize) for 31.0s",
// "runs MPI code (not a gorma rank: golaunch sees only its PMI calls); last PMIx request
// get 40.2s ago", "called PMIx finalize 2.0s ago and runs on", "runs (no PMI or PMIx
// request yet: golaunch cannot see inside it)".
func (c PMICalls) String() string {
	switch {
	case c.Wire == "":
		return "runs (no PMI or PMIx request yet: golaunch cannot see inside it)"
	case c.Wait != "":
		return "in " + c.Wire + " " + c.Wait + " (MPI_Init or MPI_Finalize) for " + seconds(c.Since)
	case c.Finalized:
		return "called " + c.Wire + " finalize " + seconds(c.Since) + " ago and runs on"
	}
	return "runs MPI code (not a gorma rank: golaunch sees only its PMI calls); last " + c.Wire + " request " +
		c.Last + " " + seconds(c.Since) + " ago"
}
