package pmi

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Info is what the agent tells a rank at init.
type Info struct {
	Size   int
	Secret []byte // per-job secret that authenticates transport connections

	// What a PMI-1 client (an MPI library) asks for; zero values get defaults.
	KVSName        string // the job's key-value space ("kvs_0")
	AppNum         int    // the rank's program among the job's (MPMD: golaunch -n 2 ./a : -n 2 ./b); 0 for one program
	UniverseSize   int    // ranks the job may grow to (Size)
	ProcessMapping string // PMI_process_mapping of the job ([FormatProcessMapping]); "": not served

	// Hosts names the nodes of ProcessMapping, by node index (numbered in order of first
	// appearance, as ParseProcessMapping numbers them): golaunch's agent serves it to
	// gorma-init, so that a rank knows every rank's host without reading a card.
	Hosts []string
}

func (i Info) withDefaults() Info {
	if i.KVSName == "" {
		i.KVSName = "kvs_0"
	}
	if i.UniverseSize <= 0 {
		i.UniverseSize = i.Size
	}
	return i
}

// EventKind tells what an Event reports.
type EventKind int

const (
	ProcFailed  EventKind = iota + 1 // a rank died or exited without Finalize
	Aborted                          // the job is being aborted
	ReportAsked                      // the launcher asks what the rank is blocked in ([Client.Report])
)

func (k EventKind) String() string {
	switch k {
	case ProcFailed:
		return "proc-failed"
	case Aborted:
		return "abort"
	case ReportAsked:
		return "report"
	}
	return "event(" + strconv.Itoa(int(k)) + ")"
}

func parseEventKind(s string) EventKind {
	switch s {
	case "proc-failed":
		return ProcFailed
	case "abort":
		return Aborted
	case "report":
		return ReportAsked
	}
	return 0
}

// Event is pushed by the agent to every rank.
type Event struct {
	Kind  EventKind
	Rank  int    // the failed or aborting rank, -1 if none
	Host  string // its host
	Code  int    // exit or abort code
	Cause string // human-readable cause
	// Stacks asks a ReportAsked's answer to carry the rank's goroutine stacks.
	Stacks bool
}

func (ev Event) line() string {
	f := kv{"kind", ev.Kind.String(), "rank", strconv.Itoa(ev.Rank),
		"host", text(ev.Host), "code", strconv.Itoa(ev.Code), "cause", text(ev.Cause)}
	if ev.Stacks {
		f = append(f, "stacks", "1")
	}
	return line(cmdEvent, f)
}

// eventBuffer bounds the events queued for a rank that does not read them; the agent
// sends a handful per job at most.
const eventBuffer = 256

// Client is a rank's connection to its agent. It is safe for concurrent use: requests are
// serialized, and a reader goroutine (stopped by Close or by the agent closing the socket)
// routes answers to the waiting request and events to Events.
type Client struct {
	conn   net.Conn
	rank   int
	info   Info
	events chan Event
	done   chan struct{} // closed when the reader stops

	reqMu sync.Mutex // serializes requests; held for a whole request
	mu    sync.Mutex
	seq   uint64
	reply chan msg // answers, tagged by id; the reader drops stale ones
	err   error    // why the reader stopped
}

var _ Session = (*Client)(nil)

// Dial connects to the agent socket at path and performs init for rank of job.
func Dial(ctx context.Context, path string, rank int, job string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("pmi: connect to agent socket %s: %w (is golaunch still running?)", path, err)
	}
	return DialConn(ctx, conn, rank, job)
}

// DialConn performs init for rank of job on conn, a connection to the agent: the socket,
// or the rank's own PMI_FD, which golaunch's agent serves to gorma clients as well. The
// Client owns conn from then on, and closes it if init fails.
func DialConn(ctx context.Context, conn net.Conn, rank int, job string) (*Client, error) {
	c := &Client{conn: conn, rank: rank, events: make(chan Event, eventBuffer), done: make(chan struct{}), reply: make(chan msg, 1)}
	go c.read()
	m, err := c.call(ctx, cmdGormaInit, kv{"version", strconv.Itoa(ProtocolVersion), "rank", strconv.Itoa(rank), "job", text(job)})
	if err == nil {
		c.info.Size, err = m.int("size")
	}
	if err == nil {
		c.info.Secret, err = m.hex("secret")
	}
	if _, ok := m["appnum"]; ok && err == nil {
		c.info.AppNum, err = m.int("appnum") // absent from an older agent: 0
	}
	if err != nil {
		conn.Close()
		<-c.done
		if oe, ok := err.(*opError); ok {
			err = oe.err // named below with the rank
		}
		return nil, &opError{op: "init rank " + strconv.Itoa(rank), err: err}
	}
	c.info.KVSName = m["kvsname"]
	c.info.ProcessMapping = untext(m["mapping"]) // absent from an older agent: ""
	if h := m["hosts"]; h != "" {
		for _, name := range strings.Split(h, ",") {
			c.info.Hosts = append(c.info.Hosts, untext(name))
		}
	}
	return c, nil
}

func (c *Client) read() {
	defer close(c.done)
	defer close(c.events)
	sc := newReader(c.conn)
	for sc.Scan() {
		m, err := parseLine(sc.Text())
		if err != nil {
			c.stop(err)
			return
		}
		if m["cmd"] == cmdEvent {
			ev := Event{Kind: parseEventKind(m["kind"]), Host: untext(m["host"]), Cause: untext(m["cause"]), Stacks: m["stacks"] == "1"}
			ev.Rank, _ = strconv.Atoi(m["rank"])
			ev.Code, _ = strconv.Atoi(m["code"])
			select {
			case c.events <- ev:
			default: // a rank that never reads events loses the oldest news, never blocks the agent
			}
			continue
		}
		c.mu.Lock()
		current := m["id"] == strconv.FormatUint(c.seq, 10)
		c.mu.Unlock()
		if current {
			select {
			case c.reply <- m:
			default: // only a stale answer can be waiting there: replace it
				select {
				case <-c.reply:
				default:
				}
				c.reply <- m
			}
		}
	}
	err := sc.Err()
	if err == nil {
		err = ErrClosed
	}
	c.stop(err)
}

func (c *Client) stop(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.conn.Close()
}

// call sends one request and waits for its answer.
func (c *Client) call(ctx context.Context, cmd string, f kv) (msg, error) {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	c.mu.Lock()
	c.seq++
	id := strconv.FormatUint(c.seq, 10)
	c.mu.Unlock()
	select {
	case <-c.reply: // an answer to an abandoned request that slipped in: drop it
	default:
	}
	op := cmd // what errors call the request: the Client method's name
	switch cmd {
	case cmdBarrier:
		op = "fence"
	case cmdGormaInit:
		op = "init"
	case cmdGormaSpawn:
		op = "spawn"
	}
	if _, err := c.conn.Write([]byte(line(cmd, append(f, "id", id)))); err != nil {
		return nil, &opError{op: op, err: c.closedErr(err)}
	}
	want := replyTo[cmd]
	answer := func(m msg) (msg, error) {
		if m.failed() {
			return nil, m.remoteError()
		}
		if m["cmd"] != want {
			return nil, fmt.Errorf("%w: answer %q to %q", ErrProtocol, Truncate(m["cmd"]), cmd)
		}
		return m, nil
	}
	for {
		select {
		case m := <-c.reply:
			if m["id"] != id {
				continue // the late answer of an abandoned request
			}
			return answer(m)
		case <-c.done:
			select {
			case m := <-c.reply: // the answer came just before the agent hung up
				if m["id"] == id {
					return answer(m)
				}
			default:
			}
			return nil, &opError{op: op, err: c.closedErr(nil)}
		case <-ctx.Done():
			return nil, &opError{op: op, err: ctx.Err()}
		}
	}
}

func (c *Client) closedErr(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cause := c.err
	if cause == nil {
		cause = err
	}
	if cause == nil || errors.Is(cause, ErrClosed) {
		return ErrClosed // the agent hung up: nothing more to say
	}
	return fmt.Errorf("%w (%s)", ErrClosed, strings.TrimPrefix(cause.Error(), "pmi: "))
}

// Info returns what the agent said at init.
func (c *Client) Info() Info { return c.info }

// AppNum is the number of this rank's program among the job's (MPI_APPNUM), as the
// agent said at init: 0 for the ranks of the first program of `golaunch -n 2 ./a : -n 2
// ./b`, 1 for the second's. 0 in a job of one program.
func (c *Client) AppNum() int { return c.info.AppNum }

// Rank is this rank, as given to Dial.
func (c *Client) Rank() int { return c.rank }

// Size is the number of ranks in the job, as the agent said at init.
func (c *Client) Size() int { return c.info.Size }

// Put publishes value under key for this rank; visible to others after the next Fence.
func (c *Client) Put(ctx context.Context, key string, value []byte) error {
	_, err := c.call(ctx, cmdPut, kv{"key", text(key), "value", hex.EncodeToString(value)})
	return err
}

// Fence returns once every rank of the job has fenced; then Get sees all earlier Puts. If
// ctx ends first, Fence returns its error but the agent still counts this rank as fenced in
// the current round: later requests are answered once that round completes.
func (c *Client) Fence(ctx context.Context) error {
	_, err := c.call(ctx, cmdBarrier, nil)
	return err
}

// Get returns the value rank put under key before the last Fence, or ErrNotFound.
func (c *Client) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	m, err := c.call(ctx, cmdGet, kv{"key", text(key), "rank", strconv.Itoa(rank)})
	if err != nil {
		return nil, err
	}
	return m.hex("value")
}

// Spawn asks the agent to start n new ranks of the job's program, which continue the
// job's numbering, and returns the job rank of the first. It returns once every new rank
// has put its card and passed its group's fence (its Init's), so that Get reads their
// cards here. A spawn the launcher cannot place fails with an error matching ErrRefused.
func (c *Client) Spawn(ctx context.Context, n int) (first int, err error) {
	m, err := c.call(ctx, cmdGormaSpawn, kv{"n", strconv.Itoa(n)})
	if err != nil {
		return 0, err
	}
	return m.int("first")
}

// abortWait bounds how long Abort waits for the agent's acknowledgement.
const abortWait = 5 * time.Second

// Abort asks the agent to abort the job with code; msg is shown in the summary line.
func (c *Client) Abort(code int, msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), abortWait)
	defer cancel()
	_, err := c.call(ctx, cmdAbort, kv{"exitcode", strconv.Itoa(code), "message", text(msg)})
	return err
}

// MaxReport bounds the text of one report (Client.Report): a line must fit MaxLine
// once percent-encoded.
const MaxReport = MaxLine / 4

// Report answers a ReportAsked event with text, what this rank is blocked in (the
// runtime's hang records, and its stacks when asked), cut to MaxReport bytes. It is one
// way (the agent answers nothing) and does not wait for a request under way, such as a
// Fence the rank is blocked in.
func (c *Client) Report(report string) error {
	if len(report) > MaxReport {
		report = report[:MaxReport]
	}
	_, err := c.conn.Write([]byte(line(cmdReport, kv{"text", text(report)})))
	if err != nil {
		return &opError{op: cmdReport, err: c.closedErr(err)}
	}
	return nil
}

// Finalize tells the agent this rank finished cleanly (it may now exit 0).
func (c *Client) Finalize(ctx context.Context) error {
	_, err := c.call(ctx, cmdFinalize, nil)
	return err
}

// Events delivers agent events; it is closed when the connection ends.
func (c *Client) Events() <-chan Event { return c.events }

// Done is closed when the connection to the agent has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close closes the connection without finalizing.
func (c *Client) Close() error {
	c.stop(ErrClosed)
	<-c.done
	return nil
}
