package shm

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// Endpoint bytes, little-endian. The version changes with any layout change.
//
//	magic    [4]  "gshm"
//	version  u8   endpointVersion
//	bootID   [16] /proc/sys/kernel/random/boot_id
//	pidNS    u64  inode of /proc/self/ns/pid
//	pid      u32  owner process
//	nonce    u64  random per device, so a reused pid or fd never aliases a cached mapping
//	qpn      u32
//	hdrOff   u64  segment offset of the ring header
//	dataOff  u64  segment offset of the ring data
//	slots    u32  ring data slots, a power of two
//	liveOff  u64  segment offset of the device's liveness region (live.go), or 0
//	hostLen  u8, host [hostLen]   uts hostname
//	descLen  u16, desc [descLen]  arena.SegmentDesc wire form
const (
	endpointMagic   = "gshm"
	endpointVersion = 2
	endpointFixed   = 4 + 1 + 16 + 8 + 4 + 8 + 4 + 8 + 8 + 4 + 8
)

// hostID identifies a host (and pid namespace), so that endpoint bytes from elsewhere are
// refused instead of misread: pids and /proc paths mean nothing across hosts.
type hostID struct {
	bootID [16]byte
	pidNS  uint64
	name   string
}

var localHost = sync.OnceValue(readHostID)

func readHostID() hostID {
	var h hostID
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		s := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
		if raw, err := hex.DecodeString(s); err == nil && len(raw) == len(h.bootID) {
			copy(h.bootID[:], raw)
		}
	}
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/pid", &st) == nil {
		h.pidNS = st.Ino
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.name = unix.ByteSliceToString(u.Nodename[:])
	}
	if len(h.name) > 255 {
		h.name = h.name[:255]
	}
	return h
}

// endpoint is the decoded form of a QP's endpoint bytes.
type endpoint struct {
	host    hostID
	pid     int32
	nonce   uint64
	qpn     uint32
	hdrOff  uint64
	dataOff uint64
	slots   uint32
	liveOff uint64
	desc    arena.SegmentDesc
}

var errEndpoint = errors.New("bad endpoint")

func (e *endpoint) appendBinary(b []byte) ([]byte, error) {
	le := binary.LittleEndian
	b = append(b, endpointMagic...)
	b = append(b, endpointVersion)
	b = append(b, e.host.bootID[:]...)
	b = le.AppendUint64(b, e.host.pidNS)
	b = le.AppendUint32(b, uint32(e.pid))
	b = le.AppendUint64(b, e.nonce)
	b = le.AppendUint32(b, e.qpn)
	b = le.AppendUint64(b, e.hdrOff)
	b = le.AppendUint64(b, e.dataOff)
	b = le.AppendUint32(b, e.slots)
	b = le.AppendUint64(b, e.liveOff)
	b = append(b, byte(len(e.host.name)))
	b = append(b, e.host.name...)
	desc, err := e.desc.AppendBinary(nil)
	if err != nil {
		return b, err
	}
	if len(desc) > 0xffff {
		return b, fmt.Errorf("segment description of %d bytes", len(desc))
	}
	b = le.AppendUint16(b, uint16(len(desc)))
	return append(b, desc...), nil
}

// decodeEndpoint parses endpoint bytes. It never panics; every error wraps errEndpoint and
// says what was wrong.
func decodeEndpoint(b []byte) (endpoint, error) {
	var e endpoint
	if len(b) < endpointFixed+1+2 {
		return e, fmt.Errorf("%w: %d bytes, need at least %d (not shm endpoint bytes?)", errEndpoint, len(b), endpointFixed+3)
	}
	if string(b[:4]) != endpointMagic {
		return e, fmt.Errorf("%w: magic %q, want %q (endpoint of another provider?)", errEndpoint, b[:4], endpointMagic)
	}
	if b[4] != endpointVersion {
		return e, fmt.Errorf("%w: version %d, this build speaks %d (mixing gorma builds in one job?)", errEndpoint, b[4], endpointVersion)
	}
	le := binary.LittleEndian
	p := b[5:]
	copy(e.host.bootID[:], p)
	p = p[16:]
	e.host.pidNS = le.Uint64(p)
	e.pid = int32(le.Uint32(p[8:]))
	e.nonce = le.Uint64(p[12:])
	e.qpn = le.Uint32(p[20:])
	e.hdrOff = le.Uint64(p[24:])
	e.dataOff = le.Uint64(p[32:])
	e.slots = le.Uint32(p[40:])
	e.liveOff = le.Uint64(p[44:])
	p = p[52:]
	n := int(p[0])
	if len(p) < 1+n+2 {
		return e, fmt.Errorf("%w: host name truncated", errEndpoint)
	}
	e.host.name = string(p[1 : 1+n])
	p = p[1+n:]
	dn := int(le.Uint16(p))
	p = p[2:]
	if len(p) != dn {
		return e, fmt.Errorf("%w: segment description of %d bytes, %d present", errEndpoint, dn, len(p))
	}
	desc, rest, err := arena.DecodeSegmentDesc(p)
	if err != nil {
		return e, fmt.Errorf("%w: %v", errEndpoint, err)
	}
	if len(rest) != 0 {
		return e, fmt.Errorf("%w: %d trailing bytes after the segment description", errEndpoint, len(rest))
	}
	e.desc = desc
	return e, e.check()
}

// check validates the fields that do not depend on the local host.
func (e *endpoint) check() error {
	switch {
	case e.pid <= 0 || e.pid != e.desc.PID:
		return fmt.Errorf("%w: owner pid %d, segment pid %d", errEndpoint, e.pid, e.desc.PID)
	case e.qpn == 0:
		return fmt.Errorf("%w: queue pair number 0", errEndpoint)
	case e.slots < minRingSlots || e.slots > maxRingSlots || e.slots&(e.slots-1) != 0:
		return fmt.Errorf("%w: ring of %d slots (want a power of two in [%d, %d])", errEndpoint, e.slots, minRingSlots, maxRingSlots)
	case e.hdrOff%64 != 0 || e.dataOff%64 != 0:
		return fmt.Errorf("%w: ring offsets %d/%d not cache-line aligned", errEndpoint, e.hdrOff, e.dataOff)
	case e.liveOff%8 != 0 || e.liveOff > uint64(e.desc.Size) || uint64(e.desc.Size)-e.liveOff < liveSize:
		return fmt.Errorf("%w: liveness word at %d outside the %d-byte segment or not aligned", errEndpoint, e.liveOff, e.desc.Size)
	}
	size := uint64(e.desc.Size)
	if e.hdrOff > size || size-e.hdrOff < ringHdrSize {
		return fmt.Errorf("%w: ring header at %d outside the %d-byte segment", errEndpoint, e.hdrOff, size)
	}
	if e.dataOff > size || size-e.dataOff < uint64(e.slots)*slotSize {
		return fmt.Errorf("%w: ring data at %d (%d slots) outside the %d-byte segment", errEndpoint, e.dataOff, e.slots, size)
	}
	return nil
}

// checkHost reports why e cannot be reached from this host, or nil.
func (e *endpoint) checkHost(local hostID) error {
	if e.host.bootID != local.bootID || e.host.name != local.name {
		return fmt.Errorf("%w: endpoint of host %q (boot %x), this is host %q (boot %x); shm connects processes on one host only, use a network provider (tcp) between hosts",
			errEndpoint, e.host.name, e.host.bootID[:4], local.name, local.bootID[:4])
	}
	if e.host.pidNS != local.pidNS {
		return fmt.Errorf("%w: endpoint from pid namespace %d, this process is in %d; run the ranks in one pid namespace or use tcp",
			errEndpoint, e.host.pidNS, local.pidNS)
	}
	return nil
}
