package pmi

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// The bodies of the PMIx messages gorma's client sends and reads. Each builder returns a
// body without its header.

// PMIx keys of the job data that the client reads.
const (
	pmixKeyJobSize  = "pmix.job.size"
	pmixKeyNumNodes = "pmix.num.nodes"
	pmixKeyBlob     = "pmix.pblob"  // one rank's data: its rank, then kvals
	pmixKeyNodeID   = "pmix.nodeid" // a rank's node, in its blob
	pmixKeyNodeArr  = "pmix.node.arr"
	pmixKeyHostname = "pmix.hname"
	pmixKeyLPeers   = "pmix.lpeers"
	pmixKeyCollect  = "pmix.collect"
)

// What the connect message says about this client.
const (
	pmixSecNative   = "native"
	pmixWireVersion = "4.2.2" // the client's PMIx version as the server sees it
	pmixBfrops      = "v41"
	pmixGDS         = "hash"
)

// pmixConnectMsg is the connect message, header included: its header has pindex -1, tag
// all ones and the body's length in host order (little-endian). The body: security
// module, the credential (a 4-byte big-endian length, then the native module's uid and
// gid), connection type (0: a client the server launched), namespace, rank (4 bytes
// big-endian), version, bfrops module, buffer type, gds module and a final 0.
func pmixConnectMsg(nspace string, rank, uid, gid uint32) []byte {
	var body []byte
	cstr := func(s string) { body = append(append(body, s...), 0) }
	cstr(pmixSecNative)
	body = binary.BigEndian.AppendUint32(body, 8)
	body = binary.LittleEndian.AppendUint32(body, uid)
	body = binary.LittleEndian.AppendUint32(body, gid)
	body = append(body, 0)
	cstr(nspace)
	body = binary.BigEndian.AppendUint32(body, rank)
	cstr(pmixWireVersion)
	cstr(pmixBfrops)
	body = append(body, pmixBufNonDesc)
	cstr(pmixGDS)
	body = append(body, 0)
	msg := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	msg = binary.LittleEndian.AppendUint64(msg, uint64(len(body)))
	return append(msg, body...)
}

// pmixCmd starts a request body with its command.
func pmixCmd(cmd byte) *pmixEnc {
	e := &pmixEnc{}
	e.count(1)
	e.b = append(e.b, cmd)
	return e
}

// pmixCommitBody commits kvs in the global scope: the scope, then a buffer (its type,
// length and packed kvals).
func pmixCommitBody(kvs []pmixInfo) []byte {
	var in pmixEnc
	for _, kv := range kvs {
		in.count(1)
		in.kval(kv.key, kv.val)
	}
	e := pmixCmd(pmixCmdCommit)
	e.count(1)
	e.b = append(e.b, pmixScopeGlobal)
	e.count(1)
	e.b = append(e.b, pmixBufNonDesc)
	e.byteObject(in.b)
	return e.b
}

// pmixFenceBody fences every rank of nspace, collecting their committed data when
// collect is true (else each rank's data stays with its server until a get asks).
func pmixFenceBody(nspace string, collect bool) []byte {
	e := pmixCmd(pmixCmdFence)
	e.count(1)
	e.uvar(1)
	e.count(1)
	e.proc(pmixProc{nspace: nspace, rank: pmixRankWild})
	e.count(1)
	if !collect {
		e.uvar(0)
		return e.b
	}
	e.uvar(1)
	e.count(1)
	e.info(pmixInfo{key: pmixKeyCollect, val: pmixValue{typ: pmixBool, u: 1}})
	return e.b
}

// pmixGetBody asks for key of rank in nspace, without directives.
func pmixGetBody(nspace string, rank uint32, key string) []byte {
	e := pmixCmd(pmixCmdGet)
	e.count(1)
	e.str(nspace)
	e.count(1)
	e.uvar(uint64(rank))
	e.count(1)
	e.uvar(0)
	e.count(1)
	e.str(key)
	return e.b
}

// pmixAbortBody aborts the whole namespace with code and msg.
func pmixAbortBody(code int, msg string) []byte {
	e := pmixCmd(pmixCmdAbort)
	e.count(1)
	e.ivar(int64(int32(code)))
	e.count(1)
	e.str(msg)
	e.count(1)
	e.uvar(0)
	return e.b
}

// pmixStatusOf reads the status that starts an answer.
func pmixStatusOf(d *pmixDec) int32 {
	d.count(1)
	s := d.ivar()
	if d.err == nil && (s < -1<<31 || s >= 1<<31) {
		d.fail("status %d does not fit 32 bits", s)
	}
	return int32(s)
}

// pmixJob is what the client takes from the job-data answer.
type pmixJob struct {
	nspace   string
	size     int
	numNodes int
	nodeOf   map[uint32]int    // each rank's node, from the ranks' blobs
	hosts    map[uint32]string // each rank's host name, from the ranks' blobs
}

// parsePMIxJob reads the answer to a job-data request: the namespace, then kvals.
func parsePMIxJob(body []byte) (pmixJob, error) {
	d := &pmixDec{b: body}
	d.count(1)
	j := pmixJob{nspace: d.str(), size: -1, nodeOf: map[uint32]int{}, hosts: map[uint32]string{}}
	for _, kv := range d.kvals() {
		switch kv.key {
		case pmixKeyJobSize:
			j.size = int(kv.val.u)
		case pmixKeyNumNodes:
			j.numNodes = int(kv.val.u)
		case pmixKeyBlob:
			if err := j.takeBlob(kv.val.bytes); err != nil {
				return j, err
			}
		}
	}
	if d.err != nil {
		return j, fmt.Errorf("job data: %w", d.err)
	}
	if j.size < 1 || j.size > 1<<24 {
		return j, fmt.Errorf("%w: PMIx job data: %s is %d or missing", ErrProtocol, pmixKeyJobSize, j.size)
	}
	return j, nil
}

// takeBlob reads one rank's blob: the rank, then kvals.
func (j *pmixJob) takeBlob(b []byte) error {
	d := &pmixDec{b: b}
	d.count(1)
	rank := d.u32("rank")
	for _, kv := range d.kvals() {
		switch kv.key {
		case pmixKeyNodeID:
			j.nodeOf[rank] = int(kv.val.u)
		case pmixKeyHostname:
			j.hosts[rank] = kv.val.str
		}
	}
	if d.err != nil {
		return fmt.Errorf("job data: blob of rank %d: %w", rank, d.err)
	}
	return nil
}

// nodes returns each rank's node index (0..nodes-1, in order of first appearance), or
// nil when a rank's node is not known.
func (j *pmixJob) nodes() []int {
	if j.numNodes == 1 {
		return make([]int, j.size)
	}
	out := make([]int, j.size)
	index := map[int]int{}
	for r := range out {
		id, ok := j.nodeOf[uint32(r)]
		if !ok {
			return nil
		}
		if _, seen := index[id]; !seen {
			index[id] = len(index)
		}
		out[r] = index[id]
	}
	return out
}

// parsePMIxGet reads the answer to a get: the status, then byte objects, each a process
// and its kvals. It returns the kvals by rank.
func parsePMIxGet(body []byte) (int32, map[uint32][]pmixInfo, error) {
	d := &pmixDec{b: body}
	st := pmixStatusOf(d)
	byRank := map[uint32][]pmixInfo{}
	for d.err == nil && d.rest() > 0 {
		d.count(1)
		bo := d.byteObject()
		if d.err != nil {
			break
		}
		in := &pmixDec{b: bo}
		in.count(1)
		p := in.proc()
		kvs := in.kvals()
		if in.err != nil {
			return st, nil, fmt.Errorf("get answer: %w", in.err)
		}
		byRank[p.rank] = append(byRank[p.rank], kvs...)
	}
	if d.err != nil {
		return st, nil, fmt.Errorf("get answer: %w", d.err)
	}
	return st, byRank, nil
}

// pmixURI is a server's address from PMIX_SERVER_URI*: "nspace.rank;tcp4://host:port".
type pmixURI struct {
	nspace string
	rank   string
	addr   string // host:port for net.Dial
}

func parsePMIxURI(s string) (pmixURI, error) {
	id, rest, ok := strings.Cut(s, ";")
	var u pmixURI
	if !ok {
		return u, fmt.Errorf("no ';' between the server's name and its address")
	}
	dot := strings.LastIndexByte(id, '.')
	if dot <= 0 {
		return u, fmt.Errorf("server name %q is not nspace.rank", id)
	}
	u.nspace, u.rank = id[:dot], id[dot+1:]
	if _, err := strconv.ParseUint(u.rank, 10, 32); err != nil {
		return u, fmt.Errorf("server rank %q is not a number", u.rank)
	}
	switch {
	case strings.HasPrefix(rest, "tcp4://"):
		u.addr = strings.TrimPrefix(rest, "tcp4://")
	case strings.HasPrefix(rest, "tcp6://"):
		u.addr = strings.TrimPrefix(rest, "tcp6://")
	default:
		return u, fmt.Errorf("address %q is not tcp4:// or tcp6://", rest)
	}
	return u, nil
}
