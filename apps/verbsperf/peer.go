package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs/idlewatch"
	"github.com/gorma-hpc/gorma/transport/verbs/tcp"
)

// The parent runs the benchmark; the peer is the same program re-executed with the hidden
// --peer flag. They talk over the peer's stdin (commands) and stdout (replies), one JSON
// message a line. Benchmark traffic never goes through this channel: it only sets up
// sessions and starts the peer's half of ping-pong loops.

// secretEnv carries the per-run secret for authenticating providers (tcp) to the peer.
const secretEnv = "VERBSPERF_SECRET"

// flagFD is the descriptor number of the flag ping-pong memfd in the peer (ExtraFiles[0]).
const flagFD = 3

// msg is a command or a reply on the control channel. Replies have Op "ok" or Err set.
type msg struct {
	Op       string `json:"op"`
	Err      string `json:"err,omitempty"`
	Provider string `json:"provider,omitempty"`
	Wait     int    `json:"wait,omitempty"`
	MaxSize  int    `json:"max_size,omitempty"`
	Endpoint []byte `json:"endpoint,omitempty"`
	BufKey   uint64 `json:"buf_key,omitempty"`
	AtomKey  uint64 `json:"atom_key,omitempty"`
	Size     int    `json:"size,omitempty"`
	Iters    int    `json:"iters,omitempty"`
	Seq      uint64 `json:"seq,omitempty"`
	Addr     string `json:"addr,omitempty"`
	Total    int64  `json:"total,omitempty"`
}

// ctlConn is one end of the control channel.
type ctlConn struct {
	enc *json.Encoder
	dec *json.Decoder
}

func newCtlConn(r io.Reader, w io.Writer) *ctlConn {
	return &ctlConn{enc: json.NewEncoder(w), dec: json.NewDecoder(bufio.NewReader(r))}
}

func (c *ctlConn) send(m msg) error { return c.enc.Encode(&m) }

func (c *ctlConn) recv() (msg, error) {
	var m msg
	err := c.dec.Decode(&m)
	return m, err
}

// peerProc is the parent's handle on the peer process.
type peerProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	ctl     *ctlConn
	pending string // op whose reply has not been read
}

// startPeer re-executes this program as the peer. flag is the memfd of the flag ping-pong
// floor; secret authenticates provider connections; watch, if not nil, is the peer's
// idle-role watch (watch.go), closed here once the peer has it.
func startPeer(secret []byte, flag *os.File, watch *idlewatch.Files, stderr io.Writer) (*peerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable to start the peer: %w", err)
	}
	cmd := exec.Command(exe, "--peer")
	cmd.Env = append(os.Environ(), secretEnv+"="+hex.EncodeToString(secret))
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{flag}
	if watch != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, watch.Page, watch.Bell) // watchFDs
		cmd.Env = append(cmd.Env, watchEnv+"=1")
		defer closeWatch(watch)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start peer: %w", err)
	}
	p := &peerProc{cmd: cmd, stdin: stdin, ctl: newCtlConn(stdout, stdin)}
	if _, err := p.call(msg{Op: "hello"}); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// start sends a command without waiting for its reply.
func (p *peerProc) start(m msg) error {
	if p.pending != "" {
		return fmt.Errorf("peer: command %q sent while %q is unanswered", m.Op, p.pending)
	}
	if err := p.ctl.send(m); err != nil {
		return fmt.Errorf("peer: send %s: %w", m.Op, err)
	}
	p.pending = m.Op
	return nil
}

// wait reads the reply of the pending command.
func (p *peerProc) wait() (msg, error) {
	op := p.pending
	p.pending = ""
	r, err := p.ctl.recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("peer exited")
		}
		return msg{}, fmt.Errorf("peer: %s: %w", op, err)
	}
	if r.Err != "" {
		return msg{}, fmt.Errorf("peer: %s: %s", op, r.Err)
	}
	return r, nil
}

// call sends a command and waits for its reply.
func (p *peerProc) call(m msg) (msg, error) {
	if err := p.start(m); err != nil {
		return msg{}, err
	}
	return p.wait()
}

// stop asks the peer to quit, and kills it if it does not within a few seconds (it may be
// stuck in a loop the parent abandoned).
func (p *peerProc) stop() {
	if p.pending == "" {
		_ = p.ctl.send(msg{Op: "quit"})
	}
	p.stdin.Close()
	done := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// runPeer is the peer's main loop: it answers commands until told to quit or until its
// stdin closes.
func runPeer(in io.Reader, out io.Writer) error {
	c := newCtlConn(in, out)
	ps := &peerState{}
	defer ps.close()
	for {
		m, err := c.recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("peer: read command: %w", err)
		}
		reply, err := ps.handle(m)
		if err != nil {
			reply = msg{Op: m.Op, Err: err.Error()}
		} else if reply.Op == "" {
			reply.Op = "ok"
		}
		if err := c.send(reply); err != nil {
			return fmt.Errorf("peer: reply to %s: %w", m.Op, err)
		}
		if m.Op == "quit" {
			return nil
		}
	}
}

// peerState is what the peer holds between commands.
type peerState struct {
	s          *session
	floor      floorPeer
	watchTaken bool // the tcp device took the watch the parent passed (watch.go)
}

func (ps *peerState) close() {
	ps.s.close()
	ps.floor.close()
}

// handle runs one command and returns its reply.
func (ps *peerState) handle(m msg) (msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	switch m.Op {
	case "hello", "quit":
		return msg{}, nil
	case "open":
		return ps.open(m)
	case "connect":
		if ps.s == nil {
			return msg{}, errors.New("connect before open")
		}
		return msg{}, ps.s.connect(ctx, endpointInfo{Endpoint: m.Endpoint, BufKey: m.BufKey, AtomKey: m.AtomKey})
	case "close":
		err := ps.s.close()
		ps.s = nil
		return msg{}, err
	case "write_pp", "send_pp":
		if ps.s == nil {
			return msg{}, errors.New(m.Op + " without a session")
		}
		if m.Op == "write_pp" {
			return msg{}, peerWritePingPong(ctx, ps.s, m.Size, m.Iters, m.Seq)
		}
		return msg{}, peerSendPingPong(ctx, ps.s, m.Size, m.Iters)
	case "flag_pp", "tcp_dial", "tcp_echo", "tcp_sink":
		return msg{}, ps.floor.handle(ctx, m)
	}
	return msg{}, fmt.Errorf("unknown command %q", m.Op)
}

func (ps *peerState) open(m msg) (msg, error) {
	if ps.s != nil {
		ps.s.close()
		ps.s = nil
	}
	secret, err := hex.DecodeString(os.Getenv(secretEnv))
	if err != nil {
		return msg{}, fmt.Errorf("bad %s: %w", secretEnv, err)
	}
	cfg := peerConfig(m, secret)
	if iw := ps.peerWatch(m.Provider); iw != nil {
		o, _ := cfg.Provider.(tcp.Options)
		o.IdleWatch = iw
		cfg.Provider = o
	}
	s, err := openSession(m.Provider, cfg, m.MaxSize)
	if err != nil {
		return msg{}, err
	}
	ps.s = s
	info := s.info()
	return msg{Endpoint: info.Endpoint, BufKey: info.BufKey, AtomKey: info.AtomKey}, nil
}
