package launcher

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Recognising a Go crash in a rank's stderr. The Go runtime prints a panic, a fatal error
// or a signal it cannot turn into a panic in one of these forms, whatever GOTRACEBACK
// says, then exits with code 2 (or raises SIGABRT with GOTRACEBACK=crash):
//
//	panic: <value>                       a panic; a multi-line value and nested panics
//	[signal SIGSEGV: segmentation ...]   follow on lines starting with a tab, then the
//	                                     "[signal ...]" line of a fault turned into a panic
//	fatal error: <what>                  a fatal error: concurrent map writes, a deadlock,
//	                                     "fault" (after "unexpected fault address 0x..."),
//	                                     "unexpected signal during runtime execution", ...
//	SIGQUIT: quit                        a signal the runtime dies of (SIGQUIT, SIGABRT
//	PC=0x... m=0 sigcode=0               or a SIGSEGV from outside), always with a trace
//
// Then, unless GOTRACEBACK=none, a blank line and a trace, whose first line is
// "goroutine N [running]:", "goroutine N gp=0x... m=0 mp=0x... [running]:" (system,
// crash, and any runtime error) or "runtime stack:". The runtime's own errors print the
// trace even under GOTRACEBACK=none; a panic and a program's fatal error (concurrent
// map writes) print none, and the process dies right after the header's last line.
//
// A crash is therefore a header line followed, within panicWindow lines, by a trace, or
// a panic or fatal error header that ends the stream, followed only by its tail (lines
// starting with a tab, "[signal ", "PC=", or blank). The agent watches each rank's
// stderr as it forwards it (spawnRank). When the rank exits 2 or dies of SIGABRT, the
// crash's first line goes to the submitter in the rank's exit report (exitMsg.Panic).
// So the summary can say "panicked" whatever --output-dir does with the text and on
// whichever host the rank ran. A program that prints such a header as the last thing on
// its stderr and then exits 2 itself reads as a crash too.

const (
	// panicWindow is how many lines after a header its trace may start: a multi-line
	// panic value longer than this is not recognised.
	panicWindow = 64
	// maxPanicLine bounds the first line kept for the summary, and the bytes of a line
	// that the watch holds while waiting for its newline.
	maxPanicLine = 512
)

// traceLine matches the first line of a Go trace: "goroutine 1 [running]:",
// "goroutine 1 gp=0xc000002380 m=0 mp=0x5572a0 [running]:", "goroutine 5 gp=0x... m=nil [".
var traceLine = regexp.MustCompile(`^(?:goroutine \d+(?: [a-z]+=\S+)* \[|runtime stack:$)`)

// signalHeader matches the header of a signal the runtime dies of: "SIGQUIT: quit".
var signalHeader = regexp.MustCompile(`^SIG[A-Z0-9]+: `)

// peerFailureText matches the gorma runtime's text of a peer's failure (runtime.ProcError)
// anywhere in a line: "rank 1 on host vm failed: ...", "rank 1 on host vm is gone: ...".
var peerFailureText = regexp.MustCompile(`\brank (\d+) on host \S+ (?:failed|is gone)[: ]`)

// panicWatch finds the first Go crash in a stream of stderr chunks, and whether the rank
// printed the runtime's text of another rank's failure (a rank that exits after that is
// a consequence of the failure, not its cause). write is called by the rank's stderr
// pump; first and sawPeerFailure by the rank's waiter, possibly while the pump still runs
// (wait gives the output a bounded time to drain); mu guards the fields below it.
type panicWatch struct {
	rank int // the rank whose stderr this is

	mu        sync.Mutex
	line      []byte // the current line so far, at most maxPanicLine bytes
	long      bool   // the current line is longer than line holds
	pending   string // a header line waiting for its trace
	needTrace bool   // pending is a signal header, which always has a trace
	clean     bool   // every line since pending was a header's tail
	since     int    // lines seen since pending
	found     string // the first line of the first crash, once its trace has started
	peerFail  bool   // a line named another rank's failure, before any crash
}

// write looks at the next chunk of the stream.
func (w *panicWatch) write(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.found != "" || w.peerFail {
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if room := maxPanicLine - len(w.line); len(chunk) > room {
			chunk, w.long = chunk[:room], true
		}
		w.line = append(w.line, chunk...)
		if i < 0 {
			return
		}
		w.endLine()
		if w.found != "" || w.peerFail {
			return
		}
		b = b[i+1:]
	}
}

// endLine judges the line just completed.
func (w *panicWatch) endLine() {
	line := string(bytes.TrimSuffix(w.line, []byte{'\r'}))
	if w.long {
		line += "..."
	}
	w.line, w.long = w.line[:0], false
	if m := peerFailureText.FindStringSubmatch(line); m != nil && m[1] != strconv.Itoa(w.rank) {
		w.peerFail = true
		return
	}
	switch {
	case w.pending != "" && traceLine.MatchString(line):
		w.found = w.pending
	case (w.pending == "" || !w.clean) && crashHeader(line):
		// A header after a false start (its tail broken by other output) starts afresh.
		w.pending, w.needTrace, w.clean, w.since = line, signalHeader.MatchString(line), true, 0
	case w.pending != "":
		w.since++
		w.clean = w.clean && headerTail(line)
		if w.since > panicWindow {
			w.pending = ""
		}
	}
}

// crashHeader reports whether line is the first line of a Go crash.
func crashHeader(line string) bool {
	return strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") ||
		signalHeader.MatchString(line)
}

// headerTail reports whether line may follow a crash header before its trace: a
// continuation of a panic's value or a nested panic (tab-indented), the "[signal ...]"
// line, a signal header's "PC=..." line, or the blank line before the trace.
func headerTail(line string) bool {
	return line == "" || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "[signal ") ||
		strings.HasPrefix(line, "PC=")
}

// sawPeerFailure reports whether the rank printed another rank's failure before any
// crash of its own.
func (w *panicWatch) sawPeerFailure() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peerFail
}

// first returns the first line of the first Go crash seen, or "". Called once the rank
// has ended: a panic or fatal error header without a trace counts when nothing but its
// tail followed it (GOTRACEBACK=none), which holds only at the end of the stream.
func (w *panicWatch) first() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.found != "" || w.pending == "" || w.needTrace || !w.clean {
		return w.found
	}
	if len(w.line) > 0 && !headerTail(string(w.line)) { // an unfinished last line
		return ""
	}
	return w.pending
}
