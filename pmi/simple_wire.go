package pmi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

// The PMI simple wire, both versions, as every PMI-1 process manager (MPICH's Hydra, Slurm,
// Flux) and MPICH's own clients speak it. PMI-1 is lines: "cmd=NAME key=value ...\n".
// PMI-2 is frames: six ASCII characters holding the body's length in decimal, then
// "cmd=NAME;key=value;...;". design.md gives the rules and where they come from.

// MaxSimpleLine bounds a PMI-1 line that ParseSimpleLine and SimpleReader accept, newline
// excluded. Requests to a foreign server stay within MaxSimpleRequest.
const MaxSimpleLine = 64 << 10

// MaxSimpleRequest is the longest PMI-1 request line, newline included, that every known
// server reads whole: MPICH's clients and Slurm's step daemon read a line into 1024 bytes.
const MaxSimpleRequest = 1024

// MaxFrame bounds the body of a PMI-2 frame that ParseFrame and ReadFrame accept.
const MaxFrame = 64 << 10

// frameLenDigits is the width of a PMI-2 frame's length prefix.
const frameLenDigits = 6

// ErrLineTooLong is a PMI-1 line or PMI-2 frame over its bound (errors.Is ErrProtocol too).
var ErrLineTooLong = fmt.Errorf("%w: line too long", ErrProtocol)

// Field is one key=value pair of a PMI line or frame.
type Field struct{ Key, Value string }

// SimpleLine is one parsed PMI-1 line: its command and its other fields in wire order.
type SimpleLine struct {
	Cmd    string
	Fields []Field
	Raw    string // the line as received, without its newline
}

// Get returns the value of the first field named key.
func (l SimpleLine) Get(key string) (string, bool) { return getField(l.Fields, key) }

// Value returns the value of the first field named key, "" when absent.
func (l SimpleLine) Value(key string) string { v, _ := l.Get(key); return v }

// Frame is one parsed PMI-2 frame: its command and its other fields in wire order.
type Frame struct {
	Cmd    string
	Fields []Field
	Raw    string // the body as received, without its length prefix
}

// Get returns the value of the first field named key.
func (f Frame) Get(key string) (string, bool) { return getField(f.Fields, key) }

// Value returns the value of the first field named key, "" when absent.
func (f Frame) Value(key string) string { v, _ := f.Get(key); return v }

func getField(fs []Field, key string) (string, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f.Value, true
		}
	}
	return "", false
}

// ParseSimpleLine parses one PMI-1 line, with or without its trailing newline. It is
// lenient where servers differ and strict where garbage shows: fields may come in any
// order, separated by runs of spaces or tabs. Unknown and repeated keys are kept (Get
// returns the first). A value may be empty and may contain '='. A backslash keeps the next
// character in the value (MPICH escapes spaces so), and the value is kept raw, escapes and
// all. A field without '=' is a key with an empty value. The line must start with cmd=NAME
// and hold only printable ASCII.
func ParseSimpleLine(line string) (SimpleLine, error) {
	line = strings.TrimSuffix(line, "\n")
	line = strings.TrimSuffix(line, "\r")
	if len(line) > MaxSimpleLine {
		return SimpleLine{}, fmt.Errorf("%w: PMI-1 line of %d bytes exceeds %d", ErrLineTooLong, len(line), MaxSimpleLine)
	}
	if err := checkPrintable(line, true); err != nil {
		return SimpleLine{}, err
	}
	toks, err := splitSimple(line)
	if err != nil {
		return SimpleLine{}, err
	}
	l := SimpleLine{Raw: line}
	for i, t := range toks {
		k, v, _ := strings.Cut(t, "=")
		if k == "" {
			return SimpleLine{}, fmt.Errorf("%w: PMI-1 field %q has no key", ErrProtocol, Truncate(t))
		}
		if i == 0 {
			if k != "cmd" || v == "" {
				return SimpleLine{}, fmt.Errorf("%w: PMI-1 line does not start with cmd=NAME: %q", ErrProtocol, Truncate(line))
			}
			l.Cmd = v
			continue
		}
		l.Fields = append(l.Fields, Field{Key: k, Value: v})
	}
	if l.Cmd == "" {
		return SimpleLine{}, fmt.Errorf("%w: empty PMI-1 line", ErrProtocol)
	}
	return l, nil
}

// splitSimple splits a PMI-1 line at unescaped runs of spaces and tabs.
func splitSimple(line string) ([]string, error) {
	var toks []string
	start := -1
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if start >= 0 {
				toks = append(toks, line[start:i])
				start = -1
			}
			continue
		case start < 0:
			start = i
		}
		if c == '\\' {
			if i+1 == len(line) {
				return nil, fmt.Errorf("%w: PMI-1 line ends in a lone backslash: %q", ErrProtocol, Truncate(line))
			}
			i++
		}
	}
	if start >= 0 {
		toks = append(toks, line[start:])
	}
	return toks, nil
}

// checkPrintable rejects bytes outside printable ASCII (tabs allowed when tabs is set).
func checkPrintable(s string, tabs bool) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 || c > 0x7e) && !(tabs && c == '\t') {
			return fmt.Errorf("%w: byte 0x%02x at offset %d is not printable ASCII in %q", ErrProtocol, c, i, Truncate(s))
		}
	}
	return nil
}

// FormatSimpleLine formats a PMI-1 line, newline included, from cmd and key, value pairs
// in order. It is strict, so that every parser in the field reads the line the same:
// keys are letters, digits, '_', '-' and '.'; values are printable ASCII without spaces,
// '=' or backslashes (possibly empty).
func FormatSimpleLine(cmd string, kv ...string) (string, error) {
	if len(kv)%2 != 0 {
		return "", fmt.Errorf("pmi: format PMI-1 %s: odd number of key/value arguments", cmd)
	}
	if !validKey(cmd) {
		return "", fmt.Errorf("pmi: format PMI-1 line: bad command name %q", Truncate(cmd))
	}
	var b strings.Builder
	b.WriteString("cmd=" + cmd)
	for i := 0; i < len(kv); i += 2 {
		k, v := kv[i], kv[i+1]
		if !validKey(k) {
			return "", fmt.Errorf("pmi: format PMI-1 %s: bad key %q", cmd, Truncate(k))
		}
		if err := simpleValueOK(v); err != nil {
			return "", fmt.Errorf("pmi: format PMI-1 %s: value of %s: %w", cmd, k, err)
		}
		b.WriteString(" " + k + "=" + v)
	}
	b.WriteByte('\n')
	return b.String(), nil
}

// simpleValueOK reports why v cannot travel as a PMI-1 value, or nil.
func simpleValueOK(v string) error {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= 0x20 || c > 0x7e || c == '=' || c == '\\' {
			return fmt.Errorf("byte 0x%02x at offset %d (a PMI-1 value is printable ASCII without spaces, '=' or '\\')", c, i)
		}
	}
	return nil
}

// validKey reports whether k is a key (or command name) every PMI parser accepts.
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// SimpleReader reads PMI-1 lines from a stream, each bounded by MaxSimpleLine. A read
// that fails with a timeout (a deadline on the stream) keeps what it had read of the
// line or frame, and the next read of the same kind goes on from there.
type SimpleReader struct {
	br   *bufio.Reader
	held []byte // the start of a line or frame whose read timed out
}

// NewSimpleReader returns a SimpleReader on r. It buffers: read the stream only through it.
func NewSimpleReader(r io.Reader) *SimpleReader {
	return &SimpleReader{br: bufio.NewReaderSize(r, 4096)}
}

// ReadFrame reads a PMI-2 frame from the same stream (after a PMI-2 init line) with the
// package function ReadFrame.
func (r *SimpleReader) ReadFrame() (Frame, error) {
	got := &byteLog{b: r.held}
	held := len(r.held)
	r.held = nil
	f, err := ReadFrame(io.MultiReader(bytes.NewReader(got.b[:held]), io.TeeReader(r.br, got)))
	if timedOut(err) {
		r.held = got.b
	}
	return f, err
}

// byteLog keeps every byte written to it.
type byteLog struct{ b []byte }

func (l *byteLog) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	return len(p), nil
}

// timedOut reports whether err is a stream's timeout, after which the stream goes on.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// ReadLine reads and parses the next line. A stream that ends inside a line returns
// io.ErrUnexpectedEOF, one that ends between lines io.EOF; the other errors wrap
// ErrProtocol.
func (r *SimpleReader) ReadLine() (SimpleLine, error) {
	raw, err := r.readRaw()
	if err != nil {
		return SimpleLine{}, err
	}
	return ParseSimpleLine(raw)
}

func (r *SimpleReader) readRaw() (string, error) {
	buf := r.held
	r.held = nil
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxSimpleLine+1 {
			return "", fmt.Errorf("%w: PMI-1 line exceeds %d bytes: %q", ErrLineTooLong, MaxSimpleLine, Truncate(string(buf)+string(chunk)))
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return string(buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return "", fmt.Errorf("%w after %q", io.ErrUnexpectedEOF, Truncate(string(buf)))
		case timedOut(err):
			r.held = buf
			return "", err
		default:
			return "", err
		}
	}
}

// ParseFrame parses the body of one PMI-2 frame (without its length prefix):
// "cmd=NAME;key=value;...;". Fields may come in any order. Unknown and repeated keys are
// kept (Get returns the first). ";;" inside a value is an escaped ';' (the PMI-2.0
// reference client writes it so; Slurm and newer MPICH never do). The last field's ';'
// may be missing. The body must start with cmd=NAME and hold only printable ASCII.
func ParseFrame(body string) (Frame, error) {
	if len(body) > MaxFrame {
		return Frame{}, fmt.Errorf("%w: PMI-2 frame of %d bytes exceeds %d", ErrLineTooLong, len(body), MaxFrame)
	}
	if err := checkPrintable(body, false); err != nil {
		return Frame{}, err
	}
	f := Frame{Raw: body}
	rest := body
	first := true
	for rest != "" {
		if rest[0] == ';' { // an empty field: a stray separator
			rest = rest[1:]
			continue
		}
		k, afterKey, ok := strings.Cut(rest, "=")
		if !ok || k == "" || strings.ContainsRune(k, ';') {
			return Frame{}, fmt.Errorf("%w: PMI-2 field %q is not key=value;", ErrProtocol, Truncate(rest))
		}
		v, next := frameValue(afterKey)
		rest = next
		if first {
			if k != "cmd" || v == "" {
				return Frame{}, fmt.Errorf("%w: PMI-2 frame does not start with cmd=NAME: %q", ErrProtocol, Truncate(body))
			}
			f.Cmd, first = v, false
			continue
		}
		f.Fields = append(f.Fields, Field{Key: k, Value: v})
	}
	if f.Cmd == "" {
		return Frame{}, fmt.Errorf("%w: empty PMI-2 frame", ErrProtocol)
	}
	return f, nil
}

// frameValue reads a value up to its terminating ';' (or the end), unescaping ";;".
func frameValue(s string) (value, rest string) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != ';' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == ';' && i > 0 {
			b.WriteByte(';')
			i++
			continue
		}
		return b.String(), s[i+1:]
	}
	return b.String(), ""
}

// FormatFrame formats a PMI-2 frame, length prefix included, from cmd and key, value
// pairs in order. Keys are as for FormatSimpleLine; values are non-empty printable ASCII
// without ';' (spaces and '=' are fine), so that no parser needs an escape.
func FormatFrame(cmd string, kv ...string) (string, error) {
	if len(kv)%2 != 0 {
		return "", fmt.Errorf("pmi: format PMI-2 %s: odd number of key/value arguments", cmd)
	}
	if !validKey(cmd) {
		return "", fmt.Errorf("pmi: format PMI-2 frame: bad command name %q", Truncate(cmd))
	}
	var b strings.Builder
	b.WriteString("cmd=" + cmd + ";")
	for i := 0; i < len(kv); i += 2 {
		k, v := kv[i], kv[i+1]
		if !validKey(k) {
			return "", fmt.Errorf("pmi: format PMI-2 %s: bad key %q", cmd, Truncate(k))
		}
		if err := frameValueOK(v); err != nil {
			return "", fmt.Errorf("pmi: format PMI-2 %s: value of %s: %w", cmd, k, err)
		}
		b.WriteString(k + "=" + v + ";")
	}
	if b.Len() > MaxFrame {
		return "", fmt.Errorf("pmi: format PMI-2 %s: frame of %d bytes exceeds %d", cmd, b.Len(), MaxFrame)
	}
	return fmt.Sprintf("%-*d", frameLenDigits, b.Len()) + b.String(), nil
}

func frameValueOK(v string) error {
	if v == "" {
		return errors.New("empty (newer MPICH parsers reject an empty PMI-2 value)")
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c > 0x7e || c == ';' {
			return fmt.Errorf("byte 0x%02x at offset %d (a PMI-2 value is printable ASCII without ';')", c, i)
		}
	}
	return nil
}

// ReadFrame reads one PMI-2 frame from r: the six-character length, then the body. The
// length is decimal, padded with spaces on either side (Slurm pads on the right, newer
// MPICH on the left). A stream that ends before the frame does returns io.EOF (nothing
// read) or io.ErrUnexpectedEOF; a bad length or body wraps ErrProtocol.
func ReadFrame(r io.Reader) (Frame, error) {
	var lenBuf [frameLenDigits]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return Frame{}, err
	}
	n, err := parseFrameLen(string(lenBuf[:]))
	if err != nil {
		return Frame{}, err
	}
	body := make([]byte, n)
	if got, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, fmt.Errorf("%w after %d of %d bytes of a PMI-2 frame", err, got, n)
	}
	return ParseFrame(string(body))
}

// parseFrameLen parses a PMI-2 length prefix.
func parseFrameLen(s string) (int, error) {
	t := strings.Trim(s, " ")
	n, err := strconv.Atoi(t)
	if err != nil || t == "" || t[0] == '+' || t[0] == '-' {
		return 0, fmt.Errorf("%w: PMI-2 frame length %q is not a decimal number", ErrProtocol, s)
	}
	if n <= 0 || n > MaxFrame {
		return 0, fmt.Errorf("%w: PMI-2 frame length %d is outside 1..%d", ErrLineTooLong, n, MaxFrame)
	}
	return n, nil
}

// Truncate shortens s for an error message: at most 80 bytes, with "..." when cut.
func Truncate(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
