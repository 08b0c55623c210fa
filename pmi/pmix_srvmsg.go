package pmi

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// The bodies of the PMIx messages golaunch's server reads and writes (pmix_server.go).
// Every parser takes the body after the command and returns an error that wraps
// ErrProtocol.

// PMIx commands the server takes besides the client's (pmix_wire.go).
const (
	pmixCmdPublish     = 6
	pmixCmdSpawn       = 9 // PMIX_SPAWNNB_CMD
	pmixCmdRegEvents   = 13
	pmixCmdDeregEvents = 14
	pmixCmdJobControl  = 18
	pmixCmdMax         = 40 // commands above are unknown to PMIx 4.x and 5.x
)

// pmixCmdNames names the commands in errors and logs.
var pmixCmdNames = map[byte]string{
	pmixCmdReq: "job data", pmixCmdAbort: "abort", pmixCmdCommit: "commit", pmixCmdFence: "fence",
	pmixCmdGet: "get", pmixCmdFinalize: "finalize", pmixCmdPublish: "publish", 7: "lookup",
	8: "unpublish", pmixCmdSpawn: "spawn", 10: "connect", 11: "disconnect", 12: "notify",
	pmixCmdRegEvents: "register events", pmixCmdDeregEvents: "deregister events", 15: "query",
	16: "log", 17: "allocate", pmixCmdJobControl: "job control", 19: "monitor",
}

func pmixCmdName(c byte) string {
	if n, ok := pmixCmdNames[c]; ok {
		return n
	}
	return "command " + strconv.Itoa(int(c))
}

// PMIx statuses the server answers with.
const (
	pmixErrNoPerm       = -23
	pmixErrBadParam     = -27
	pmixErrInvalidNS    = -44
	pmixErrNotFound     = -46
	pmixErrNotSupported = -47
)

// Scopes of committed data (pmix_scope_t).
const (
	pmixScopeLocal  = 1 // for ranks on the committer's node
	pmixScopeRemote = 2 // for ranks on other nodes
)

// Job-data keys the server writes besides the client's (pmix_msg.go).
const (
	pmixKeySrvNspace  = "pmix.srv.nspace"
	pmixKeySrvRank    = "pmix.srv.rank"
	pmixKeyJobID      = "pmix.jobid"
	pmixKeyOffset     = "pmix.offset"
	pmixKeyNApps      = "pmix.job.napps"
	pmixKeyMaxSize    = "pmix.max.size"
	pmixKeyNodeList   = "pmix.nlist"
	pmixKeySessionArr = "pmix.ssn.arr"
	pmixKeySessionID  = "pmix.session.id"
	pmixKeyUnivSize   = "pmix.univ.size"
	pmixKeyNodeSize   = "pmix.node.size"
	pmixKeyLocalLdr   = "pmix.lldr"
	pmixKeyLocalSize  = "pmix.local.size"
	pmixKeyGlobalRank = "pmix.grank"
	pmixKeyLocalRank  = "pmix.lrank"
	pmixKeyNodeRank   = "pmix.nrank"
	pmixKeyAppNum     = "pmix.appnum"
	pmixKeyTopoXML    = "pmix.hwlocxml2"
	pmixKeyCleanFile  = "pmix.reg.cleanup"
	pmixKeyCleanDir   = "pmix.reg.cleanupdir"
	pmixKeyCleanRec   = "pmix.clnup.recurse"
)

// pmixConnect is what a client's connect message says.
type pmixConnect struct {
	sec      string // security module
	cred     []byte
	typ      byte // 0: a client the server launched
	nspace   string
	rank     uint32
	version  string
	bfrops   string
	bufType  byte
	gds      string
	uid, gid uint32 // from a native credential
}

// pmixMaxConnect bounds a connect message's body: names and a credential.
const pmixMaxConnect = 16 << 10

// parsePMIxConnectHdr reads the connect message's header: pindex -1, tag all ones, and
// the body's length in the client's byte order (little-endian on every host gorma runs
// on) in 8 bytes.
func parsePMIxConnectHdr(h []byte) (int, error) {
	if !bytes.Equal(h[:8], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
		return 0, fmt.Errorf("%w: a PMIx connect message starts with 8 bytes of 0xff, got % x", ErrProtocol, h[:8])
	}
	n := binary.LittleEndian.Uint64(h[8:16])
	if n > pmixMaxConnect {
		return 0, fmt.Errorf("%w: PMIx connect message of %d bytes (limit %d)", ErrProtocol, n, pmixMaxConnect)
	}
	return int(n), nil
}

// parsePMIxConnect reads a connect body (design.md, "The PMIx server"). It checks the
// layout only; the server checks what the fields say.
func parsePMIxConnect(b []byte) (pmixConnect, error) {
	var c pmixConnect
	r := &connReader{b: b}
	c.sec = r.cstr("security module")
	c.cred = r.bytes(int(r.be32("credential's length")), "credential")
	c.typ = r.byte("connection type")
	if r.err == nil && c.typ != 0 {
		return c, nil // a tool or a launcher: the server refuses it before reading further
	}
	c.nspace = r.cstr("namespace")
	c.rank = r.be32("rank")
	c.version = r.cstr("version")
	c.bfrops = r.cstr("bfrops module")
	c.bufType = r.byte("buffer type")
	c.gds = r.cstr("gds module")
	if r.err != nil {
		return c, r.err
	}
	if c.sec == pmixSecNative {
		if len(c.cred) != 8 {
			return c, fmt.Errorf("%w: PMIx connect: native credential of %d bytes, want 8 (uid, gid)", ErrProtocol, len(c.cred))
		}
		c.uid, c.gid = binary.LittleEndian.Uint32(c.cred), binary.LittleEndian.Uint32(c.cred[4:])
	}
	return c, nil
}

// connReader reads a connect body's fields; the first error sticks.
type connReader struct {
	b   []byte
	off int
	err error
}

func (r *connReader) need(n int, what string) bool {
	if r.err == nil && (n < 0 || len(r.b)-r.off < n) {
		r.err = fmt.Errorf("%w: PMIx connect: truncated in the %s", ErrProtocol, what)
	}
	return r.err == nil
}

func (r *connReader) cstr(what string) string {
	if r.err != nil {
		return ""
	}
	i := bytes.IndexByte(r.b[r.off:], 0)
	if i < 0 {
		r.err = fmt.Errorf("%w: PMIx connect: %s without its NUL", ErrProtocol, what)
		return ""
	}
	s := string(r.b[r.off : r.off+i])
	r.off += i + 1
	return s
}

func (r *connReader) be32(what string) uint32 {
	if !r.need(4, what) {
		return 0
	}
	r.off += 4
	return binary.BigEndian.Uint32(r.b[r.off-4:])
}

func (r *connReader) byte(what string) byte {
	if !r.need(1, what) {
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *connReader) bytes(n int, what string) []byte {
	if !r.need(n, what) {
		return nil
	}
	r.off += n
	return r.b[r.off-n : r.off]
}

// pmixModernBfrops are the buffer modules of PMIx 4.1 and later (OpenPMIx's
// src/mca/bfrops/AGENTS.md): they share one encoding, base-7 integers included, and differ
// only by the types each registers. The server reads and writes v41's types only; a value
// of a later type is a protocol error that names it.
var pmixModernBfrops = []string{"v41", "v51", "v61"}

// pmixBfropsOK reports whether a client's buffer module is one the server reads.
func pmixBfropsOK(m string) bool {
	for _, b := range pmixModernBfrops {
		if m == b {
			return true
		}
	}
	return false
}

// pmixAck is the server's answer to a connect: a status and the client's index, both
// big-endian.
func pmixAck(status int32, pindex uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(status))
	return binary.BigEndian.AppendUint32(b, pindex)
}

// pmixStatusBody is an answer that is a status alone.
func pmixStatusBody(st int32) []byte {
	var e pmixEnc
	e.count(1)
	e.ivar(int64(st))
	return e.b
}

// pmixReqCmd reads the command that starts a request.
func pmixReqCmd(b []byte) (byte, *pmixDec, error) {
	d := &pmixDec{b: b}
	d.count(1)
	c := d.u8()
	return c, d, d.err
}

// procs reads a packed count of procs: a size_t n, then n procs in one call.
func (d *pmixDec) procs() []pmixProc {
	d.count(1)
	n := d.n("process count", int64(d.uvar()), 2)
	if n == 0 || d.err != nil {
		return nil
	}
	d.count(n)
	out := make([]pmixProc, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.proc())
	}
	return out
}

// infos reads a packed count of infos: a size_t n, then n infos in one call.
func (d *pmixDec) infos() []pmixInfo {
	d.count(1)
	n := d.n("info count", int64(d.uvar()), 3)
	return d.infoCall(n)
}

func (d *pmixDec) infoCall(n int) []pmixInfo {
	if n == 0 || d.err != nil {
		return nil
	}
	d.count(n)
	out := make([]pmixInfo, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.info(0))
	}
	return out
}

// end fails unless the whole body was read.
func (d *pmixDec) end() {
	if d.err == nil && d.rest() != 0 {
		d.fail("%d bytes after the request", d.rest())
	}
}

// pmixFenceReq is a fence request: the processes it spans and its directives.
type pmixFenceReq struct {
	procs   []pmixProc
	collect bool
}

func parsePMIxFence(d *pmixDec) (pmixFenceReq, error) {
	var f pmixFenceReq
	f.procs = d.procs()
	for _, in := range d.infos() {
		if in.key == pmixKeyCollect && in.val.typ == pmixBool {
			f.collect = in.val.u != 0
		}
	}
	d.end()
	return f, d.err
}

// pmixGetReq asks for key of a process.
type pmixGetReq struct {
	proc pmixProc
	key  string
}

func parsePMIxGetReq(d *pmixDec) (pmixGetReq, error) {
	var g pmixGetReq
	d.count(1)
	g.proc.nspace = d.str()
	d.count(1)
	g.proc.rank = d.u32("rank")
	d.infos()
	d.count(1)
	g.key = d.str()
	d.end()
	return g, d.err
}

// pmixAbortReq is an abort: its status, message and the processes to abort (none: all).
type pmixAbortReq struct {
	code  int
	msg   string
	procs []pmixProc
}

func parsePMIxAbort(d *pmixDec) (pmixAbortReq, error) {
	var a pmixAbortReq
	d.count(1)
	c := d.ivar()
	if d.err == nil && (c < -1<<31 || c >= 1<<31) {
		d.fail("abort status %d does not fit 32 bits", c)
	}
	a.code = int(c)
	d.count(1)
	a.msg = d.str()
	a.procs = d.procs()
	d.end()
	return a, d.err
}

// parsePMIxRegEvents reads an event registration: codes, then directives.
func parsePMIxRegEvents(d *pmixDec) error {
	d.count(1)
	n := d.n("code count", int64(d.uvar()), 1)
	if n > 0 {
		d.count(n)
		for i := 0; i < n && d.err == nil; i++ {
			d.ivar()
		}
	}
	d.infos()
	d.end()
	return d.err
}

// pmixCleanup is a cleanup registration (job control): paths to remove when the job ends.
type pmixCleanup struct {
	files, dirs []string
	recurse     bool
}

// parsePMIxJobControl reads a job control request: target processes, then directives. It
// returns the cleanup registrations and whether the directives asked for anything else.
func parsePMIxJobControl(d *pmixDec) (pmixCleanup, bool, error) {
	var c pmixCleanup
	other := false
	d.procs()
	for _, in := range d.infos() {
		switch in.key {
		case pmixKeyCleanFile:
			c.files = append(c.files, strings.Split(in.val.str, ",")...)
		case pmixKeyCleanDir:
			c.dirs = append(c.dirs, strings.Split(in.val.str, ",")...)
		case pmixKeyCleanRec:
			c.recurse = in.val.u != 0
		default:
			other = true
		}
	}
	d.end()
	return c, other, d.err
}

// pmixRawKV is one committed key and its value, kept as the client packed it (the key,
// the type, the data) so that the server hands it on unchanged.
type pmixRawKV struct {
	key string
	raw []byte
}

// pmixBlock is one scope's part of a commit.
type pmixBlock struct {
	scope byte
	kvs   []pmixRawKV
}

// parsePMIxCommit reads a commit's blocks: per scope, the scope, the buffer type (the
// v4.1 wire's non-described buffers only) and a byte object of kvals. It checks every
// value's encoding.
func parsePMIxCommit(d *pmixDec) ([]pmixBlock, error) {
	var out []pmixBlock
	for d.err == nil && d.rest() > 0 {
		d.count(1)
		scope := d.u8()
		d.count(1)
		bt := d.u8()
		bo := d.byteObject()
		if d.err != nil {
			break
		}
		if scope < pmixScopeLocal || scope > pmixScopeGlobal {
			d.fail("commit of scope %d", scope)
			break
		}
		if bt != pmixBufNonDesc {
			d.fail("commit buffer of type %d, want %d (non-described)", bt, pmixBufNonDesc)
			break
		}
		kvs, err := pmixRawKVals(bo)
		if err != nil {
			return nil, err
		}
		out = append(out, pmixBlock{scope: scope, kvs: kvs})
	}
	return out, d.err
}

// pmixRawKVals splits packed kvals (each a call of one) into keys and raw values.
func pmixRawKVals(b []byte) ([]pmixRawKV, error) {
	d := &pmixDec{b: b}
	var out []pmixRawKV
	for d.err == nil && d.rest() > 0 {
		d.count(1)
		start := d.off
		key := d.str()
		d.value(0)
		if d.err == nil {
			if key == "" {
				d.fail("a kval without a key")
				break
			}
			out = append(out, pmixRawKV{key: key, raw: b[start:d.off]})
		}
	}
	return out, d.err
}

// mergePMIxBlocks adds blocks to have: a key committed again in a scope replaces its
// value there.
func mergePMIxBlocks(have, add []pmixBlock) []pmixBlock {
	for _, b := range add {
		i := 0
		for i < len(have) && have[i].scope != b.scope {
			i++
		}
		if i == len(have) {
			have = append(have, pmixBlock{scope: b.scope})
		}
		for _, kv := range b.kvs {
			j := 0
			for j < len(have[i].kvs) && have[i].kvs[j].key != kv.key {
				j++
			}
			if j == len(have[i].kvs) {
				have[i].kvs = append(have[i].kvs, kv)
			} else {
				have[i].kvs[j] = kv
			}
		}
	}
	return have
}

// encodePMIxBlocks writes blocks as a commit's body after the command: the form in which
// a rank's data travels between agents (Handler.Fence) and is read back with
// parsePMIxCommit.
func encodePMIxBlocks(blocks []pmixBlock) []byte {
	var e pmixEnc
	for _, b := range blocks {
		var in pmixEnc
		for _, kv := range b.kvs {
			in.count(1)
			in.b = append(in.b, kv.raw...)
		}
		e.count(1)
		e.b = append(e.b, b.scope)
		e.count(1)
		e.b = append(e.b, pmixBufNonDesc)
		e.byteObject(in.b)
	}
	return e.b
}

// pmixGetAnswer answers a get of rank's data with the kvals of blocks a rank on the
// same node (local) or another node may see: the local or the remote scope, and the
// global one. A key in both keeps the later block's value.
func pmixGetAnswer(nspace string, rank uint32, blocks []pmixBlock, local bool) []byte {
	want := byte(pmixScopeRemote)
	if local {
		want = pmixScopeLocal
	}
	var kvs []pmixRawKV
	for _, b := range blocks {
		if b.scope != want && b.scope != pmixScopeGlobal {
			continue
		}
		kvs = mergePMIxBlocks([]pmixBlock{{kvs: kvs}}, []pmixBlock{{kvs: b.kvs}})[0].kvs
	}
	var in pmixEnc
	in.count(1)
	in.proc(pmixProc{nspace: nspace, rank: rank})
	for _, kv := range kvs {
		in.count(1)
		in.b = append(in.b, kv.raw...)
	}
	e := pmixEnc{b: pmixStatusBody(0)}
	e.count(1)
	e.byteObject(in.b)
	return e.b
}
