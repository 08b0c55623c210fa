package pmi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// ProtocolError is a request that broke the protocol: a line the server cannot read or
// parse, an unknown command, a request before init, an init of another PMI version, a
// field out of its bounds. The server answers it with rc=-1 and passes the first one of
// each connection to a Handler that is a ProtocolHandler.
type ProtocolError struct {
	// Rank is the connection's rank. It is -1 on the socket before gorma-init, and for a
	// PMIx connect that is refused: the Handler then finds the rank, if any, by Pid.
	Rank int
	// Pid is the peer's process: SO_PEERCRED on a Unix socket; on a PMIx connection, the
	// child of this process that holds the peer's socket. It is 0 when unknown: on a
	// handed connection, or a PMIx peer that is no child of this process.
	Pid int

	Cmd  string // the request's command; "" for a line without cmd=NAME
	Err  error  // the reason; errors.Is(Err, ErrProtocol)
	Wire string // "PMIx" for the PMIx server; "" for PMI-1 and gorma's own wire
}

// Detail is the error without the rank: "PMI protocol error in cmd=put: key of 80 bytes
// exceeds keylen_max=64".
func (e *ProtocolError) Detail() string {
	if e.Wire != "" {
		return e.Wire + " protocol error in " + e.Cmd + ": " + strings.TrimPrefix(e.Err.Error(), ErrProtocol.Error()+": ")
	}
	in := "a line without cmd=NAME"
	if e.Cmd != "" {
		in = "cmd=" + e.Cmd
	}
	return "PMI protocol error in " + in + ": " + strings.TrimPrefix(e.Err.Error(), ErrProtocol.Error()+": ")
}

func (e *ProtocolError) Error() string {
	if e.Rank < 0 {
		return fmt.Sprintf("pmi: pid %d: %s", e.Pid, e.Detail())
	}
	return fmt.Sprintf("pmi: rank %d: %s", e.Rank, e.Detail())
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// ProtocolHandler is implemented by a Handler that acts on protocol errors (golaunch's
// agent ends the job). An error with rank -1 is a rank's only when Pid is that rank's
// process; any other is a stranger's, which must not touch the job. The server calls it
// from the connection's dispatcher goroutine, before it writes the answer. A Handler
// without it leaves the rank to read the answer.
type ProtocolHandler interface {
	ProtocolError(e *ProtocolError)
}

// request is one message read from a connection: a line, or a line over MaxLine (err).
type request struct {
	raw string // the line without its newline; its first bytes when err is set
	err error  // wraps ErrLineTooLong
}

// lineReader reads newline-terminated lines of at most MaxLine bytes, newline excluded.
type lineReader struct {
	r   *bufio.Reader
	buf []byte
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: bufio.NewReader(r)} }

// next returns the next line. A line over MaxLine returns its first bytes and an error
// that wraps ErrLineTooLong; EOF or a read error in a line drops what was read of it.
func (lr *lineReader) next() (string, error) {
	lr.buf = lr.buf[:0]
	for {
		frag, err := lr.r.ReadSlice('\n')
		lr.buf = append(lr.buf, frag...)
		n := len(lr.buf)
		if err == nil {
			n--
		}
		if n > MaxLine {
			return string(lr.buf[:min(n, 100)]), fmt.Errorf("%w: no newline within %d bytes", ErrLineTooLong, MaxLine)
		}
		switch {
		case err == nil:
			return string(lr.buf[:n]), nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return "", err
		}
	}
}

// lineCmd returns the command a line starts with (cmd=NAME), or "".
func lineCmd(raw string) string {
	rest, ok := strings.CutPrefix(raw, "cmd=")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, " \t\r"); i >= 0 {
		rest = rest[:i]
	}
	if !validKey(rest) {
		return ""
	}
	return rest
}

// parse parses a request line. On a PMI-1 connection a put's value= runs to the end of
// the line, or to the put's next kvsname= or key= field, spaces and '=' included: Open
// MPI pads its base64 with spaces, and Flux's server reads the value so.
func (sc *sconn) parse(raw string) (msg, error) {
	if sc.mode != modePMI1 || lineCmd(raw) != cmdPut {
		return parseLine(raw)
	}
	i := fieldAt(raw, "value")
	if i < 0 {
		return parseLine(raw)
	}
	rest := raw[i+len(" value="):]
	end := len(rest)
	for _, k := range []string{"key", "kvsname"} {
		if j := fieldAt(rest, k); j >= 0 && j < end {
			end = j
		}
	}
	m, err := parseLine(raw[:i] + rest[end:])
	if err != nil {
		return nil, err
	}
	v := strings.TrimSuffix(rest[:end], "\r")
	if err := checkPrintable(v, true); err != nil {
		return nil, err
	}
	m["value"] = v
	return m, nil
}

// fieldAt returns the index of the space or tab before s's first key= field, or -1.
func fieldAt(s, key string) int {
	i, j := strings.Index(s, " "+key+"="), strings.Index(s, "\t"+key+"=")
	if i < 0 || j >= 0 && j < i {
		return j
	}
	return i
}

// peerPID returns the process at the other end of a Unix socket (SO_PEERCRED), or 0.
func peerPID(c net.Conn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	var pid int
	raw.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}
