package pmi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Environment of a rank started by a foreign process manager (Hydra, Slurm, Flux).
const (
	EnvPMIFD    = "PMI_FD"    // inherited socket to the PMI server
	EnvPMIPort  = "PMI_PORT"  // host:port of the PMI server, when there is no PMI_FD
	EnvPMIID    = "PMI_ID"    // this rank's id for the PMI_PORT handshake
	EnvPMIRank  = "PMI_RANK"  // this rank
	EnvPMISize  = "PMI_SIZE"  // ranks in the job
	EnvPMIJobID = "PMI_JOBID" // the job (Slurm: job.step), PMI-2 fullinit's pmijobid
	EnvPMIWire  = "GORMA_PMI" // auto, 1 or 2: the wire a gorma rank speaks to a foreign server
)

// Wire names, as Foreign.Version reports them and errors name them.
const (
	wire1 = "PMI-1"
	wire2 = "PMI-2"
)

// Detect reports whether getenv names a process manager's server: a PMI-1/PMI-2 server
// (PMI_FD, or PMI_PORT with PMI_ID; [Connect]) or a PMIx server (PMIX_SERVER_URI*;
// [ConnectPMIx]). A PMI_PORT without PMI_ID counts, so that Connect reports it instead
// of the rank silently running alone.
func Detect(getenv func(string) string) bool {
	return DetectSimple(getenv) || DetectPMIx(getenv)
}

// DetectSimple reports whether getenv names a PMI-1/PMI-2 server (PMI_FD or PMI_PORT).
func DetectSimple(getenv func(string) string) bool {
	return getenv(EnvPMIFD) != "" || getenv(EnvPMIPort) != ""
}

// Foreign is a session with a foreign PMI server, over PMI-1 or PMI-2. It implements
// Session. Requests are lock-step, one at a time under a mutex; every wait honours its
// context. A Put or Get abandoned by its context leaves its answer owed: the server
// answers it at once, and the next request reads that answer first. Any other request
// abandoned (a Fence, whose answer waits for the other ranks), or one answered with
// garbage, ends the connection: its later requests fail at once. Abort does not wait for a
// request in flight.
type Foreign struct {
	wire    string // wire1 or wire2
	version string // "1.1" or "2.0"
	rank    int
	size    int
	appnum  int
	kvsname string
	nodes   []int // from PMI_process_mapping; nil when the server has none
	keyMax  int   // longest key the server takes, in bytes
	valMax  int   // longest value the server takes, in bytes

	conn      net.Conn
	rd        *SimpleReader // PMI-1 lines, then PMI-2 frames
	closeOnce sync.Once

	mu    sync.Mutex   // held for a whole request and its answer
	ended error        // the failure that ended the connection, nil while requests go on
	owed  func() error // reads the answer to a prompt request its context abandoned; nil when none is owed
}

// Version returns the PMI version spoken: "1.1" or "2.0".
func (f *Foreign) Version() string { return f.version }

// KVSName returns the PMI-1 kvsname or the PMI-2 jobid.
func (f *Foreign) KVSName() string { return f.kvsname }

// AppNum returns the application number (-1 when the server does not say).
func (f *Foreign) AppNum() int { return f.appnum }

// Rank returns this rank.
func (f *Foreign) Rank() int { return f.rank }

// Size returns the number of ranks in the job.
func (f *Foreign) Size() int { return f.size }

// Nodes returns the node index (0..nodes-1) of every rank, from PMI_process_mapping; nil,
// nil when the server has no such key. Connect reads the mapping, so Nodes makes no
// request.
func (f *Foreign) Nodes(ctx context.Context) ([]int, error) {
	if f.nodes == nil {
		return nil, nil
	}
	return append([]int(nil), f.nodes...), nil
}

// ForeignError is a request to a foreign PMI server that failed.
type ForeignError struct {
	Wire string // "PMI-1" or "PMI-2"
	Op   string // the request, e.g. "barrier_in"
	Rank int    // this rank, -1 when not known yet
	Got  string // what the server answered, truncated; "" when nothing came
	Err  error  // ErrProtocol, ErrClosed, ErrRefused, ErrNotFound, a context error, or an I/O error
}

func (e *ForeignError) Error() string {
	s := "pmi: " + e.Wire + " " + e.Op
	if e.Rank >= 0 {
		s += " (rank " + strconv.Itoa(e.Rank) + ")"
	}
	if e.Got != "" {
		s += fmt.Sprintf(": server answered %q", e.Got)
	}
	return s + ": " + strings.TrimPrefix(e.Err.Error(), "pmi: ")
}

func (e *ForeignError) Unwrap() error { return e.Err }

func (f *Foreign) fail(op, got string, err error) *ForeignError {
	return &ForeignError{Wire: f.wire, Op: op, Rank: f.rank, Got: Truncate(got), Err: err}
}

// Connect connects to the PMI server getenv names and initializes: the wire is chosen by
// GORMA_PMI (auto: PMI-1 1.1, going on in PMI-2 when the server refuses PMI-1 and offers
// 2.0 on the same connection; "1"; "2"). Rank and size come from the server (PMI-1:
// PMI_RANK and PMI_SIZE, or the PMI_PORT handshake; PMI-2: fullinit) and are checked
// against PMI_RANK and PMI_SIZE when set, and against PMI_process_mapping. Every error
// names PMI and the variable or command at fault; ctx bounds every wait. It returns
// ErrNoPMI when DetectSimple is false.
func Connect(ctx context.Context, getenv func(string) string) (*Foreign, error) {
	e, err := readPMIEnv(getenv)
	if err != nil {
		return nil, err
	}
	f := &Foreign{wire: wire1, rank: e.rank, size: e.size, appnum: -1}
	if e.mode == "2" {
		f.wire = wire2
	}
	if err := f.open(ctx, e); err != nil {
		return nil, err
	}
	if err := f.start(ctx, e); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// start runs the handshake of the chosen wire.
func (f *Foreign) start(ctx context.Context, e pmiEnv) error {
	if e.mode == "2" {
		if err := f.initWire(ctx, 2); err != nil {
			return err
		}
		return f.start2(ctx, e)
	}
	err := f.initWire(ctx, 1)
	var fall *fallbackError
	if errors.As(err, &fall) {
		if e.mode != "auto" {
			return fmt.Errorf("%w (%s=1 forbids PMI-2; unset it or set auto)", fall.err, EnvPMIWire)
		}
		f.wire = wire2
		return f.start2(ctx, e)
	}
	if err != nil {
		return err
	}
	return f.start1(ctx, e)
}

// pmiEnv is what Connect reads from the environment; rank and size are -1 when unset.
type pmiEnv struct {
	fd         int // -1 without PMI_FD
	port, id   string
	rank, size int
	pmiRank    string // what PMI-2 fullinit sends as pmirank: PMI_ID, else PMI_RANK
	jobid      string
	mode       string // "auto", "1" or "2"
}

func readPMIEnv(getenv func(string) string) (pmiEnv, error) {
	e := pmiEnv{fd: -1, rank: -1, size: -1, port: getenv(EnvPMIPort), id: getenv(EnvPMIID), jobid: getenv(EnvPMIJobID)}
	if !DetectSimple(getenv) {
		return e, ErrNoPMI
	}
	bad := func(name, v, want string) error {
		return fmt.Errorf("pmi: %s=%q: want %s (the process manager sets it; do not set PMI_* by hand)", name, v, want)
	}
	num := func(name string, min int) (int, error) {
		v := getenv(name)
		if v == "" {
			return -1, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			return -1, bad(name, v, "an integer >= "+strconv.Itoa(min))
		}
		return n, nil
	}
	var err error
	if e.fd, err = num(EnvPMIFD, 0); err != nil {
		return e, err
	}
	if e.rank, err = num(EnvPMIRank, 0); err != nil {
		return e, err
	}
	if e.size, err = num(EnvPMISize, 1); err != nil {
		return e, err
	}
	switch e.mode = getenv(EnvPMIWire); e.mode {
	case "":
		e.mode = "auto"
	case "auto", "1", "2":
	default:
		return e, bad(EnvPMIWire, e.mode, "auto, 1 or 2")
	}
	if e.rank >= 0 && e.size > 0 && e.rank >= e.size {
		return e, fmt.Errorf("pmi: %s=%d is not below %s=%d", EnvPMIRank, e.rank, EnvPMISize, e.size)
	}
	if e.fd < 0 {
		if _, _, err := net.SplitHostPort(e.port); err != nil {
			return e, bad(EnvPMIPort, e.port, "host:port")
		}
		if _, err := strconv.Atoi(e.id); err != nil {
			return e, bad(EnvPMIID, e.id, "an integer id beside "+EnvPMIPort)
		}
	}
	e.pmiRank = e.id
	if e.pmiRank == "" && e.rank >= 0 {
		e.pmiRank = strconv.Itoa(e.rank)
	}
	return e, nil
}

// open makes the connection: the inherited PMI_FD, or a dial to PMI_PORT and its
// handshake.
func (f *Foreign) open(ctx context.Context, e pmiEnv) error {
	if e.fd < 0 {
		return f.dialPort(ctx, e)
	}
	if e.mode != "2" && (e.rank < 0 || e.size < 0) { // PMI-1 learns them only from here
		name := EnvPMIRank
		if e.rank >= 0 {
			name = EnvPMISize
		}
		return fmt.Errorf("pmi: %s=%d is set but %s is not (the process manager sets both)", EnvPMIFD, e.fd, name)
	}
	file := os.NewFile(uintptr(e.fd), EnvPMIFD)
	conn, err := net.FileConn(file)
	file.Close() // FileConn holds its own descriptor
	if err != nil {
		return fmt.Errorf("pmi: %s=%d is not a usable socket: %w", EnvPMIFD, e.fd, err)
	}
	f.setConn(conn)
	return nil
}

func (f *Foreign) setConn(conn net.Conn) {
	f.conn = conn
	f.rd = NewSimpleReader(conn)
}

// Close closes the connection (after Finalize, or to give up). It is idempotent.
func (f *Foreign) Close() error {
	f.closeOnce.Do(func() { f.conn.Close() })
	return nil
}

// longAgo is a deadline in the past: it wakes a blocked read at once.
var longAgo = time.Unix(1, 0)

// roundTrip writes req and runs read for the answer, one request at a time, bounded by
// ctx. An answer still owed to an earlier request is read first. A prompt request
// (promptAnswer) that ctx cuts off after it was sent leaves its answer owed. Any other
// failure ends the connection: in a lock-step protocol an unread or unparsable answer puts
// the two ends out of step for good.
func (f *Foreign) roundTrip(ctx context.Context, op, req string, read func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended != nil {
		return f.fail(op, "", fmt.Errorf("%w: connection unusable since an earlier request failed (%v)", ErrClosed, f.ended))
	}
	if err := ctx.Err(); err != nil {
		return f.fail(op, "", err)
	}
	defer bindDeadline(ctx, f.conn)()
	var err error
	if f.owed != nil {
		if err = f.owed(); err == nil {
			f.owed = nil
		}
	}
	sent := false
	if err == nil {
		if err = f.write(op, req); err == nil {
			sent = true
			err = read()
		}
	}
	if err == nil {
		return nil
	}
	cut := timedOut(err)
	if cut {
		// The connection's deadline is the context's: the context ends at once, if
		// it has not already.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if ctx.Err() != nil {
		err = f.fail(op, "", fmt.Errorf("%w while waiting for the server's answer", ctx.Err()))
	}
	want, prompt := promptAnswer[op]
	switch {
	case cut && !sent && f.owed != nil: // the earlier answer is still owed; req was not sent
	case cut && sent && prompt:
		f.owed = func() error { // the answer, a line or a frame as the wire speaks
			var err error
			if f.wire == wire2 {
				_, err = f.readFrame(op, want)
			} else {
				_, err = f.readLine(op, want)
			}
			return err
		}
	default:
		f.ended = err
	}
	return err
}

// promptAnswer maps the requests that a server answers at once, whatever the other ranks
// do, to their answer's cmd. An answer they are owed is read before the next request's.
var promptAnswer = map[string]string{
	"put": "put_result", "get": "get_result", // PMI-1
	"kvs-put": "kvs-put-response", "kvs-get": "kvs-get-response", // PMI-2
}

// write sends one request in a single write, so that a server reading it with one
// fixed-size read (Slurm) sees it whole.
func (f *Foreign) write(op, req string) error {
	if _, err := io.WriteString(f.conn, req); err != nil {
		return f.fail(op, "", f.ioErr(err))
	}
	return nil
}

// ioErr names a failed read or write: the server hung up, or something else.
func (f *Foreign) ioErr(err error) error {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("%w (by Close on this side)", ErrClosed)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w (the process manager hung up: the job may be ending, or another rank failed)", ErrClosed)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrClosed, err)
}

// readLine reads a PMI-1 answer to op and checks that it is cmd=want.
func (f *Foreign) readLine(op, want string) (SimpleLine, error) {
	l, err := f.rd.ReadLine()
	if err != nil {
		if errors.Is(err, ErrProtocol) {
			return l, f.fail(op, "", fmt.Errorf("%w (want cmd=%s)", err, want))
		}
		return l, f.fail(op, "", f.ioErr(err))
	}
	if l.Cmd != want {
		return l, f.fail(op, l.Raw, fmt.Errorf("%w: want cmd=%s", ErrProtocol, want))
	}
	return l, nil
}

// readFrame reads a PMI-2 answer to op and checks that it is cmd=want.
func (f *Foreign) readFrame(op, want string) (Frame, error) {
	fr, err := f.rd.ReadFrame()
	if err != nil {
		if errors.Is(err, ErrProtocol) {
			return fr, f.fail(op, "", fmt.Errorf("%w (want cmd=%s)", err, want))
		}
		return fr, f.fail(op, "", f.ioErr(err))
	}
	if fr.Cmd != want {
		return fr, f.fail(op, fr.Raw, fmt.Errorf("%w: want cmd=%s", ErrProtocol, want))
	}
	return fr, nil
}

// refusal returns the ErrRefused error of an answer whose rc is set and not 0, or nil.
// PMI-1 servers put the reason in msg=, PMI-2 servers in errmsg=.
func refusal(get func(string) (string, bool)) error {
	rc, ok := get("rc")
	if !ok || rc == "0" {
		return nil
	}
	msg, _ := get("msg")
	if m, ok := get("errmsg"); ok && msg == "" {
		msg = m
	}
	if msg == "" {
		return fmt.Errorf("%w: rc=%s", ErrRefused, rc)
	}
	return fmt.Errorf("%w: rc=%s: %s", ErrRefused, rc, msg)
}

// intField reads a non-negative integer field of an answer (min may be -1).
func intField(get func(string) (string, bool), key string, min int) (int, error) {
	v, ok := get(key)
	if !ok {
		return 0, fmt.Errorf("%w: answer without %s=", ErrProtocol, key)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		return 0, fmt.Errorf("%w: %s=%q is not an integer >= %d", ErrProtocol, key, v, min)
	}
	return n, nil
}

// checkPlace checks the rank and size the server gave against PMI_RANK and PMI_SIZE,
// and takes them.
func (f *Foreign) checkPlace(rank, size int, e pmiEnv) error {
	switch {
	case size < 1 || rank < 0 || rank >= size:
		return fmt.Errorf("%w: rank %d of size %d", ErrProtocol, rank, size)
	case e.rank >= 0 && e.rank != rank:
		return fmt.Errorf("%w: the server says rank %d but %s=%d", ErrProtocol, rank, EnvPMIRank, e.rank)
	case e.size >= 0 && e.size != size:
		return fmt.Errorf("%w: the server says size %d but %s=%d", ErrProtocol, size, EnvPMISize, e.size)
	}
	f.rank, f.size = rank, size
	return nil
}

// setMapping parses the PMI_process_mapping value v ("" when absent) for this job.
func (f *Foreign) setMapping(op, v string) error {
	nodes, err := ParseProcessMapping(v, f.size)
	if err != nil {
		return f.fail(op, "", fmt.Errorf("%w: %v (%s=%d)", ErrProtocol, err, EnvPMISize, f.size))
	}
	f.nodes = nodes
	return nil
}

// Put publishes value under key for this rank (see Session).
func (f *Foreign) Put(ctx context.Context, key string, value []byte) error {
	keys, vals, err := f.encode(f.rank, key, value)
	if err != nil {
		return err
	}
	for i := range keys {
		if err := f.put(ctx, keys[i], vals[i]); err != nil {
			return err
		}
	}
	return nil
}

// Get returns what rank put under key before the last Fence (see Session).
func (f *Foreign) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	if rank < 0 || rank >= f.size {
		return nil, fmt.Errorf("pmi: get %q of rank %d: no such rank in a job of %d", key, rank, f.size)
	}
	return f.decode(ctx, rank, key)
}

// Fence is the job-wide barrier that makes earlier Puts visible (see Session).
func (f *Foreign) Fence(ctx context.Context) error {
	if f.wire == wire2 {
		return f.fence2(ctx)
	}
	return f.barrier1(ctx)
}

// Finalize tells the server this rank is done; Close after it.
func (f *Foreign) Finalize(ctx context.Context) error {
	if f.wire == wire2 {
		return f.finalize2(ctx)
	}
	return f.finalize1(ctx)
}

// Abort asks the server to end the job with code. It writes the request at once, even
// while another request waits for its answer, and does not wait for one: the servers
// answer an abort by killing the job. msg is the caller's to print; the PMI-1 abort has
// no room for it.
func (f *Foreign) Abort(code int, msg string) error {
	var req string
	var err error
	if f.wire == wire2 {
		req, err = FormatFrame("abort", "isworld", "TRUE", "exitcode", strconv.Itoa(code), "msg", abortMsg(msg))
	} else {
		req, err = FormatSimpleLine("abort", "exitcode", strconv.Itoa(code))
	}
	if err != nil {
		return f.fail("abort", "", err)
	}
	return f.write("abort", req)
}

// abortMsg makes msg a PMI-2 value: printable, without ';', short.
func abortMsg(msg string) string {
	b := []byte(msg)
	for i, c := range b {
		if c < 0x20 || c > 0x7e || c == ';' {
			b[i] = '_'
		}
	}
	if len(b) > 200 {
		b = b[:200]
	}
	if len(b) == 0 {
		return "abort"
	}
	return string(b)
}

func (f *Foreign) put(ctx context.Context, key, value string) error {
	if f.wire == wire2 {
		return f.put2(ctx, key, value)
	}
	return f.put1(ctx, key, value)
}

// getRaw returns the raw value of a PMI key, or an error wrapping ErrNotFound.
func (f *Foreign) getRaw(ctx context.Context, key string) (string, error) {
	if f.wire == wire2 {
		return f.get2(ctx, key)
	}
	return f.get1(ctx, key)
}

// bindDeadline makes ctx's deadline, and its end, bound conn's reads and writes until the
// returned function runs: a request blocked in I/O fails when ctx ends.
func bindDeadline(ctx context.Context, conn net.Conn) (release func()) {
	dl, _ := ctx.Deadline()
	conn.SetDeadline(dl)
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		conn.SetDeadline(longAgo)
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired
		}
		conn.SetDeadline(time.Time{})
	}
}
