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
	"sync/atomic"
)

// Environment of a rank started by a PMIx server (Open MPI's mpirun, srun --mpi=pmix).
const (
	EnvPMIxURI41     = "PMIX_SERVER_URI41" // the server's address, v4.1 wire: the one the client speaks
	EnvPMIxNamespace = "PMIX_NAMESPACE"
	EnvPMIxRank      = "PMIX_RANK"
	EnvPMIxSecurity  = "PMIX_SECURITY_MODE"
	EnvPMIxVersion   = "PMIX_VERSION"
)

// pmixOlderURIs are the addresses of wires older than v4.1, newest first.
var pmixOlderURIs = []string{"PMIX_SERVER_URI4", "PMIX_SERVER_URI3", "PMIX_SERVER_URI21", "PMIX_SERVER_URI2"}

// ErrNoPMIx means the environment names no PMIx server (no PMIX_SERVER_URI*).
var ErrNoPMIx = errors.New("pmi: no PMIx server in the environment (PMIX_SERVER_URI*)")

// DetectPMIx reports whether getenv names a PMIx server of any version. ConnectPMIx
// refuses the versions it does not speak.
func DetectPMIx(getenv func(string) string) bool {
	if getenv(EnvPMIxURI41) != "" {
		return true
	}
	for _, k := range pmixOlderURIs {
		if getenv(k) != "" {
			return true
		}
	}
	return false
}

// PMIx is a connection to a PMIx server: OpenPMIx 4.1 or later, over the v4.1 wire. It
// implements Session. Requests are lock-step, one at a time under a mutex; every wait
// honours its context. A request abandoned by its context, or answered with garbage,
// leaves the connection unusable. Put keeps values until Fence commits them.
type PMIx struct {
	nspace  string
	rank    int
	version string
	job     pmixJob

	conn      net.Conn
	pindex    int32
	closeOnce sync.Once
	wmu       sync.Mutex // held while writing one message, so that Abort never interleaves

	mu      sync.Mutex            // held for a whole request and its answer
	pending []pmixInfo            // puts since the last fence
	got     map[uint32][]pmixInfo // ranks' data fetched since the last fence
	broken  error                 // why the connection is unusable, nil while it is fine

	tag atomic.Uint32 // the last request's tag
}

// Rank returns this rank.
func (p *PMIx) Rank() int { return p.rank }

// Size returns the number of ranks in the job.
func (p *PMIx) Size() int { return p.job.size }

// Version returns "PMIx" and the server's version from PMIX_VERSION.
func (p *PMIx) Version() string { return p.version }

// Nodes returns the node index of every rank, from the job data; nil when the server
// did not say every rank's node.
func (p *PMIx) Nodes(ctx context.Context) ([]int, error) { return p.job.nodes(), nil }

// ConnectPMIx connects to the PMIx server getenv names, says who this rank is, and reads
// the job's data. It speaks only the v4.1 wire (PMIX_SERVER_URI41) and refuses an
// older server with an error naming the versions. It returns ErrNoPMIx when DetectPMIx
// is false.
func ConnectPMIx(ctx context.Context, getenv func(string) string) (*PMIx, error) {
	uri := getenv(EnvPMIxURI41)
	if uri == "" {
		for _, k := range pmixOlderURIs {
			if getenv(k) != "" {
				return nil, fmt.Errorf("pmi: the PMIx server offers %s but not %s: gorma's PMIx client speaks only the v4.1 wire (OpenPMIx 4.1 and later; Open MPI 4.1, 5)", k, EnvPMIxURI41)
			}
		}
		return nil, ErrNoPMIx
	}
	u, err := parsePMIxURI(uri)
	if err != nil {
		return nil, fmt.Errorf("pmi: %s=%q: %v (the PMIx server sets it)", EnvPMIxURI41, uri, err)
	}
	p := &PMIx{nspace: getenv(EnvPMIxNamespace), version: "PMIx " + getenv(EnvPMIxVersion), got: map[uint32][]pmixInfo{}}
	p.tag.Store(100)
	if p.nspace == "" {
		return nil, fmt.Errorf("pmi: %s is set but %s is not (the PMIx server sets both)", EnvPMIxURI41, EnvPMIxNamespace)
	}
	if p.rank, err = strconv.Atoi(getenv(EnvPMIxRank)); err != nil || p.rank < 0 || p.rank > 1<<31-2 {
		return nil, fmt.Errorf("pmi: %s=%q: want a rank >= 0 (the PMIx server sets it)", EnvPMIxRank, getenv(EnvPMIxRank))
	}
	if sec := getenv(EnvPMIxSecurity); sec != "" && !hasWord(sec, pmixSecNative) {
		return nil, fmt.Errorf("pmi: %s=%q: gorma's PMIx client has only the %q credential", EnvPMIxSecurity, sec, pmixSecNative)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.addr)
	if err != nil {
		return nil, fmt.Errorf("pmi: dial the PMIx server at %s (%s): %w", u.addr, EnvPMIxURI41, err)
	}
	p.conn = conn
	if err := p.start(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func hasWord(list, w string) bool {
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == w {
			return true
		}
	}
	return false
}

// start runs the connect handshake and the job-data request.
func (p *PMIx) start(ctx context.Context) error {
	err := p.bounded(ctx, "connect", func() error {
		msg := pmixConnectMsg(p.nspace, uint32(p.rank), uint32(os.Getuid()), uint32(os.Getgid()))
		if _, err := p.conn.Write(msg); err != nil {
			return p.ioErr(err)
		}
		var ack [8]byte
		if _, err := io.ReadFull(p.conn, ack[:]); err != nil {
			return p.ioErr(err)
		}
		if st := int32(be32(ack[:4])); st != 0 {
			return fmt.Errorf("%w: the server refused the connection with PMIx status %d (is this rank's PMIX_NAMESPACE and PMIX_RANK its own, and is the server 4.1 or later?)", ErrRefused, st)
		}
		p.pindex = int32(be32(ack[4:]))
		return nil
	})
	if err != nil {
		return err
	}
	body, err := p.request(ctx, "job data", pmixCmd(pmixCmdReq).b)
	if err != nil {
		return err
	}
	if p.job, err = parsePMIxJob(body); err != nil {
		return p.fail("job data", err)
	}
	if p.job.nspace != p.nspace {
		return p.fail("job data", fmt.Errorf("%w: job data of namespace %q, this rank's is %q", ErrProtocol, p.job.nspace, p.nspace))
	}
	if p.rank >= p.job.size {
		return p.fail("job data", fmt.Errorf("%w: %s=%d is not below the job's size %d", ErrProtocol, EnvPMIxRank, p.rank, p.job.size))
	}
	return nil
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// PMIxError is a request to a PMIx server that failed.
type PMIxError struct {
	Op   string // the request, e.g. "fence"
	Rank int
	Err  error // ErrProtocol, ErrClosed, ErrRefused, ErrNotFound, a context error, or an I/O error
}

func (e *PMIxError) Error() string {
	return "pmi: PMIx " + e.Op + " (rank " + strconv.Itoa(e.Rank) + "): " + strings.TrimPrefix(e.Err.Error(), "pmi: ")
}

func (e *PMIxError) Unwrap() error { return e.Err }

func (p *PMIx) fail(op string, err error) error {
	var pe *PMIxError
	if errors.As(err, &pe) {
		return err
	}
	return &PMIxError{Op: op, Rank: p.rank, Err: err}
}

func (p *PMIx) ioErr(err error) error {
	switch {
	case errors.Is(err, net.ErrClosed):
		return fmt.Errorf("%w (by Close on this side)", ErrClosed)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w (the PMIx server hung up: the job may be ending, or another rank failed)", ErrClosed)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return err
	}
	return fmt.Errorf("%w: %v", ErrClosed, err)
}

// bounded runs fn under p.mu with the connection's deadline following ctx. A failure
// leaves the connection broken.
func (p *PMIx) bounded(ctx context.Context, op string, fn func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken != nil {
		return p.fail(op, fmt.Errorf("%w: connection unusable since an earlier request failed (%v)", ErrClosed, p.broken))
	}
	if err := ctx.Err(); err != nil {
		return p.fail(op, err)
	}
	defer bindDeadline(ctx, p.conn)()
	err := fn()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w while waiting for the PMIx server's answer", ctx.Err())
		}
		err = p.fail(op, err)
		p.broken = err
	}
	return err
}

// request sends body with a fresh tag and returns the body of the answer with that tag;
// messages with other tags (the server's event notifications) are skipped.
func (p *PMIx) request(ctx context.Context, op string, body []byte) ([]byte, error) {
	var out []byte
	err := p.bounded(ctx, op, func() error {
		tag := p.tag.Add(1)
		if err := p.send(tag, body); err != nil {
			return err
		}
		for {
			h, b, err := p.recv()
			if err != nil {
				return err
			}
			if h.tag == tag {
				out = b
				return nil
			}
		}
	})
	return out, err
}

func (p *PMIx) send(tag uint32, body []byte) error {
	msg := appendPMIxHdr(make([]byte, 0, pmixHdrLen+len(body)), pmixHdr{pindex: p.pindex, tag: tag, nbytes: uint32(len(body))})
	msg = append(msg, body...)
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := p.conn.Write(msg); err != nil {
		return p.ioErr(err)
	}
	return nil
}

func (p *PMIx) recv() (pmixHdr, []byte, error) {
	var hb [pmixHdrLen]byte
	if _, err := io.ReadFull(p.conn, hb[:]); err != nil {
		return pmixHdr{}, nil, p.ioErr(err)
	}
	h, err := parsePMIxHdr(hb[:])
	if err != nil {
		return h, nil, err
	}
	b := make([]byte, h.nbytes)
	if _, err := io.ReadFull(p.conn, b); err != nil {
		return h, nil, p.ioErr(err)
	}
	return h, b, nil
}

// status sends body and checks the status that starts its answer.
func (p *PMIx) status(ctx context.Context, op string, body []byte) error {
	ans, err := p.request(ctx, op, body)
	if err != nil {
		return err
	}
	d := &pmixDec{b: ans}
	if st := pmixStatusOf(d); d.err != nil {
		return p.fail(op, d.err)
	} else if st != 0 {
		return p.fail(op, fmt.Errorf("%w: PMIx status %d", ErrRefused, st))
	}
	return nil
}

// Put keeps value under key for this rank; the next Fence commits it (see Session).
func (p *PMIx) Put(ctx context.Context, key string, value []byte) error {
	if key == "" || len(key) > 510 {
		return p.fail("put", fmt.Errorf("key %q: want 1 to 510 bytes", Truncate(key)))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, pmixInfo{key: key, val: pmixValue{typ: pmixByteObject, bytes: append([]byte(nil), value...)}})
	return nil
}

// Fence commits this rank's puts and waits until every rank of the job has fenced,
// with their data collected (see Session).
func (p *PMIx) Fence(ctx context.Context) error {
	p.mu.Lock()
	kvs := p.pending
	p.pending = nil
	p.got = map[uint32][]pmixInfo{}
	p.mu.Unlock()
	if len(kvs) > 0 {
		if err := p.status(ctx, "commit", pmixCommitBody(kvs)); err != nil {
			return err
		}
	}
	return p.status(ctx, "fence", pmixFenceBody(p.nspace, true))
}

// Get returns what rank put under key before the last Fence (see Session). The first
// Get of a rank fetches all its data.
func (p *PMIx) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	if rank < 0 || rank >= p.job.size {
		return nil, fmt.Errorf("pmi: PMIx get %q of rank %d: no such rank in a job of %d", key, rank, p.job.size)
	}
	if v, ok := p.lookup(uint32(rank), key); ok {
		return v, nil
	}
	ans, err := p.request(ctx, "get", pmixGetBody(p.nspace, uint32(rank), key))
	if err != nil {
		return nil, err
	}
	st, byRank, err := parsePMIxGet(ans)
	if err != nil {
		return nil, p.fail("get", err)
	}
	if st != 0 {
		return nil, p.fail("get", fmt.Errorf("%w: key %q of rank %d (PMIx status %d)", ErrNotFound, key, rank, st))
	}
	p.mu.Lock()
	for r, kvs := range byRank {
		p.got[r] = kvs
	}
	p.mu.Unlock()
	if v, ok := p.lookup(uint32(rank), key); ok {
		return v, nil
	}
	return nil, p.fail("get", fmt.Errorf("%w: key %q of rank %d", ErrNotFound, key, rank))
}

func (p *PMIx) lookup(rank uint32, key string) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, kv := range p.got[rank] {
		if kv.key == key {
			if kv.val.typ == pmixByteObject {
				return append([]byte(nil), kv.val.bytes...), true
			}
			return []byte(kv.val.str), true
		}
	}
	return nil, false
}

// Abort asks the server to end the job with code and msg. It writes the request at
// once, even while another request waits, and does not wait for the answer.
func (p *PMIx) Abort(code int, msg string) error {
	if err := p.send(p.tag.Add(1), pmixAbortBody(code, msg)); err != nil {
		return p.fail("abort", err)
	}
	return nil
}

// Finalize tells the server this rank is done; Close after it.
func (p *PMIx) Finalize(ctx context.Context) error {
	return p.status(ctx, "finalize", pmixCmd(pmixCmdFinalize).b)
}

// Close closes the connection. It is idempotent.
func (p *PMIx) Close() error {
	p.closeOnce.Do(func() { p.conn.Close() })
	return nil
}
