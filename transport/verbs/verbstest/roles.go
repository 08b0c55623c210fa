package verbstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// The roles helper processes play. Each opens its own device with the Factory's
// configuration, so the processes share nothing but the provider (and its options, such as
// a secret, which Factory.Config returns alike in every process).
func init() {
	roles["target"] = roleTarget
	roles["fetchadd"] = roleFetchAdd
	roles["writer"] = roleWriter
}

const (
	targetLen = 2 << 20 // bytes of each memory region a target exposes
	recvSlots = 128     // receives a target keeps posted
	msgSlot   = 8 << 10 // bytes per receive
)

// open opens a device in a helper process.
func (c *child) open(name string) (*node, error) {
	cfg := factoryConfig(c.f, fmt.Sprintf("%s[pid %d]", name, os.Getpid()))
	dev, err := verbs.Open(c.f.Provider, cfg)
	if err != nil {
		return nil, err
	}
	pd, err := dev.AllocPD()
	if err != nil {
		dev.Close()
		return nil, err
	}
	return &node{name: name, dev: dev, pd: pd}, nil
}

// endpoint creates a QP with its own CQ, in Init.
func (c *child) endpoint(n *node, o qpOpts) (*end, error) {
	cq, err := n.dev.CreateCQ(cqDepth)
	if err != nil {
		return nil, err
	}
	qp, err := n.pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq, MaxSendWR: o.sendWR, MaxRecvWR: o.recvWR})
	if err != nil {
		return nil, err
	}
	if err := qp.ToInit(); err != nil {
		return nil, err
	}
	return &end{node: n, cq: &cqBuf{name: "helper", node: n, cq: cq}, qp: qp}, nil
}

// connect reads the parent's CONNECT line, connects x, says READY and returns the
// remaining fields of the CONNECT line.
func (c *child) connect(x *end) ([]string, error) {
	args, err := c.expect("CONNECT")
	if err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, errors.New("CONNECT without an endpoint")
	}
	ep, err := unhex(args[0])
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.ctx, waitTimeout)
	defer cancel()
	if err := verbs.Connect(ctx, x.qp, ep); err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	c.say("READY")
	return args[1:], nil
}

// roleTarget exposes an arena MR (and a user-memory MR if the provider can take RDMA on
// one), keeps receives posted, and answers the parent's commands about its memory and the
// messages it got:
//
//	FILL region off n seed    → OK           fill with the pattern of seed
//	CHECK region off n seed   → CHECK ok|... compare with the pattern of seed
//	GET64 region off          → VAL v
//	PUT64 region off v        → OK
//	MSGS n                    → MSGS len:imm:hasImm:hash ... of the first n messages
//	ECHO n                    → ECHOED ok|...  send n messages (echoMsg) to the parent
//	QUIT
func roleTarget(c *child) error {
	n, err := c.open("target")
	if err != nil {
		return err
	}
	defer n.dev.Close()
	x, err := c.endpoint(n, qpOpts{sendWR: 64, recvWR: recvSlots})
	if err != nil {
		return err
	}
	regions := map[string][]byte{}
	arena, err := n.pd.AllocMR(targetLen, verbs.AccessAll)
	if err != nil {
		return err
	}
	regions["arena"] = arena.Bytes()
	var userKey, userLen uint64
	if n.dev.Caps().Has(verbs.CapUserMemRDMA) {
		access := verbs.LocalWrite | verbs.RemoteRead | verbs.RemoteWrite
		if n.dev.Caps().Has(verbs.CapUserMemAtomic) {
			access |= verbs.RemoteAtomic
		}
		buf := make([]byte, targetLen)
		mr, err := n.pd.RegMR(buf, access)
		if err != nil {
			return fmt.Errorf("RegMR: %w", err)
		}
		regions["user"], userKey, userLen = buf, mr.RKey(), targetLen
	}
	recvMR, err := n.pd.AllocMR(recvSlots*msgSlot, verbs.LocalWrite)
	if err != nil {
		return err
	}
	slot := func(i uint64) []byte { return recvMR.Bytes()[i*msgSlot : (i+1)*msgSlot] }
	for i := range uint64(recvSlots) {
		wr := verbs.RecvWR{WRID: i, Local: slot(i), LKey: recvMR.LKey()}
		if err := x.qp.PostRecv(&wr); err != nil {
			return fmt.Errorf("post receive %d: %w", i, err)
		}
	}
	c.say("HELLO", hexOf(x.qp.Endpoint()), arena.RKey(), targetLen, userKey, userLen)
	if _, err := c.connect(x); err != nil {
		return err
	}
	msgs := make(chan string, 1<<16)
	sends := make(chan verbs.WC, 1<<10)
	go targetPump(c.ctx, x, slot, recvMR.LKey(), msgs, sends)
	var got []string
	for {
		cmd, err := c.next()
		if err != nil {
			return err
		}
		if len(cmd) == 0 {
			continue
		}
		switch cmd[0] {
		case "QUIT":
			return nil
		case "MSGS":
			want := atoi(cmd, 1)
			deadline := time.After(waitTimeout)
			for len(got) < want {
				select {
				case m := <-msgs:
					got = append(got, m)
				case <-deadline:
					want = len(got)
				}
			}
			c.say(append([]any{"MSGS"}, anys(got[:want])...)...)
			got = got[want:]
		case "ECHO":
			c.say("ECHOED", echo(c.ctx, n, x, atoi(cmd, 1), sends))
		default:
			reply, err := memCommand(cmd, regions)
			if err != nil {
				return err
			}
			c.say(reply...)
		}
	}
}

// targetPump polls the target's CQ until ctx ends: receives are described on msgs and
// reposted, send completions go to sends.
func targetPump(ctx context.Context, x *end, slot func(uint64) []byte, lkey uint64, msgs chan<- string, sends chan<- verbs.WC) {
	var wcs [32]verbs.WC
	for ctx.Err() == nil {
		k, err := x.cq.cq.Poll(wcs[:])
		if err != nil {
			msgs <- "poll-error"
			return
		}
		for _, wc := range wcs[:k] {
			if wc.Op != verbs.WCRecv && wc.Op != verbs.WCRecvRDMAWithImm {
				sends <- wc
				continue
			}
			if wc.Status != verbs.Success {
				msgs <- "status-" + wc.Status.String()
				continue
			}
			b := slot(wc.WRID)[:min(int(wc.ByteLen), msgSlot)]
			msgs <- fmt.Sprintf("%d:%d:%v:%x", wc.ByteLen, wc.Imm, wc.HasImm, hash64(b))
			wr := verbs.RecvWR{WRID: wc.WRID, Local: slot(wc.WRID), LKey: lkey}
			if err := x.qp.PostRecv(&wr); err != nil {
				msgs <- "repost-error"
			}
		}
		if k == 0 {
			wctx, cancel := context.WithTimeout(ctx, time.Millisecond)
			_ = x.cq.cq.Wait(wctx)
			cancel()
		}
	}
}

// echoMsg is the i-th message a target sends back: its length, immediate and content seed.
func echoMsg(i int) (n int, imm uint32, seed uint64) {
	return (i*131)%4096 + 1, uint32(1000 + i), uint64(500 + i)
}

// echo sends n echo messages to the parent and waits for their completions.
func echo(ctx context.Context, nd *node, x *end, n int, sends <-chan verbs.WC) string {
	mr, err := nd.pd.AllocMR(n*4096, verbs.LocalWrite)
	if err != nil {
		return "AllocMR: " + err.Error()
	}
	for i := range n {
		l, imm, seed := echoMsg(i)
		b := mr.Bytes()[i*4096 : i*4096+l]
		fill(b, seed)
		wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpSendWithImm, Flags: verbs.Signaled, Imm: imm, Local: b, LKey: mr.LKey()}
		if err := x.qp.PostSend(&wr); err != nil {
			return fmt.Sprintf("post echo %d: %v", i, err)
		}
	}
	for i := range n {
		select {
		case wc := <-sends:
			if wc.Status != verbs.Success || wc.WRID != uint64(i) {
				return fmt.Sprintf("echo %d completed as %s", i, fmtWC(wc))
			}
		case <-time.After(waitTimeout):
			return fmt.Sprintf("echo %d: no completion within %v", i, waitTimeout)
		case <-ctx.Done():
			return "cancelled"
		}
	}
	return "ok"
}

// memCommand runs FILL, CHECK, GET64 or PUT64 on a region.
func memCommand(cmd []string, regions map[string][]byte) ([]any, error) {
	if len(cmd) < 3 {
		return nil, fmt.Errorf("bad command %q", cmd)
	}
	mem, ok := regions[cmd[1]]
	if !ok {
		return nil, fmt.Errorf("no region %q", cmd[1])
	}
	off := atoi(cmd, 2)
	switch cmd[0] {
	case "FILL":
		fill(mem[off:off+atoi(cmd, 3)], uint64(atoi(cmd, 4)))
		return []any{"OK"}, nil
	case "CHECK":
		n := atoi(cmd, 3)
		if d := diff(mem[off:off+n], patterned(n, uint64(atoi(cmd, 4)))); d != "" {
			return []any{"CHECK", d}, nil
		}
		return []any{"CHECK", "ok"}, nil
	case "GET64":
		return []any{"VAL", get64(mem[off:])}, nil
	case "PUT64":
		put64(mem[off:], parseU64(cmd, 3))
		return []any{"OK"}, nil
	}
	return nil, fmt.Errorf("unknown command %q", cmd)
}

// roleFetchAdd connects to the parent's word (CONNECT ep rkey off n), waits for GO, runs n
// fetch-adds of 1 and reports the fetched values (OLDS v,v,...).
func roleFetchAdd(c *child) error {
	n, err := c.open("fetchadd")
	if err != nil {
		return err
	}
	defer n.dev.Close()
	x, err := c.endpoint(n, qpOpts{sendWR: 32})
	if err != nil {
		return err
	}
	c.say("HELLO", hexOf(x.qp.Endpoint()))
	args, err := c.connect(x)
	if err != nil {
		return err
	}
	if _, err := c.expect("GO"); err != nil {
		return err
	}
	olds, err := faWorker(x, parseU64(args, 0), parseU64(args, 1), atoi(args, 2), 8)
	if err != nil {
		return err
	}
	s := make([]string, len(olds))
	for i, v := range olds {
		s[i] = strconv.FormatUint(v, 10)
	}
	c.say("OLDS", strings.Join(s, ","))
	_, err = c.expect("QUIT")
	return err
}

// roleWriter connects to the parent's MR (CONNECT ep rkey len) and writes into it without
// pause until it is killed, saying STREAMING once writes are flowing. It exposes an MR of
// its own (HELLO ep rkey len) that the parent may target.
func roleWriter(c *child) error {
	n, err := c.open("writer")
	if err != nil {
		return err
	}
	defer n.dev.Close()
	x, err := c.endpoint(n, qpOpts{sendWR: 64})
	if err != nil {
		return err
	}
	own, err := n.pd.AllocMR(1<<20, verbs.AccessAll)
	if err != nil {
		return err
	}
	c.say("HELLO", hexOf(x.qp.Endpoint()), own.RKey(), 1<<20)
	args, err := c.connect(x)
	if err != nil {
		return err
	}
	rkey, size := parseU64(args, 0), atoi(args, 1)
	const chunk = 64 << 10
	src, err := n.pd.AllocMR(chunk, verbs.LocalWrite)
	if err != nil {
		return err
	}
	fill(src.Bytes(), 99)
	var wcs [32]verbs.WC
	outstanding, done, said := 0, 0, false
	for i := 0; c.ctx.Err() == nil; {
		for outstanding < 32 {
			wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.Bytes(),
				LKey: src.LKey(), Remote: verbs.RemoteAddr{RKey: rkey, Offset: uint64((i * chunk) % (size - chunk + 1))}}
			if err := x.qp.PostSend(&wr); err != nil {
				return fmt.Errorf("post write %d: %w", i, err)
			}
			outstanding++
			i++
		}
		k, err := x.cq.cq.Poll(wcs[:])
		if err != nil {
			return err
		}
		for _, wc := range wcs[:k] {
			outstanding--
			if wc.Status != verbs.Success {
				return fmt.Errorf("write completed as %s", fmtWC(wc))
			}
			done++
		}
		if done >= 64 && !said {
			c.say("STREAMING")
			said = true
		}
	}
	return nil
}

func atoi(fields []string, i int) int { return int(parseU64(fields, i)) }

// parseU64 parses fields[i]; malformed input from the other process yields 0, which the
// checks then report.
func parseU64(fields []string, i int) uint64 {
	if i >= len(fields) {
		return 0
	}
	v, _ := strconv.ParseUint(fields[i], 10, 64)
	return v
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
