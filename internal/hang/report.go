package hang

import (
	"strconv"
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
)

var stateNames = [...]string{Silent: "silent", Blocked: "blocked", Running: "running", Finalized: "finalized",
	Exited: "exited", Stopped: "stopped"}

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

// Report is what one rank says when asked.
type Report struct {
	Rank     int
	Host     string
	State    State    // Blocked (Records non-empty), Running, Finalized, Exited, Stopped, Silent
	Records  []Record // one per blocked goroutine, longest-blocked first
	Omitted  int      // blocked goroutines left out of Records (AppendReport keeps at most MaxRecords)
	Progress uint64   // a counter of completed operations (equal across two reports: no progress)
	Stacks   string   // the rank's goroutine stacks, when asked for
	Trace    string   // the line that leads into the rank's timeline (trace.Pointer), "" for none
}

// Line returns the report as one line: "rank 0: Recv(src=1, tag=0, World) for 31.2s". A
// rank blocked in several calls shows the first and "(+N more)". The other states read
// "rank 0: running (in no gorma call)", "rank 0: finalized", "rank 0: exited", "rank 0:
// stopped (SIGSTOP or a debugger)", "rank 0: silent (no answer)".
func (r Report) Line() string {
	head := "rank " + strconv.Itoa(r.Rank) + ": "
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
		return head + r.State.String()
	case Stopped:
		return head + "stopped (SIGSTOP or a debugger)"
	case Silent:
		return head + "silent (no answer)"
	}
	return head + r.State.String()
}
