package launcher

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
)

// The control protocol runs between a submitter (the dialer) and each agent of a job
// (the listener), over one TCP connection per agent and job.
//
// # Authentication
//
// Both sides hold the cluster key; the control key is HMAC-SHA256(cluster key,
// "gorma/launcher control key v1"), so the gossip key and the control key are never the
// same bytes. The dialer speaks first, at once, and the listener reads nothing but a
// fixed-size hello and writes nothing at all to a peer that cannot prove the key:
//
//	C → S  hello (72 B): "GLCH", version u16, 0 u16, time u64, nonce C [24], mac H [32]
//	S → C  reply (72 B): "GLCS", version u16, status u16, nonce S [32], mac S [32]
//	C → S  proof (36 B): "GLCP", mac C [32]
//
// mac H = HMAC(k, "gorma/launcher v1 hello" || hello[:40]); a wrong mac H (a stranger, a
// wrong key) closes the connection silently. The hello's first 8 bytes and its mac have
// the same place in every version, so a peer of another version that proves the key gets
// the reply with status hsBadVersion. time is the dialer's clock (unix ns): a hello more
// than helloSkew away from the listener's clock gets status hsStale, and the listener (the
// agent) refuses a nonce it saw within helloSkew (a replay). A hello that proves the key
// is what lets the agent tell a submitter from a silent stranger (handshakes.go). mac S =
// HMAC(k, "gorma/launcher v1 server" || hello || reply[:40]) proves the listener to the
// dialer over the dialer's fresh nonce. mac C = HMAC(k, "gorma/launcher v1 client" ||
// hello || reply) proves the dialer over the listener's fresh nonce, so a replayed hello
// gets a random nonce and nothing else. MACs are compared in constant time. Only after mac
// C verifies does the listener read a frame. The handshake runs under one deadline
// (handshakeTimeout).
//
// # Frames
//
// After the handshake each direction is a stream of frames: length u32 (of the sealed
// payload), type u8, sealed payload. Payloads are sealed with AES-256-GCM under a key per
// direction, HMAC(k, "gorma/launcher v1 submitter->agent" or "... agent->submitter" ||
// hello || reply), with the frame's sequence number as nonce and its 5-byte header as
// associated data. A job's secret and environment never cross the network in clear, and a
// frame cannot be forged, altered, replayed, reordered or moved to another connection.
// Plain payloads are JSON, except output and stdin data (raw bytes after a small binary
// header), the job's spec (specwire.go) and the fence rounds' (fencewire.go,
// treefence.go). Frame types are append-only.
//
// # Liveness
//
// Each side sends a ping frame every heartbeatInterval for as long as the job lasts, and
// recv passes over pings. The connection's silence (liveness.go) is how long its reader
// has waited for the next frame, which is what decides whether an agent that memberlist
// declared dead is really gone.

// controlVersion is the control protocol version, also advertised in node metadata.
// Version 2 adds the ping frame, which a version-1 peer would refuse. Version 5 adds the
// hello's time. Version 6 adds the fault-tolerant job (jobSpec.FT, the proc-failed frame),
// version 7 the spawn frames (grow.go), version 8 barrier fences and the fetch frames
// between agents (fetch.go), version 9 the agent tree (treespec.go, treefence.go) and
// the binary spec (specwire.go).
const controlVersion = 9

// maxFrame bounds a frame's payload (a fence of many ranks' endpoint cards fits easily).
const maxFrame = 64 << 20

// defaultHandshake bounds a whole control handshake.
const defaultHandshake = 5 * time.Second

// handshakeTimeout bounds a handshake at an agent (a variable for tests). A submitter's
// is its ctlTiming's.
var handshakeTimeout = defaultHandshake

const (
	helloSize = 72
	replySize = 72
	proofSize = 36
	macOff    = 40
	timeOff   = 8  // the hello's time
	nonceOff  = 16 // the hello's nonce

	helloMagic = "GLCH"
	replyMagic = "GLCS"
	proofMagic = "GLCP"

	helloLabel  = "gorma/launcher v1 hello"
	serverLabel = "gorma/launcher v1 server"
	clientLabel = "gorma/launcher v1 client"
	keyLabel    = "gorma/launcher control key v1"
	c2sLabel    = "gorma/launcher v1 submitter->agent"
	s2cLabel    = "gorma/launcher v1 agent->submitter"
)

// handshake statuses, append-only.
const (
	hsOK         uint16 = iota
	hsBadVersion        // the listener speaks another control protocol version
	hsStale             // the hello's time is more than helloSkew from the listener's clock
)

// helloSkew bounds how far a hello's time may be from the agent's clock, and how long
// the agent remembers the nonces it saw.
const helloSkew = 2 * time.Minute

// errAuth is a failed handshake.
var errAuth = errors.New("control handshake failed")

// errShed is a handshake that the agent closed before its reply: it was shed (the agent
// is busy with other pending handshakes). dialControl tries again.
var errShed = errors.New("handshake shed (agent busy)")

// controlKey derives the control key from the cluster key.
func controlKey(clusterKey []byte) []byte {
	m := hmac.New(sha256.New, clusterKey)
	m.Write([]byte(keyLabel))
	return m.Sum(nil)
}

func mac(key []byte, label string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// clientHandshake runs the dialer's side on c and returns the authenticated connection;
// the caller sets the deadline.
func clientHandshake(c net.Conn, key []byte) (*ctlConn, error) {
	hello := make([]byte, helloSize)
	copy(hello, helloMagic)
	binary.BigEndian.PutUint16(hello[4:], controlVersion)
	binary.BigEndian.PutUint64(hello[timeOff:], uint64(time.Now().UnixNano()))
	if _, err := rand.Read(hello[nonceOff:macOff]); err != nil {
		return nil, fmt.Errorf("%w: nonce: %v", errAuth, err)
	}
	copy(hello[macOff:], mac(key, helloLabel, hello[:macOff]))
	if _, err := c.Write(hello); err != nil {
		return nil, fmt.Errorf("%w: send hello: %v", errAuth, err)
	}
	reply := make([]byte, replySize)
	if n, err := io.ReadFull(c, reply); err != nil {
		if n == 0 && !isTimeout(err) {
			return nil, fmt.Errorf("%w: %w: closed before its reply (%v)", errAuth, errShed, err)
		}
		return nil, fmt.Errorf("%w: no reply: %v", errAuth, err)
	}
	if string(reply[:4]) != replyMagic || !hmac.Equal(reply[macOff:], mac(key, serverLabel, hello, reply[:macOff])) {
		return nil, fmt.Errorf("%w: the peer did not prove the cluster key: it is not an agent of this cluster, "+
			"or its key differs from this golaunch's", errAuth)
	}
	switch st := binary.BigEndian.Uint16(reply[6:]); st {
	case hsOK:
	case hsStale:
		return nil, fmt.Errorf("%w: the agent's clock is more than %v from this host's; synchronize the clocks (NTP)", errAuth, helloSkew)
	default:
		v := binary.BigEndian.Uint16(reply[4:])
		return nil, fmt.Errorf("%w: the agent speaks control protocol v%d, this golaunch v%d", errAuth, v, controlVersion)
	}
	proof := make([]byte, proofSize)
	copy(proof, proofMagic)
	copy(proof[4:], mac(key, clientLabel, hello, reply))
	if _, err := c.Write(proof); err != nil {
		return nil, fmt.Errorf("%w: send proof: %v", errAuth, err)
	}
	return newCtlConn(c, key, hello, reply, true)
}

// serverHandshake runs the listener's side on c and returns the authenticated
// connection; the caller sets the deadline and closes c on error. Nothing is written to a
// peer whose hello does not prove the key. It does not look for replays (the agent does,
// handshakes.go).
func serverHandshake(c net.Conn, key []byte) (*ctlConn, error) {
	hello := make([]byte, helloSize)
	if _, err := io.ReadFull(c, hello); err != nil {
		return nil, fmt.Errorf("%w: read hello: %v", errAuth, err)
	}
	v := checkHello(key, hello, time.Now())
	if v == helloForged {
		return nil, fmt.Errorf("%w: hello without a valid key proof", errAuth)
	}
	return finishHandshake(c, key, hello, v)
}

// helloVerdict is what a listener makes of a hello.
type helloVerdict uint8

const (
	helloForged       helloVerdict = iota // short, bad magic or bad mac: a stranger or another key
	helloProven                           // proves the key, this version, time within helloSkew
	helloOtherVersion                     // proves the key, another version
	helloStale                            // proves the key, time more than helloSkew from now
)

// checkHello decodes and checks a hello (b: its bytes, perhaps fewer than helloSize) at
// the listener's time now. It reads nothing beyond helloSize bytes and compares the mac
// in constant time.
func checkHello(key, b []byte, now time.Time) helloVerdict {
	if len(b) < helloSize || string(b[:4]) != helloMagic || !hmac.Equal(b[macOff:helloSize], mac(key, helloLabel, b[:macOff])) {
		return helloForged
	}
	if binary.BigEndian.Uint16(b[4:]) != controlVersion {
		return helloOtherVersion
	}
	t := int64(binary.BigEndian.Uint64(b[timeOff:]))
	if d := now.UnixNano() - t; d > int64(helloSkew) || d < -int64(helloSkew) {
		return helloStale
	}
	return helloProven
}

// finishHandshake runs the listener's side after a hello that proved the key (verdict
// v): the reply, then the dialer's proof.
func finishHandshake(c net.Conn, key, hello []byte, v helloVerdict) (*ctlConn, error) {
	reply := make([]byte, replySize)
	copy(reply, replyMagic)
	binary.BigEndian.PutUint16(reply[4:], controlVersion)
	status := hsOK
	switch v {
	case helloOtherVersion:
		status = hsBadVersion
	case helloStale:
		status = hsStale
	}
	binary.BigEndian.PutUint16(reply[6:], status)
	if _, err := rand.Read(reply[8:macOff]); err != nil {
		return nil, fmt.Errorf("%w: nonce: %v", errAuth, err)
	}
	copy(reply[macOff:], mac(key, serverLabel, hello, reply[:macOff]))
	if _, err := c.Write(reply); err != nil {
		return nil, fmt.Errorf("%w: send reply: %v", errAuth, err)
	}
	switch status {
	case hsBadVersion:
		return nil, fmt.Errorf("%w: submitter speaks control protocol v%d, this agent v%d", errAuth, binary.BigEndian.Uint16(hello[4:]), controlVersion)
	case hsStale:
		t := time.Unix(0, int64(binary.BigEndian.Uint64(hello[timeOff:])))
		return nil, fmt.Errorf("%w: the submitter's clock is %v from this host's, more than %v (or the hello is replayed)",
			errAuth, time.Since(t).Round(time.Second), helloSkew)
	}
	proof := make([]byte, proofSize)
	if _, err := io.ReadFull(c, proof); err != nil {
		return nil, fmt.Errorf("%w: read proof: %v", errAuth, err)
	}
	if string(proof[:4]) != proofMagic || !hmac.Equal(proof[4:], mac(key, clientLabel, hello, reply)) {
		return nil, fmt.Errorf("%w: bad proof", errAuth)
	}
	return newCtlConn(c, key, hello, reply, false)
}

// newCtlConn sets up the sealing of c's frames from the handshake transcript.
func newCtlConn(c net.Conn, key, hello, reply []byte, client bool) (*ctlConn, error) {
	aead := func(label string) (cipher.AEAD, error) {
		b, err := aes.NewCipher(mac(key, label, hello, reply))
		if err != nil {
			return nil, err
		}
		return cipher.NewGCM(b)
	}
	c2s, err := aead(c2sLabel)
	if err != nil {
		return nil, err
	}
	s2c, err := aead(s2cLabel)
	if err != nil {
		return nil, err
	}
	if client {
		return &ctlConn{c: c, wr: c2s, rd: s2c}, nil
	}
	return &ctlConn{c: c, wr: s2c, rd: c2s}, nil
}

// frameType tells what a frame carries. Append-only.
type frameType uint8

const (
	fJob        frameType = iota + 1 // S→A jobSpec (binary: specwire.go)
	fReady                           // A→S: the job is set up, ranks may start
	fReject                          // A→S rejectMsg: the agent cannot run the job
	fStart                           // S→A: spawn the ranks
	fStarted                         // A→S startedMsg
	fOutput                          // A→S rank u32, stream u8, data
	fInit                            // A→S rankMsg: a rank reached PMI init
	fFence                           // A→S agentFenceMsg: the agent's ranks fenced (multi-host jobs, fencewire.go)
	fFenceDone                       // S→A fence-done payload (binary): the round and every agent's card block
	fAbortReq                        // A→S abortReqMsg: a rank called Abort
	fExit                            // A→S exitMsg: a rank ended
	fAbort                           // S→A abortMsg: abort the job
	fSignal                          // S→A signalMsg: signal every rank
	fStdin                           // S→A data for rank 0's stdin
	fStdinAck                        // A→S: one stdin frame written (flow control)
	fStdinEOF                        // S→A: close rank 0's stdin
	fDone                            // S→A: the job is over; clean up
	fPing                            // both ways: the sender is alive (no body; recv skips it)
	fReportReq                       // S→A reportReqMsg: ask every rank what it is blocked in
	fReport                          // A→S reportMsg: a rank's answer (internal/hang's text)
	fProcFailed                      // S→A procFailedMsg: a rank failed and the job goes on (--ft)
	fSpawnReq                        // A→S spawnReqMsg: a rank asks for new ranks (World.Spawn)
	fSpawn                           // S→A spawnMsg: the job grew; start the new ranks placed here
	fSpawnSync                       // A→S fenceMsg: a spawned rank fenced with its group (its Init)
	fSpawnDone                       // S→A spawnDoneMsg: the spawned group's puts, or why it failed
	fSpawnAns                        // S→A spawnReplyMsg: the answer to a rank's spawn request
	fFetch                           // A→A fetchMsg: ask the owner agent for its ranks' puts (fetch.go)
	fFetchAns                        // A→A fetchAnsMsg: the answer
	fHostFailed                      // S→A hostFailedMsg: a lost agent's ranks failed and the job goes on (--ft)
	fJobTree                         // S→A jobTreeMsg: a job whose spec comes down the agent tree (treespec.go)
	fTreeSpec                        // A→A jobSpec (binary): the job's spec, from the agent's parent in the tree
	fFenceRef                        // S→A round (binary): a gathering round completed; its payload comes down the tree (treefence.go)
	fFenceAsk                        // A→S round (binary): send me the round's payload, my parent in the tree did not
	fTreeFence                       // A→A job id and fence-done payload (binary), from the agent's parent in the tree
	fTypeEnd                         // first unused type
)

var frameNames = [...]string{"", "job", "ready", "reject", "start", "started", "output", "init",
	"fence", "fence-done", "abort-request", "exit", "abort", "signal", "stdin", "stdin-ack",
	"stdin-eof", "done", "ping", "report-request", "report", "proc-failed", "spawn-request", "spawn",
	"spawn-fence", "spawn-done", "spawn-reply", "fetch", "fetch-reply", "host-failed", "job-tree",
	"tree-spec", "fence-reference", "fence-ask", "tree-fence"}

func (t frameType) String() string {
	if t > 0 && t < fTypeEnd {
		return frameNames[t]
	}
	return fmt.Sprintf("frame type %d", uint8(t))
}

// jobSpec is everything an agent needs to run its part of a job.
type jobSpec struct {
	ID        string   // job id (hex), also the PMI job name
	Submitter string   // the submitter's memberlist name (its death aborts the job)
	Program   string   // path, or a name looked up in the agent's PATH
	Args      []string // arguments after the program
	Env       []string // -x variables of every program, NAME=VALUE
	// Apps are the programs of an MPMD job in rank order (Apps[0] is Program with Args);
	// nil: every rank runs Program.
	Apps      []appSpec `json:",omitempty"`
	Dir       string    // working directory (the agent's own if it does not exist there)
	Secret    []byte    // per-job secret handed to ranks at PMI init
	Roster    Roster    // the whole rank table
	Node      int       // the receiving agent's index in Roster.Hosts
	Transport string    // auto, shm or tcp
	BindTo    string    // auto, core or none (bind.go); "" from an older submitter: auto
	Grace     time.Duration
	// FT (golaunch --ft): a rank's failure does not abort the job. The submitter tells
	// every agent (fProcFailed), which tells its ranks and fences without the rank.
	FT bool `json:",omitempty"`
	// Spawns are the groups of ranks spawned into the job so far (grow.go), and Store
	// the job's published values, for an agent that joins the job after its start.
	Spawns []pmi.SpawnGroup          `json:",omitempty"`
	Store  map[int]map[string][]byte `json:",omitempty"`
	Failed []int                     `json:",omitempty"` // --ft: the ranks that failed before, for such an agent
	// Addrs is the control address of each roster host: where an agent fetches the puts
	// that another host's ranks made in a barrier fence (fetch.go).
	Addrs []string `json:",omitempty"`
	// Rounds is the number of job-wide fences completed, for an agent that joins the job
	// after its start: its Exchange counts from there.
	Rounds int `json:",omitempty"`
	// Fanout is the agent tree's (treespec.go): an agent passes the spec on to its
	// children in the tree. 0: every agent had it from the submitter.
	Fanout int `json:",omitempty"`
}

func (s *jobSpec) check() error {
	if s.ID == "" || s.Program == "" || len(s.Secret) < 16 {
		return fmt.Errorf("job without id, program or secret")
	}
	if err := s.Roster.Check(); err != nil {
		return err
	}
	if s.Node < 0 || s.Node >= len(s.Roster.Hosts) {
		return fmt.Errorf("job names host index %d of %d", s.Node, len(s.Roster.Hosts))
	}
	if s.Addrs != nil && len(s.Addrs) != len(s.Roster.Hosts) {
		return fmt.Errorf("job names %d control addresses for %d hosts", len(s.Addrs), len(s.Roster.Hosts))
	}
	if s.Grace < 0 || s.Grace > time.Hour {
		return fmt.Errorf("grace %v out of range", s.Grace)
	}
	if err := s.checkApps(); err != nil {
		return err
	}
	if s.BindTo == "" {
		s.BindTo = BindAuto
	}
	return checkBindTo(s.BindTo)
}

// appSpec is one program of an MPMD job.
type appSpec struct {
	Program string   // path, or a name looked up in the agent's PATH
	Args    []string // arguments after the program
	Env     []string // its own -x variables, after the job's
	Ranks   int      // its ranks, which follow those of the programs before it
}

func (s *jobSpec) checkApps() error {
	if s.Apps == nil {
		return nil
	}
	n := 0
	for i, a := range s.Apps {
		if a.Program == "" || a.Ranks < 1 {
			return fmt.Errorf("program %d of the job: %q with %d ranks", i, a.Program, a.Ranks)
		}
		n += a.Ranks
	}
	if n != s.Roster.Size {
		return fmt.Errorf("the job's programs have %d ranks in all, its roster %d", n, s.Roster.Size)
	}
	if s.Apps[0].Program != s.Program {
		return fmt.Errorf("the job's first program is %q and %q", s.Program, s.Apps[0].Program)
	}
	return nil
}

// appOf returns the index of rank's program among the job's (0 without Apps): the
// rank's MPI_APPNUM.
func (s *jobSpec) appOf(rank int) int {
	for i, a := range s.Apps {
		if rank < a.Ranks {
			return i
		}
		rank -= a.Ranks
	}
	return 0
}

type rejectMsg struct {
	Usage bool // the user's mistake (program not found): exit 2
	Msg   string
}

type startedMsg struct {
	Rank, Pid int
	CPUs      []int `json:",omitempty"` // the processors it is bound to; nil: unbound
	HostCPUs  int   `json:",omitempty"` // the processors its agent may use
}

type rankMsg struct{ Rank int }

// fenceMsg is a spawned rank's first fence, its group's (fSpawnSync): its puts.
type fenceMsg struct {
	Rank int
	Puts map[string][]byte `json:",omitempty"`
}

type abortReqMsg struct {
	Rank, Code int
	Msg        string
}

// exitMsg reports how a rank ended.
type exitMsg struct {
	Rank, Pid int
	Code      int    // exit code, or -1 when killed by a signal
	Signal    int    // the signal that killed it, or 0
	Finalized bool   // it called Finalize
	Connected bool   // it reached PMI init
	Err       string // it could not be started at all
	OwnSignal bool   // the signal that killed it came from its agent (an abort or a forwarded Ctrl-C)
	Early     bool   // it ended before its agent heard of the job's abort
	Panic     string `json:",omitempty"` // the first line of a Go panic in its stderr, when it exited 2 or of SIGABRT after one
	// PeerFailed: its stderr named another rank's failure in the runtime's words ("rank 1
	// on host vm is gone: ..."), before any panic: its end is a consequence of that failure.
	PeerFailed bool `json:",omitempty"`
	// ObsLost is what it could not write of its observation (--profile, --trace), in its
	// own words (keyObserveLost).
	ObsLost string `json:",omitempty"`
	// TraceRing is the copy its agent wrote of its flight recorder's ring file, as it
	// ended without Finalize; Trace is its timeline's file (GORMA_TRACE). timeline.go.
	TraceRing string `json:",omitempty"`
	Trace     string `json:",omitempty"`
}

type abortMsg struct {
	Kind  int // pmi.EventKind
	Rank  int
	Host  string
	Code  int
	Cause string
}

// procFailedMsg names a failed rank of a fault-tolerant job: the pmi.ProcFailed event
// its agent gives every rank.
type procFailedMsg struct {
	Rank  int
	Host  string
	Code  int    // the exit code golaunch would report for it
	Cause string // "rank 3 (host h1, pid 1234) killed by signal 9 (SIGKILL)"
}

// hostFailedMsg names the ranks of a lost agent of a fault-tolerant job, in one frame
// per surviving agent rather than one per rank. The agent gives every rank one
// pmi.ProcFailed event per failed rank, whose cause is rankLabel(rank, Host, pid) + "
// lost: " + Why, as the submitter's line on stderr says.
type hostFailedMsg struct {
	Host  string
	Ranks []int
	Pids  []int // by Ranks' index; 0 where the rank's pid was never reported
	Code  int   // the exit code golaunch would report for each
	Why   string
}

type signalMsg struct{ Signal int }

type reportReqMsg struct{ Stacks bool }

type reportMsg struct {
	Rank int
	Text string // hang.AppendReport's text
}

// outputHeader is the binary header of an fOutput payload: rank u32, stream u8.
const outputHeader = 5

func encodeOutput(rank, stream int, data []byte) []byte {
	b := make([]byte, outputHeader+len(data))
	binary.BigEndian.PutUint32(b, uint32(rank))
	b[4] = byte(stream)
	copy(b[outputHeader:], data)
	return b
}

func decodeOutput(p []byte) (rank, stream int, data []byte, err error) {
	if len(p) < outputHeader {
		return 0, 0, nil, fmt.Errorf("output frame of %d bytes", len(p))
	}
	rank, stream = int(binary.BigEndian.Uint32(p)), int(p[4])
	if stream != 1 && stream != 2 {
		return 0, 0, nil, fmt.Errorf("output frame for stream %d", stream)
	}
	return rank, stream, p[outputHeader:], nil
}

// decodeBody decodes a frame's JSON payload into the message type of t; frames without
// a JSON body (output, stdin, ready, start, ...) decode to nil.
func decodeBody(t frameType, p []byte) (any, error) {
	var v any
	switch t {
	case fJob, fTreeSpec:
		spec := new(jobSpec)
		if err := spec.UnmarshalBinary(p); err != nil {
			return nil, fmt.Errorf("%v frame: %w", t, err)
		}
		return spec, nil
	case fReject:
		v = new(rejectMsg)
	case fStarted:
		v = new(startedMsg)
	case fInit:
		v = new(rankMsg)
	case fFence:
		v = new(agentFenceMsg)
	case fFenceDone:
		return decodeFenceDone(p)
	case fFenceRef, fFenceAsk:
		return decodeFenceRound(t, p)
	case fTreeFence:
		return decodeTreeFence(p)
	case fAbortReq:
		v = new(abortReqMsg)
	case fExit:
		v = new(exitMsg)
	case fAbort:
		v = new(abortMsg)
	case fSignal:
		v = new(signalMsg)
	case fReportReq:
		v = new(reportReqMsg)
	case fReport:
		v = new(reportMsg)
	case fProcFailed:
		v = new(procFailedMsg)
	case fHostFailed:
		v = new(hostFailedMsg)
	case fJobTree:
		v = new(jobTreeMsg)
	case fSpawnReq:
		v = new(spawnReqMsg)
	case fSpawn:
		v = new(spawnMsg)
	case fSpawnSync:
		v = new(fenceMsg)
	case fSpawnDone:
		v = new(spawnDoneMsg)
	case fSpawnAns:
		v = new(spawnReplyMsg)
	case fFetch:
		v = new(fetchMsg)
	case fFetchAns:
		v = new(fetchAnsMsg)
	case fOutput, fStdin:
		return nil, nil
	case fReady, fStart, fStdinAck, fStdinEOF, fDone, fPing:
		if len(p) != 0 {
			return nil, fmt.Errorf("%v frame with a %d-byte body", t, len(p))
		}
		return nil, nil
	default:
		return nil, fmt.Errorf("unknown %v", t)
	}
	if err := json.Unmarshal(p, v); err != nil {
		return nil, fmt.Errorf("%v frame: %w", t, err)
	}
	return v, nil
}

// ctlConn is an authenticated control connection. send may be called from any goroutine
// (each frame is written whole under mu); recv only from the one reader goroutine, which
// owns the returned payload until its next recv; silence from any goroutine.
type ctlConn struct {
	c    net.Conn
	rd   cipher.AEAD // opens received frames (nil: plain frames, in tests)
	rseq uint64      // next received frame's sequence number
	hdr  [5]byte     // recv's header buffer

	// waitingSince is when the reader began waiting for the frame it waits for now (unix
	// ns; 0 while it is not in recv): the peer's silence, written by the reader only.
	waitingSince atomic.Int64

	mu   sync.Mutex  // serializes frame writes and guards wseq
	wr   cipher.AEAD // seals sent frames (nil: plain)
	wseq uint64
}

// gcmNonce is a frame's nonce: its sequence number (each direction has its own key).
func gcmNonce(seq uint64) []byte {
	var n [12]byte
	binary.BigEndian.PutUint64(n[4:], seq)
	return n[:]
}

// Back-off between tries of a shed handshake: shedBackoffMin after the first, doubling
// up to shedBackoffMax, each with up to half again of random jitter.
const (
	shedBackoffMin = 20 * time.Millisecond
	shedBackoffMax = 500 * time.Millisecond
)

// dialControl connects to an agent's control address and authenticates, each handshake
// within tm.handshake. A handshake that the agent shed (closed before its reply) is tried
// again after a back-off, until tm.dial plus tm.handshake from the first try.
func dialControl(addr string, key []byte, tm ctlTiming) (*ctlConn, error) {
	timeout := tm.dial
	start := time.Now()
	end := start.Add(timeout + tm.handshake)
	var backoff time.Duration
	for tries := 1; ; tries++ {
		cc, err := dialOnce(addr, key, min(timeout, time.Until(end)), tm.handshake)
		if err != nil && tries > 1 && isTimeout(err) && !time.Now().Before(end) {
			// The back-off left this try too little time: the agent's sheds are the cause.
			return nil, fmt.Errorf("%w: %w %d times in %v, then the last try ran out of time (%v); a flood "+
				"of connections may hold its control port (see the agent's log)", errAuth, errShed, tries-1,
				time.Since(start).Round(time.Millisecond), err)
		}
		if err == nil || !errors.Is(err, errShed) {
			return cc, err
		}
		backoff = min(max(2*backoff, shedBackoffMin), shedBackoffMax)
		wait := backoff + randDuration(backoff/2)
		if time.Now().Add(wait).After(end) {
			return nil, fmt.Errorf("%w: %w %d times in %v; a flood of connections may hold its control port "+
				"(see the agent's log)", errAuth, errShed, tries, time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(wait)
	}
}

// dialOnce connects to addr within timeout and runs one handshake within handshake.
func dialOnce(addr string, key []byte, timeout, handshake time.Duration) (*ctlConn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(handshake))
	cc, err := clientHandshake(c, key)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return cc, nil
}

// randDuration returns a random duration in [0, d).
func randDuration(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	var b [8]byte
	rand.Read(b[:])
	return time.Duration(binary.BigEndian.Uint64(b[:]) % uint64(d))
}

// isTimeout reports whether err is a deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// send writes one frame with body v (JSON), or raw bytes when v is a []byte, or no body
// when v is nil.
func (cc *ctlConn) send(t frameType, v any) error {
	var body []byte
	switch b := v.(type) {
	case nil:
	case []byte:
		body = b
	case encoding.BinaryMarshaler: // the job's spec (specwire.go)
		var err error
		if body, err = b.MarshalBinary(); err != nil {
			return fmt.Errorf("encode %v: %w", t, err)
		}
	default:
		var err error
		if body, err = json.Marshal(v); err != nil {
			return fmt.Errorf("encode %v: %w", t, err)
		}
	}
	if len(body) > maxFrame {
		return fmt.Errorf("%v frame of %d bytes exceeds %d", t, len(body), maxFrame)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	n := len(body)
	if cc.wr != nil {
		n += cc.wr.Overhead()
	}
	buf := make([]byte, 5, 5+n)
	binary.BigEndian.PutUint32(buf, uint32(n))
	buf[4] = byte(t)
	if cc.wr != nil {
		buf = cc.wr.Seal(buf, gcmNonce(cc.wseq), body, buf[:5])
		cc.wseq++
	} else {
		buf = append(buf, body...)
	}
	_, err := cc.c.Write(buf)
	return err
}

// recv reads and opens the next frame that is not a ping.
func (cc *ctlConn) recv() (frameType, []byte, error) {
	defer cc.waitingSince.Store(0)
	for {
		cc.waitingSince.Store(time.Now().UnixNano())
		t, p, err := cc.recvOne()
		if err != nil || t != fPing {
			return t, p, err
		}
		if len(p) != 0 {
			return 0, nil, fmt.Errorf("%v frame with a %d-byte body", t, len(p))
		}
	}
}

// recvOne reads and opens one frame.
func (cc *ctlConn) recvOne() (frameType, []byte, error) {
	t, p, err := readFrame(cc.c, cc.hdr[:])
	if err != nil || cc.rd == nil {
		return t, p, err
	}
	p, err = cc.rd.Open(p[:0], gcmNonce(cc.rseq), p, cc.hdr[:5])
	if err != nil {
		return 0, nil, fmt.Errorf("%v frame failed authentication", t)
	}
	cc.rseq++
	return t, p, nil
}

// readFrame reads one frame from r using hdr (5 bytes) as scratch.
func readFrame(r io.Reader, hdr []byte) (frameType, []byte, error) {
	if _, err := io.ReadFull(r, hdr[:5]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr)
	t := frameType(hdr[4])
	if n > maxFrame+64 { // room for a seal's tag
		return 0, nil, fmt.Errorf("%v frame of %d bytes exceeds %d", t, n, maxFrame)
	}
	if t == 0 || t >= fTypeEnd {
		return 0, nil, fmt.Errorf("unknown %v", t)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, fmt.Errorf("%v frame: %w", t, noEOF(err))
	}
	return t, p, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (cc *ctlConn) close() error { return cc.c.Close() }
