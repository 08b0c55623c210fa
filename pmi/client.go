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
}

// EventKind tells what an Event reports.
type EventKind int

const (
	ProcFailed EventKind = iota + 1 // a rank died or exited without Finalize
	Aborted                         // the job is being aborted
)

func (k EventKind) String() string {
	switch k {
	case ProcFailed:
		return "proc-failed"
	case Aborted:
		return "abort"
	}
	return "event(" + strconv.Itoa(int(k)) + ")"
}

func parseEventKind(s string) EventKind {
	switch s {
	case "proc-failed":
		return ProcFailed
	case "abort":
		return Aborted
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
}

func (ev Event) line() msg {
	return msg{"cmd": "event", "kind": ev.Kind.String(), "rank": strconv.Itoa(ev.Rank),
		"host": ev.Host, "code": strconv.Itoa(ev.Code), "cause": ev.Cause}
}

// eventBuffer bounds the events queued for a rank that does not read them; the agent
// sends a handful per job at most.
const eventBuffer = 256

// Client is a rank's connection to its agent. It is safe for concurrent use: requests are
// serialized, and a reader goroutine (stopped by Close or by the agent closing the socket)
// routes answers to the waiting request and events to Events.
type Client struct {
	conn   net.Conn
	info   Info
	events chan Event
	done   chan struct{} // closed when the reader stops

	reqMu sync.Mutex // serializes requests; held for a whole request
	mu    sync.Mutex
	seq   uint64
	reply chan msg // answers, tagged by id; the reader drops stale ones
	err   error    // why the reader stopped
}

// Dial connects to the agent socket at path and performs init for rank of job.
func Dial(ctx context.Context, path string, rank int, job string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("pmi: connect to agent socket %s: %w (is golaunch still running?)", path, err)
	}
	c := &Client{conn: conn, events: make(chan Event, eventBuffer), done: make(chan struct{}), reply: make(chan msg, 1)}
	go c.read()
	m, err := c.call(ctx, msg{"cmd": "init", "version": strconv.Itoa(ProtocolVersion), "rank": strconv.Itoa(rank), "job": job})
	if err == nil {
		c.info.Size, err = m.int("size")
	}
	if err == nil {
		c.info.Secret, err = m.hex("secret")
	}
	if err != nil {
		conn.Close()
		if oe, ok := err.(*opError); ok {
			err = oe.err // named below with the rank
		}
		return nil, &opError{op: "init rank " + strconv.Itoa(rank), err: err}
	}
	return c, nil
}

func (c *Client) read() {
	defer close(c.done)
	defer close(c.events)
	sc := newReader(c.conn)
	for sc.Scan() {
		m, err := DecodeLine(sc.Text())
		if err != nil {
			c.stop(err)
			return
		}
		if m["cmd"] == "event" {
			ev := Event{Kind: parseEventKind(m["kind"]), Host: m["host"], Cause: m["cause"]}
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
func (c *Client) call(ctx context.Context, req msg) (msg, error) {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	c.mu.Lock()
	c.seq++
	req["id"] = strconv.FormatUint(c.seq, 10)
	c.mu.Unlock()
	select {
	case <-c.reply: // an answer to an abandoned request that slipped in: drop it
	default:
	}
	if _, err := c.conn.Write([]byte(EncodeLine(req))); err != nil {
		return nil, &opError{op: req["cmd"], err: c.closedErr(err)}
	}
	for {
		select {
		case m := <-c.reply:
			if m["id"] != req["id"] {
				continue // the late answer of an abandoned request
			}
			if m["cmd"] == "error" {
				return nil, m.remoteError()
			}
			if m["cmd"] != req["cmd"]+"-ok" {
				return nil, fmt.Errorf("%w: answer %q to %q", ErrProtocol, m["cmd"], req["cmd"])
			}
			return m, nil
		case <-c.done:
			select {
			case m := <-c.reply: // the answer came just before the agent hung up
				if m["id"] == req["id"] && m["cmd"] == "error" {
					return nil, m.remoteError()
				}
				if m["id"] == req["id"] && m["cmd"] == req["cmd"]+"-ok" {
					return m, nil
				}
			default:
			}
			return nil, &opError{op: req["cmd"], err: c.closedErr(nil)}
		case <-ctx.Done():
			return nil, &opError{op: req["cmd"], err: ctx.Err()}
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

// Put publishes value under key for this rank; visible to others after the next Fence.
func (c *Client) Put(ctx context.Context, key string, value []byte) error {
	_, err := c.call(ctx, msg{"cmd": "put", "key": key, "value": hex.EncodeToString(value)})
	return err
}

// Fence returns once every rank of the job has fenced; then Get sees all earlier Puts. If
// ctx ends first, Fence returns its error but the agent still counts this rank as fenced in
// the current round: later requests are answered once that round completes.
func (c *Client) Fence(ctx context.Context) error {
	_, err := c.call(ctx, msg{"cmd": "fence"})
	return err
}

// Get returns the value rank put under key before the last Fence, or ErrNotFound.
func (c *Client) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	m, err := c.call(ctx, msg{"cmd": "get", "rank": strconv.Itoa(rank), "key": key})
	if err != nil {
		return nil, err
	}
	return m.hex("value")
}

// abortWait bounds how long Abort waits for the agent's acknowledgement.
const abortWait = 5 * time.Second

// Abort asks the agent to abort the job with code; msg is shown in the summary line.
func (c *Client) Abort(code int, msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), abortWait)
	defer cancel()
	_, err := c.call(ctx, map[string]string{"cmd": "abort", "code": strconv.Itoa(code), "msg": msg})
	return err
}

// Finalize tells the agent this rank finished cleanly (it may now exit 0).
func (c *Client) Finalize(ctx context.Context) error {
	_, err := c.call(ctx, msg{"cmd": "finalize"})
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
