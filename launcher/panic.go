package launcher

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Recognising a Go panic in a rank's stderr. The Go runtime prints a panic, or a fatal
// error (a deadlock, concurrent map writes), as a first line "panic: <value>" or "fatal
// error: <what>", maybe more lines of the value and a "[signal ...]" line, then a blank
// line and the first goroutine's trace, "goroutine N [running]:", and exits with code 2
// (or dies of SIGABRT with GOTRACEBACK=crash). The agent watches each rank's stderr as it
// forwards it (spawnRank), and the first line of a panic goes to the submitter in the
// rank's exit report (exitMsg.Panic), so that the summary can say "panicked" whatever
// --output-dir does with the text and on whichever host the rank ran.

const (
	// panicWindow is how many lines after a "panic: " line its goroutine trace may start:
	// a multi-line panic value longer than this is not recognised.
	panicWindow = 64
	// maxPanicLine bounds the first line kept for the summary, and the bytes of a line
	// that the watch holds while waiting for its newline.
	maxPanicLine = 512
)

var goroutineLine = regexp.MustCompile(`^goroutine \d+ \[`)

// peerFailureText matches the gorma runtime's text of a peer's failure (runtime.ProcError)
// anywhere in a line: "rank 1 on host vm failed: ...", "rank 1 on host vm is gone: ...".
var peerFailureText = regexp.MustCompile(`\brank (\d+) on host \S+ (?:failed|is gone)[: ]`)

// panicWatch finds the first Go panic in a stream of stderr chunks, and whether the rank
// printed the runtime's text of another rank's failure (a rank that exits after that is
// a consequence of the failure, not its cause). write is called by the rank's stderr
// pump; first and sawPeerFailure by the rank's waiter, possibly while the pump still runs
// (wait gives the output a bounded time to drain); mu guards the fields below it.
type panicWatch struct {
	rank int // the rank whose stderr this is

	mu       sync.Mutex
	line     []byte // the current line so far, at most maxPanicLine bytes
	long     bool   // the current line is longer than line holds
	pending  string // a "panic: " or "fatal error: " line waiting for its goroutine trace
	since    int    // lines seen since pending
	found    string // the first line of the first panic, once its trace has started
	peerFail bool   // a line named another rank's failure, before any panic
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
	case w.pending != "" && goroutineLine.MatchString(line):
		w.found = w.pending
	case w.pending == "" && (strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ")):
		w.pending, w.since = line, 0
	case w.pending != "":
		w.since++
		if w.since > panicWindow {
			w.pending = ""
		}
	}
}

// sawPeerFailure reports whether the rank printed another rank's failure before any
// panic of its own.
func (w *panicWatch) sawPeerFailure() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peerFail
}

// first returns the first line of the first panic seen, or "".
func (w *panicWatch) first() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.found
}
