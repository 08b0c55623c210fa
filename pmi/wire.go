package pmi

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ProtocolVersion is the version of gorma's extensions to the PMI-1 wire (gorma-init,
// gorma-event, rank= on get, id= on every request, gorma-spawn); the agent refuses a gorma
// client of another version. Version 3 adds gorma-spawn.
const ProtocolVersion = 3

// MaxLine bounds a protocol line in bytes, newline excluded: the PMI-1 codec's bound.
const MaxLine = MaxSimpleLine

// Errors.
var (
	ErrNotFound = errors.New("pmi: key not found")
	ErrClosed   = errors.New("pmi: connection closed")
	ErrProtocol = errors.New("pmi: protocol error")
	ErrAborted  = errors.New("pmi: job aborted")
)

// The limits the agent announces in its PMI-1 maxes answer: Hydra's, so that an MPI
// library splits its values as it does under mpiexec.hydra.
const (
	KVSNameMax = 256
	KeyLenMax  = 64
	ValLenMax  = 1024
)

// The wire's command names. A request is answered by the command paired with it (PMI-1's
// names); abort has no answer on a PMI-1 connection (the process manager ends the rank).
const (
	cmdInit       = "init"
	cmdMaxes      = "get_maxes"
	cmdAppnum     = "get_appnum"
	cmdKVSName    = "get_my_kvsname"
	cmdUniverse   = "get_universe_size"
	cmdPut        = "put"
	cmdGet        = "get"
	cmdBarrier    = "barrier_in"
	cmdAbort      = "abort"
	cmdFinalize   = "finalize"
	cmdPublish    = "publish_name"
	cmdUnpublish  = "unpublish_name"
	cmdLookup     = "lookup_name"
	cmdSpawn      = "spawn"
	cmdGormaInit  = "gorma-init"   // gorma: rank, job, version; the answer carries size and the job secret
	cmdEvent      = "gorma-event"  // gorma: pushed by the agent, only to gorma-init connections
	cmdReport     = "gorma-report" // gorma: a rank's answer to a report event (what it is blocked in)
	cmdGormaSpawn = "gorma-spawn"  // gorma: start n new ranks of the job; the answer carries the first's rank
	cmdError      = "error"        // the answer to a request the agent cannot name
)

var replyTo = map[string]string{
	cmdInit:       "response_to_init",
	cmdMaxes:      "maxes",
	cmdAppnum:     "appnum",
	cmdKVSName:    "my_kvsname",
	cmdUniverse:   "universe_size",
	cmdPut:        "put_result",
	cmdGet:        "get_result",
	cmdBarrier:    "barrier_out",
	cmdAbort:      "abort_ack", // gorma clients only
	cmdFinalize:   "finalize_ack",
	cmdPublish:    "publish_result",
	cmdUnpublish:  "unpublish_result",
	cmdLookup:     "lookup_result",
	cmdSpawn:      "spawn_result",
	cmdGormaInit:  "gorma-init_ack",
	cmdGormaSpawn: "gorma-spawn_ack",
}

// msg is one protocol line: cmd plus fields, values as they travel (not unescaped).
type msg map[string]string

// kv is an ordered field list for a line the agent or a gorma client writes: PMI-1
// answers keep the order Hydra writes them in.
type kv []string

// line formats cmd and the pairs of f as one line with its newline.
func line(cmd string, f kv) string {
	var b strings.Builder
	b.WriteString("cmd=" + cmd)
	for i := 0; i+1 < len(f); i += 2 {
		b.WriteString(" " + f[i] + "=" + f[i+1])
	}
	b.WriteByte('\n')
	return b.String()
}

// text makes s a PMI value: percent-encoded (url.QueryEscape), so it has no space, no '='
// and no byte a PMI-1 parser would choke on. gorma's own fields (messages, causes, hosts)
// travel this way; untext reverses it.
func text(s string) string { return url.QueryEscape(s) }

// textList is the values of l, each as text, joined by commas.
func textList(l []string) string {
	var b strings.Builder
	for i, s := range l {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(text(s))
	}
	return b.String()
}

func untext(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// token makes s a PMI-1 message value for an MPI library's parser, which unescapes
// nothing: spaces and '=' become '_' (as Hydra's "key_K_not_found").
func token(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == '=' || r > '~' {
			return '_'
		}
		return r
	}, s)
}

// parseLine parses one line with the PMI-1 codec (ParseSimpleLine) into its fields,
// values as they travel: the first of a repeated key is kept.
func parseLine(s string) (msg, error) {
	l, err := ParseSimpleLine(s)
	if err != nil {
		return nil, err
	}
	m := make(msg, len(l.Fields)+1)
	m["cmd"] = l.Cmd
	for _, f := range l.Fields {
		if _, dup := m[f.Key]; !dup && f.Key != "cmd" {
			m[f.Key] = f.Value
		}
	}
	return m, nil
}

func newReader(r interface{ Read([]byte) (int, error) }) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxLine+1)
	return sc
}

func (m msg) int(key string) (int, error) {
	n, err := strconv.Atoi(m[key])
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q is not an integer", ErrProtocol, key, Truncate(m[key]))
	}
	return n, nil
}

func (m msg) hex(key string) ([]byte, error) {
	b, err := hex.DecodeString(m[key])
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not hex: %v", ErrProtocol, key, err)
	}
	return b, nil
}

// failed reports whether an answer carries a non-zero rc (PMI-1's error form) or is an
// error line.
func (m msg) failed() bool {
	rc, ok := m["rc"]
	return m["cmd"] == cmdError || ok && rc != "0"
}

// remoteError turns a failed answer (rc != 0, with code= and msg=) into an error.
func (m msg) remoteError() error {
	text := untext(m["msg"])
	switch m["code"] {
	case "notfound":
		return newRemoteError(ErrNotFound, text)
	case "aborted":
		return newRemoteError(ErrAborted, text)
	case "refused":
		return newRemoteError(ErrRefused, text)
	}
	code := m["code"]
	if code == "" {
		code = "rc=" + m["rc"]
	}
	return fmt.Errorf("pmi: agent refused: %s (%s)", strings.TrimPrefix(text, "pmi: "), code)
}

// remoteError is an error the agent answered with: the agent's text, which already
// begins with the sentinel's (the server sends err.Error()), matching the sentinel.
type remoteError struct {
	text     string
	sentinel error
}

func newRemoteError(sentinel error, text string) *remoteError {
	if !strings.HasPrefix(text, sentinel.Error()) { // an agent that sent only the detail
		text = sentinel.Error() + ": " + text
	}
	return &remoteError{text: text, sentinel: sentinel}
}

func (e *remoteError) Error() string { return e.text }
func (e *remoteError) Unwrap() error { return e.sentinel }

// opError is a request that failed on this side: "pmi: OP: cause", without the cause's
// own "pmi: " prefix (ErrClosed and the like carry one).
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	return "pmi: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "pmi: ")
}
func (e *opError) Unwrap() error { return e.err }

// errorCode is the code= of a gorma client's failed answer.
func errorCode(err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return "notfound"
	case errors.Is(err, ErrAborted):
		return "aborted"
	case errors.Is(err, ErrProtocol):
		return "protocol"
	case errors.Is(err, ErrRefused):
		return "refused"
	}
	return "failed"
}
