package pmi

import (
	"context"
	"errors"
)

// ProtocolVersion is the version of the line protocol.
const ProtocolVersion = 1

// MaxLine bounds a protocol line in bytes.
const MaxLine = 1 << 20

// Environment variables of the launch contract.
const (
	EnvJobID      = "GOLAUNCH_JOBID"       // job id (hex)
	EnvRank       = "GOLAUNCH_RANK"        // this rank
	EnvSize       = "GOLAUNCH_SIZE"        // ranks in the job
	EnvLocalRank  = "GOLAUNCH_LOCAL_RANK"  // rank among this host's ranks
	EnvLocalSize  = "GOLAUNCH_LOCAL_SIZE"  // ranks on this host
	EnvNodeRank   = "GOLAUNCH_NODE_RANK"   // index of this host in the job's host order
	EnvNumNodes   = "GOLAUNCH_NUM_NODES"   // hosts in the job
	EnvHost       = "GOLAUNCH_HOST"        // this host's name (the agent's memberlist name)
	EnvAgentSock  = "GOLAUNCH_AGENT_SOCK"  // the agent's Unix socket
	EnvTransport  = "GOLAUNCH_TRANSPORT"   // auto, shm or tcp
	EnvTCPAddr    = "GOLAUNCH_TCP_ADDR"    // IP a rank's tcp device listens on (port 0)
)

// Contract is a rank's place in a job, from the GOLAUNCH_* environment.
type Contract struct {
	JobID                string
	Rank, Size           int
	LocalRank, LocalSize int
	NodeRank, NumNodes   int
	Host                 string
	AgentSock            string
	Transport            string // "auto", "shm" or "tcp"
	TCPAddr              string // IP to listen on, e.g. "10.0.0.2"; "" means 127.0.0.1
}

// ErrNoContract means the GOLAUNCH_* variables are absent: the program was not started by
// golaunch (a world of one rank).
var ErrNoContract = errors.New("pmi: not started by golaunch (no " + EnvRank + ")")

// ReadContract reads the contract from getenv (os.Getenv in a real rank). It returns
// ErrNoContract when EnvRank is unset, and an error naming the variable when one is
// malformed or inconsistent.
func ReadContract(getenv func(string) string) (Contract, error) { panic("unimplemented") }

// Environ returns the contract as NAME=VALUE strings for a child's environment.
func (c Contract) Environ() []string { panic("unimplemented") }

// Errors.
var (
	ErrNotFound = errors.New("pmi: key not found")
	ErrClosed   = errors.New("pmi: connection closed")
	ErrProtocol = errors.New("pmi: protocol error")
	ErrAborted  = errors.New("pmi: job aborted")
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

// Event is pushed by the agent to every rank.
type Event struct {
	Kind  EventKind
	Rank  int    // the failed or aborting rank, -1 if none
	Host  string // its host
	Code  int    // exit or abort code
	Cause string // human-readable cause
}

// Client is a rank's connection to its agent.
type Client struct{}

// Dial connects to the agent socket at path and performs init for rank of job.
func Dial(ctx context.Context, path string, rank int, job string) (*Client, error) {
	panic("unimplemented")
}

// Info returns what the agent said at init.
func (c *Client) Info() Info { panic("unimplemented") }

// Put publishes value under key for this rank; visible to others after the next Fence.
func (c *Client) Put(ctx context.Context, key string, value []byte) error { panic("unimplemented") }

// Fence returns once every rank of the job has fenced; then Get sees all earlier Puts.
func (c *Client) Fence(ctx context.Context) error { panic("unimplemented") }

// Get returns the value rank put under key before the last Fence, or ErrNotFound.
func (c *Client) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	panic("unimplemented")
}

// Abort asks the agent to abort the job with code; msg is shown in the summary line.
func (c *Client) Abort(code int, msg string) error { panic("unimplemented") }

// Finalize tells the agent this rank finished cleanly (it may now exit 0).
func (c *Client) Finalize(ctx context.Context) error { panic("unimplemented") }

// Events delivers agent events; it is closed when the connection ends.
func (c *Client) Events() <-chan Event { panic("unimplemented") }

// Close closes the connection without finalizing.
func (c *Client) Close() error { panic("unimplemented") }

// Handler is the agent's side of the protocol; Server calls it from the connection's
// goroutine. Methods that block take the connection's context, which ends when the rank
// disconnects or the server closes.
type Handler interface {
	// Init admits rank of job (checking it belongs to this agent) and returns its Info.
	Init(ctx context.Context, rank int, job string) (Info, error)
	// Fence records rank's puts and blocks until every rank of the job has fenced.
	Fence(ctx context.Context, rank int, puts map[string][]byte) error
	// Get returns a value put by rank before the last completed fence.
	Get(ctx context.Context, rank int, key string) ([]byte, error)
	// Abort starts a job abort requested by rank.
	Abort(rank, code int, msg string)
	// Finalize records that rank finished cleanly.
	Finalize(rank int)
	// Gone reports that rank's connection ended (finalized or not).
	Gone(rank int)
}

// Server serves the protocol on a Unix socket.
type Server struct{}

// Listen creates the socket at path (mode 0600, its directory should be 0700) and serves h.
func Listen(path string, h Handler) (*Server, error) { panic("unimplemented") }

// Notify pushes ev to rank's connection (or to every connection if rank < 0).
func (s *Server) Notify(rank int, ev Event) { panic("unimplemented") }

// Close stops the server and closes every connection.
func (s *Server) Close() error { panic("unimplemented") }

// Exchange is a job-wide put/fence/get store for Handlers whose ranks are all local (a
// one-host job, and tests): Fence blocks until size ranks have fenced in the current round.
type Exchange struct{}

// NewExchange returns an Exchange for size ranks.
func NewExchange(size int) *Exchange { panic("unimplemented") }

// Fence records puts of rank and blocks until all ranks fenced this round, ctx ends, or
// the exchange is failed.
func (x *Exchange) Fence(ctx context.Context, rank int, puts map[string][]byte) error {
	panic("unimplemented")
}

// Merge adds the puts of ranks fenced elsewhere (another host) to the current round, as
// if those ranks had fenced here. Multi-host agents use it.
func (x *Exchange) Merge(puts map[int]map[string][]byte) { panic("unimplemented") }

// Get returns a value from the last completed round.
func (x *Exchange) Get(rank int, key string) ([]byte, error) { panic("unimplemented") }

// Fail makes current and later Fences return err (the job is aborting).
func (x *Exchange) Fail(err error) { panic("unimplemented") }
