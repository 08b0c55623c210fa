package pmi

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The PMIx wire as gorma's client speaks it: OpenPMIx's TCP transport (ptl) with the
// v4.1 buffer encoding (bfrops "v41", non-described buffers). Every message is a 16-byte
// header and a body. The body is a sequence of packed calls; each call is a count
// (int32) and that many values. Integers are flex-encoded: unsigned values 7 bits a byte
// with a continuation bit, a ninth byte holding the last 8 bits; signed values zig-zag
// first. design.md ("PMIx") gives the messages.

// PMIx commands (pmix_cmd_t), the first value of every request.
const (
	pmixCmdReq      = 0 // job data
	pmixCmdAbort    = 1
	pmixCmdCommit   = 2
	pmixCmdFence    = 3
	pmixCmdGet      = 4
	pmixCmdFinalize = 5
)

// PMIx data types (pmix_data_type_t) that the codec reads or writes.
const (
	pmixBool       = 1
	pmixByte       = 2
	pmixString     = 3
	pmixSize       = 4
	pmixPID        = 5
	pmixInt        = 6
	pmixInt8       = 7
	pmixInt16      = 8
	pmixInt32      = 9
	pmixInt64      = 10
	pmixUint       = 11
	pmixUint8      = 12
	pmixUint16     = 13
	pmixUint32     = 14
	pmixUint64     = 15
	pmixFloat      = 16 // packed as its decimal text
	pmixDouble     = 17 // packed as its decimal text
	pmixTimeval    = 18
	pmixTime       = 19
	pmixStatus     = 20
	pmixProcT      = 22
	pmixInfoT      = 24
	pmixByteObject = 27
	pmixPersist    = 30
	pmixScope      = 32
	pmixRange      = 33
	pmixDirectives = 35
	pmixDataType   = 36
	pmixProcState  = 37
	pmixDataArray  = 39
	pmixProcRank   = 40
	pmixCompStr    = 42
	pmixAllocDir   = 43
	pmixIOFChannel = 45
	pmixEnvar      = 46
	pmixJobState   = 50
	pmixLinkState  = 51
	pmixDevType    = 57
	pmixLocType    = 58
	pmixCompBytes  = 59
	pmixProcNspace = 60
)

// Scopes of committed data, and the rank that names every rank of a namespace.
const (
	pmixScopeGlobal = 3
	pmixRankWild    = math.MaxUint32 - 1
	pmixBufNonDesc  = 1 // buffer type of the v4.1 wire: values carry no type tags
)

// Limits that keep a decoder's work bounded by its input.
const (
	pmixHdrLen   = 16
	pmixMaxMsg   = 64 << 20 // largest message body the client accepts
	pmixMaxDepth = 8        // nesting of data arrays
)

// pmixHdr is the header of every message after the connect handshake: the server's
// index of this client, the request's tag (echoed on the answer) and the body's length.
type pmixHdr struct {
	pindex int32
	tag    uint32
	nbytes uint32
}

// appendPMIxHdr writes h: pindex and tag big-endian, the length big-endian in the first
// 4 bytes of an 8-byte field, as OpenPMIx writes a 32-bit network-order length into a
// size_t on a little-endian host.
func appendPMIxHdr(b []byte, h pmixHdr) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(h.pindex))
	b = binary.BigEndian.AppendUint32(b, h.tag)
	b = binary.BigEndian.AppendUint32(b, h.nbytes)
	return append(b, 0, 0, 0, 0)
}

// parsePMIxHdr reads a header; it refuses a body longer than pmixMaxMsg.
func parsePMIxHdr(b []byte) (pmixHdr, error) {
	if len(b) < pmixHdrLen {
		return pmixHdr{}, fmt.Errorf("%w: PMIx header of %d bytes, want %d", ErrProtocol, len(b), pmixHdrLen)
	}
	h := pmixHdr{
		pindex: int32(binary.BigEndian.Uint32(b)),
		tag:    binary.BigEndian.Uint32(b[4:]),
		nbytes: binary.BigEndian.Uint32(b[8:]),
	}
	if h.nbytes > pmixMaxMsg {
		return h, fmt.Errorf("%w: PMIx message of %d bytes (limit %d)", ErrProtocol, h.nbytes, pmixMaxMsg)
	}
	return h, nil
}

// pmixProc names a process: its namespace and rank.
type pmixProc struct {
	nspace string
	rank   uint32
}

// pmixValue is a typed PMIx value. Which field holds it depends on typ: str (strings),
// u (unsigned integers, bool, byte, ranks), i (signed integers, status), bytes (byte
// objects), proc, and for data arrays elemType with infos (arrays of info) or elems.
type pmixValue struct {
	typ      uint16
	str      string
	u        uint64
	i        int64
	bytes    []byte
	proc     pmixProc
	elemType uint16
	infos    []pmixInfo
	elems    []pmixValue
}

// pmixInfo is a key, its directives and its value (pmix_info_t); a kval on the wire has
// no directives.
type pmixInfo struct {
	key   string
	flags uint32
	val   pmixValue
}

// pmixEnc appends packed values to b.
type pmixEnc struct{ b []byte }

func (e *pmixEnc) uvar(v uint64) {
	for i := 0; i < 8; i++ {
		if v < 0x80 {
			e.b = append(e.b, byte(v))
			return
		}
		e.b = append(e.b, byte(v)|0x80)
		v >>= 7
	}
	e.b = append(e.b, byte(v))
}

func (e *pmixEnc) ivar(v int64) { e.uvar(uint64(v<<1) ^ uint64(v>>63)) }

// count starts a packed call of n values.
func (e *pmixEnc) count(n int) { e.ivar(int64(n)) }

// str packs s as its length with the NUL, then s and a NUL.
func (e *pmixEnc) str(s string) {
	e.ivar(int64(len(s) + 1))
	e.b = append(append(e.b, s...), 0)
}

func (e *pmixEnc) byteObject(p []byte) {
	e.uvar(uint64(len(p)))
	e.b = append(e.b, p...)
}

func (e *pmixEnc) proc(p pmixProc) {
	e.str(p.nspace)
	e.uvar(uint64(p.rank))
}

// value packs v's type and data; it supports the types the client and the server send.
func (e *pmixEnc) value(v pmixValue) {
	e.uvar(uint64(v.typ))
	switch v.typ {
	case pmixBool, pmixByte, pmixUint8:
		e.b = append(e.b, byte(v.u))
	case pmixString:
		e.str(v.str)
	case pmixSize, pmixUint16, pmixUint32, pmixUint64, pmixProcRank:
		e.uvar(v.u)
	case pmixDataArray:
		if v.elemType != pmixInfoT {
			panic(fmt.Sprintf("pmi: PMIx encoder: data array of type %d not supported", v.elemType))
		}
		e.uvar(pmixInfoT)
		e.uvar(uint64(len(v.infos)))
		for _, in := range v.infos {
			e.info(in)
		}
	case pmixInt, pmixInt32, pmixStatus:
		e.ivar(v.i)
	case pmixByteObject:
		e.byteObject(v.bytes)
	default:
		panic(fmt.Sprintf("pmi: PMIx encoder: type %d not supported", v.typ))
	}
}

func (e *pmixEnc) kval(key string, v pmixValue) {
	e.str(key)
	e.value(v)
}

func (e *pmixEnc) info(in pmixInfo) {
	e.str(in.key)
	e.uvar(uint64(in.flags))
	e.value(in.val)
}

// pmixDec reads packed values from b. The first error sticks: later reads return zero
// values, and err says what was wrong and where.
type pmixDec struct {
	b   []byte
	off int
	err error
}

func (d *pmixDec) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: PMIx body at byte %d: %s", ErrProtocol, d.off, fmt.Sprintf(format, a...))
	}
}

func (d *pmixDec) rest() int { return len(d.b) - d.off }

func (d *pmixDec) u8() byte {
	if d.err != nil {
		return 0
	}
	if d.rest() < 1 {
		d.fail("truncated")
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *pmixDec) uvar() uint64 {
	var v uint64
	for i := 0; i < 9; i++ {
		c := d.u8()
		if d.err != nil {
			return 0
		}
		if i == 8 {
			return v | uint64(c)<<56
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
	return v
}

func (d *pmixDec) ivar() int64 {
	u := d.uvar()
	return int64(u>>1) ^ -int64(u&1)
}

// u32 reads an unsigned integer that must fit 32 bits.
func (d *pmixDec) u32(what string) uint32 {
	v := d.uvar()
	if v > math.MaxUint32 {
		d.fail("%s %d does not fit 32 bits", what, v)
		return 0
	}
	return uint32(v)
}

// n reads a length or count and checks it against the bytes left (each item takes at
// least min bytes).
func (d *pmixDec) n(what string, v int64, min int) int {
	if d.err != nil {
		return 0
	}
	if v < 0 || v > int64(d.rest()/min) {
		d.fail("%s %d with %d bytes left", what, v, d.rest())
		return 0
	}
	return int(v)
}

// count reads the count that starts a packed call and checks that it is want.
func (d *pmixDec) count(want int) {
	if n := d.ivar(); d.err == nil && n != int64(want) {
		d.fail("count %d, want %d", n, want)
	}
}

func (d *pmixDec) str() string {
	n := d.n("string length", d.ivar(), 1)
	if n == 0 || d.err != nil {
		return ""
	}
	s := d.b[d.off : d.off+n]
	d.off += n
	if s[n-1] != 0 {
		d.fail("string without its NUL")
		return ""
	}
	return string(s[:n-1])
}

func (d *pmixDec) byteObject() []byte {
	v := d.uvar()
	if v > math.MaxInt32 {
		d.fail("byte object of %d bytes", v)
		return nil
	}
	n := d.n("byte object size", int64(v), 1)
	if d.err != nil {
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *pmixDec) proc() pmixProc {
	return pmixProc{nspace: d.str(), rank: d.u32("rank")}
}

// value reads a type and the data of that type.
func (d *pmixDec) value(depth int) pmixValue {
	t := d.uvar()
	if t > math.MaxUint16 {
		d.fail("data type %d", t)
		return pmixValue{}
	}
	return d.typed(uint16(t), depth)
}

// typed reads data of type t.
func (d *pmixDec) typed(t uint16, depth int) pmixValue {
	v := pmixValue{typ: t}
	switch t {
	case pmixBool, pmixByte, pmixUint8, pmixPersist, pmixScope, pmixRange, pmixProcState,
		pmixAllocDir, pmixJobState, pmixLinkState:
		v.u = uint64(d.u8())
	case pmixInt8:
		v.i = int64(int8(d.u8()))
	case pmixString, pmixFloat, pmixDouble, pmixProcNspace:
		v.str = d.str()
	case pmixSize, pmixPID, pmixUint, pmixUint16, pmixUint32, pmixUint64, pmixProcRank, pmixDirectives, pmixDataType,
		pmixTime, pmixIOFChannel, pmixDevType, pmixLocType:
		v.u = d.uvar()
	case pmixInt, pmixInt16, pmixInt32, pmixInt64, pmixStatus:
		v.i = d.ivar()
	case pmixTimeval:
		v.i, v.u = d.ivar(), uint64(d.ivar())
	case pmixEnvar:
		v.str, v.bytes = d.str()+"="+d.str(), []byte{d.u8()}
	case pmixByteObject, pmixCompStr, pmixCompBytes:
		v.bytes = d.byteObject()
	case pmixProcT:
		v.proc = d.proc()
	case pmixDataArray:
		d.array(&v, depth)
	default:
		d.fail("data type %d not supported by gorma's PMIx codec", t)
	}
	return v
}

// array reads a data array: its element type, its size and the elements.
func (d *pmixDec) array(v *pmixValue, depth int) {
	if depth >= pmixMaxDepth {
		d.fail("data arrays nested deeper than %d", pmixMaxDepth)
		return
	}
	et := d.uvar()
	if et > math.MaxUint16 {
		d.fail("data array of type %d", et)
		return
	}
	v.elemType = uint16(et)
	size := d.uvar()
	if size > math.MaxInt32 {
		d.fail("data array of %d elements", size)
		return
	}
	n := d.n("data array size", int64(size), 1)
	for i := 0; i < n && d.err == nil; i++ {
		if et == pmixInfoT {
			v.infos = append(v.infos, d.info(depth+1))
		} else {
			v.elems = append(v.elems, d.typed(v.elemType, depth+1))
		}
	}
}

func (d *pmixDec) info(depth int) pmixInfo {
	return pmixInfo{key: d.str(), flags: d.u32("directives"), val: d.value(depth)}
}

// kval reads a key and its value (no directives).
func (d *pmixDec) kval() pmixInfo {
	return pmixInfo{key: d.str(), val: d.value(0)}
}

// kvals reads packed calls of one kval each to the end of the body.
func (d *pmixDec) kvals() []pmixInfo {
	var out []pmixInfo
	for d.err == nil && d.rest() > 0 {
		d.count(1)
		if kv := d.kval(); d.err == nil {
			out = append(out, kv)
		}
	}
	return out
}

// decodePMIxKVals decodes a body of packed kvals (the rest of a job-data answer, a
// rank's blob), for the fuzz target and the tests.
func decodePMIxKVals(b []byte) ([]pmixInfo, error) {
	d := &pmixDec{b: b}
	kv := d.kvals()
	return kv, d.err
}
