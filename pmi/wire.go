package pmi

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// ProtocolVersion is the version of the line protocol.
const ProtocolVersion = 1

// MaxLine bounds a protocol line in bytes.
const MaxLine = 1 << 20

// Errors.
var (
	ErrNotFound = errors.New("pmi: key not found")
	ErrClosed   = errors.New("pmi: connection closed")
	ErrProtocol = errors.New("pmi: protocol error")
	ErrAborted  = errors.New("pmi: job aborted")
)

// msg is one protocol line: cmd plus fields.
type msg map[string]string

// DecodeLine parses one line (without its newline) into its fields. It rejects lines
// without cmd=, fields without '=', repeated keys, bad escapes and over-long lines.
func DecodeLine(line string) (map[string]string, error) {
	if len(line) > MaxLine {
		return nil, fmt.Errorf("%w: line of %d bytes exceeds %d", ErrProtocol, len(line), MaxLine)
	}
	m := make(map[string]string)
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: field %q is not key=value", ErrProtocol, trunc(f))
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("%w: field %q repeated", ErrProtocol, trunc(k))
		}
		uv, err := url.QueryUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("%w: field %q: %v", ErrProtocol, trunc(k), err)
		}
		m[k] = uv
	}
	if m["cmd"] == "" {
		return nil, fmt.Errorf("%w: line without cmd=", ErrProtocol)
	}
	return m, nil
}

// EncodeLine formats fields as one line with a trailing newline, cmd first and the rest
// sorted, so that DecodeLine(EncodeLine(m)) == m.
func EncodeLine(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "cmd" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("cmd=" + url.QueryEscape(m["cmd"]))
	for _, k := range keys {
		b.WriteString(" " + k + "=" + url.QueryEscape(m[k]))
	}
	b.WriteByte('\n')
	return b.String()
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func newReader(r interface{ Read([]byte) (int, error) }) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxLine+1)
	return sc
}

func (m msg) int(key string) (int, error) {
	n, err := strconv.Atoi(m[key])
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q is not an integer", ErrProtocol, key, m[key])
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

// remoteError turns a cmd=error line into an error.
func (m msg) remoteError() error {
	switch m["code"] {
	case "notfound":
		return newRemoteError(ErrNotFound, m["msg"])
	case "aborted":
		return newRemoteError(ErrAborted, m["msg"])
	}
	return fmt.Errorf("pmi: agent refused: %s (%s)", strings.TrimPrefix(m["msg"], "pmi: "), m["code"])
}

// remoteError is an error the agent answered with: the agent's text, which already
// begins with the sentinel's (errorLine sends err.Error()), matching the sentinel.
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

func errorLine(err error) msg {
	code := "failed"
	switch {
	case errors.Is(err, ErrNotFound):
		code = "notfound"
	case errors.Is(err, ErrAborted):
		code = "aborted"
	case errors.Is(err, ErrProtocol):
		code = "protocol"
	}
	return msg{"cmd": "error", "code": code, "msg": err.Error()}
}
