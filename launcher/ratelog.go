package launcher

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// summaryEvery is the interval of a rateLog's summary lines.
const summaryEvery = 10 * time.Second

// logKind is one kind of event that strangers can cause in any number (a refused control
// connection, a gossip packet that fails to decrypt). Its two lines: first for the first
// event of a quiet period, summary for the events of each interval after it. first takes
// the event's detail; summary the count, the interval and the last event's detail.
type logKind struct {
	first   string // e.g. "refused control connection %s"
	summary string // e.g. "refused %d control connections in %v (last %s)"
}

// rateLog writes the first event of a kind at once, then at most one line per interval
// per kind: a summary of the events of that interval, if any. A kind whose interval
// passed without an event is quiet again: its next event is written at once.
//
// note may be called from any goroutine. write is called with mu held, from note's
// goroutine or from a timer's; flush writes what is pending and stops the timers. A
// timer left running after the last note ends after at most two intervals.
type rateLog struct {
	every time.Duration
	write func(line string) // called with mu held

	mu    sync.Mutex
	kinds map[*logKind]*kindCount
}

// kindCount is a kind's interval under way.
type kindCount struct {
	n     int    // events since the last line
	last  string // the latest event's detail
	timer *time.Timer
}

func newRateLog(every time.Duration, write func(line string)) *rateLog {
	return &rateLog{every: every, write: write, kinds: make(map[*logKind]*kindCount)}
}

// note records an event of kind k; detail names it ("from 10.0.0.3:4455: bad hello").
func (r *rateLog) note(k *logKind, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kc := r.kinds[k]; kc != nil {
		kc.n++
		kc.last = detail
		return
	}
	r.write(fmt.Sprintf(k.first, detail))
	r.kinds[k] = &kindCount{timer: time.AfterFunc(r.every, func() { r.tick(k) })}
}

// tick ends an interval of k: it writes the interval's summary and starts the next one,
// or, after a quiet interval, forgets k.
func (r *rateLog) tick(k *logKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kc := r.kinds[k]
	if kc == nil {
		return // flushed
	}
	if kc.n == 0 {
		delete(r.kinds, k)
		return
	}
	r.write(fmt.Sprintf(k.summary, kc.n, r.every, kc.last))
	kc.n, kc.last = 0, ""
	kc.timer.Reset(r.every)
}

// flush writes the summaries of the intervals under way and stops their timers.
func (r *rateLog) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, kc := range r.kinds {
		kc.timer.Stop()
		if kc.n > 0 {
			r.write(fmt.Sprintf(k.summary, kc.n, r.every, kc.last))
		}
		delete(r.kinds, k)
	}
}

// The control listener's kinds, logged by an Agent.
var (
	logRefused = &logKind{first: "refused control connection %s",
		summary: "refused %d control connections in %v (last %s)"}
	logShed = &logKind{first: "dropped control connection %s",
		summary: "dropped %d control connections in %v (last %s)"}
	logAcceptFailed = &logKind{first: "control listener: %s",
		summary: "control listener: %d accept errors in %v (last: %s)"}
)

// The kinds of memberlist's lines that strangers cause, one per packet, stream or
// failed accept, which gossipLog summarises.
var (
	logGossipPacket = &logKind{first: "dropped gossip packet %s",
		summary: "dropped %d gossip packets in %v (last %s)"}
	logGossipStream = &logKind{first: "dropped gossip stream %s",
		summary: "dropped %d gossip streams in %v (last %s)"}
	logGossipAccept = &logKind{first: "gossip listener: %s",
		summary: "gossip listener: %d accept errors in %v (last: %s)"}
	logGossipShed = &logKind{first: "gossip listener: dropped stream %s",
		summary: "gossip listener: dropped %d streams past the bound in %v (last %s)"}
)

// gossipKinds maps a fragment of memberlist's (v0.7) log lines to the kind it
// summarises under. The lines of its packet and stream handlers for input that fails
// before authentication (truncated, unlabelled, undecryptable or of an unknown type),
// and its TCP accept loop's errors. The stream fragments are tried first.
var gossipKinds = []struct {
	frag string
	kind *logKind
}{
	{"stream label header", logGossipStream},
	{"stream with unacceptable label", logGossipStream},
	{"stream has been truncated", logGossipStream},
	{"memberlist: failed to receive: ", logGossipStream},
	{"memberlist: Failed to send error: ", logGossipStream},
	{"memberlist: Received invalid msgType", logGossipStream},
	{"Error accepting TCP connection", logGossipAccept},
	{"packet label header", logGossipPacket},
	{"packet with unacceptable label", logGossipPacket},
	{"packet has been truncated", logGossipPacket},
	{"label header cannot be empty", logGossipPacket},
	{"Decrypt packet failed", logGossipPacket},
	{"invalid checksum for UDP packet", logGossipPacket},
	{"missing message type byte", logGossipPacket},
	{") not supported from=", logGossipPacket},
	{"UDP packet too short", logGossipPacket},
	{"Error reading UDP packet", logGossipPacket},
	{"Failed to decode compound request", logGossipPacket},
	{"Compound request had", logGossipPacket},
}

// gossipLog is memberlist's log output: it passes memberlist's lines to w, except those
// a stranger's packets, streams or connections cause, which it summarises (rateLog).
// memberlist writes whole lines, each prefixed by its logger with the date and time.
type gossipLog struct {
	w  io.Writer
	rl *rateLog
}

// newGossipLog returns memberlist's log output, writing to w.
func newGossipLog(w io.Writer) *gossipLog {
	g := &gossipLog{w: w}
	g.rl = newRateLog(summaryEvery, func(line string) {
		fmt.Fprintf(w, "%s [WARN] memberlist: %s\n", time.Now().Format("2006/01/02 15:04:05"), line)
	})
	return g
}

func (g *gossipLog) Write(p []byte) (int, error) {
	if k, detail := classifyGossip(string(bytes.TrimRight(p, "\n"))); k != nil {
		g.rl.note(k, detail)
		return len(p), nil
	}
	g.rl.mu.Lock() // one writer at a time with the summaries
	defer g.rl.mu.Unlock()
	return g.w.Write(p)
}

// classifyGossip returns the kind of a memberlist log line that a stranger causes, and
// its detail ("from ADDR: message"), or nil.
func classifyGossip(line string) (*logKind, string) {
	if strings.Contains(line, "[DEBUG]") {
		return nil, ""
	}
	var k *logKind
	for _, g := range gossipKinds {
		if strings.Contains(line, g.frag) {
			k = g.kind
			break
		}
	}
	if k == nil {
		return nil, ""
	}
	msg := line
	if _, m, ok := strings.Cut(line, "memberlist: "); ok {
		msg = m
	}
	from := ""
	if i := strings.LastIndex(msg, " from="); i >= 0 {
		from, msg = msg[i+len(" from="):], strings.TrimSuffix(msg[:i], ":")
	}
	if k == logGossipAccept {
		return k, msg
	}
	if from == "" {
		from = "an unknown address"
	}
	return k, "from " + from + ": " + msg
}
