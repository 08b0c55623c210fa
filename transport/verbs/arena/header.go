package arena

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Header layout, at offset 0 of every arena segment. Version changes with any layout change.
const (
	headerMagic   = 0x4e52414d524f47 // "GORMARN" little-endian
	headerVersion = 1
	pageSize      = 4096

	offMagic      = 0
	offVersion    = 8
	offMaxMRs     = 12
	offTable      = 16
	offData       = 24
	offDataSize   = 32
	offOwnerPID   = 40
	offDoorbell   = 64  // uint32 futex sequence word
	offWaiters    = 68  // uint32 count of sleepers on the doorbell
	offRejections = 128 // int64, its own cache line
	tableStart    = pageSize
)

type header struct {
	mem        []byte
	maxMRs     int
	dataOff    int64
	dataSize   int64
	seq        *atomic.Uint32
	waiters    *atomic.Uint32
	rejections *atomic.Int64
}

// layout computes the table and data offsets for maxMRs slots and dataSize data bytes.
func layout(maxMRs int, dataSize int64) (dataOff, total int64) {
	end := int64(tableStart) + int64(maxMRs)*slotSize
	dataOff = (end + 64<<10 - 1) &^ (64<<10 - 1)
	return dataOff, dataOff + dataSize
}

func writeHeader(mem []byte, maxMRs int, dataOff, dataSize int64, pid int) {
	le := binary.LittleEndian
	le.PutUint32(mem[offVersion:], headerVersion)
	le.PutUint32(mem[offMaxMRs:], uint32(maxMRs))
	le.PutUint64(mem[offTable:], tableStart)
	le.PutUint64(mem[offData:], uint64(dataOff))
	le.PutUint64(mem[offDataSize:], uint64(dataSize))
	le.PutUint64(mem[offOwnerPID:], uint64(pid))
	(*atomic.Uint64)(unsafe.Pointer(&mem[offMagic])).Store(headerMagic)
}

// readHeader checks a mapped arena's header against the mapping's size.
func readHeader(mem []byte) (*header, error) {
	if len(mem) < tableStart {
		return nil, fmt.Errorf("arena: mapping of %d bytes is smaller than a header", len(mem))
	}
	le := binary.LittleEndian
	if m := (*atomic.Uint64)(unsafe.Pointer(&mem[offMagic])).Load(); m != headerMagic {
		return nil, fmt.Errorf("arena: segment is not a gorma arena (magic %#x)", m)
	}
	if v := le.Uint32(mem[offVersion:]); v != headerVersion {
		return nil, fmt.Errorf("arena: arena layout version %d, this build speaks %d (mixing gorma builds in one job?)", v, headerVersion)
	}
	h := &header{
		mem:      mem,
		maxMRs:   int(le.Uint32(mem[offMaxMRs:])),
		dataOff:  int64(le.Uint64(mem[offData:])),
		dataSize: int64(le.Uint64(mem[offDataSize:])),
	}
	wantOff, total := layout(h.maxMRs, h.dataSize)
	if h.maxMRs <= 0 || h.maxMRs > maxSlots || h.dataOff != wantOff || h.dataSize < 0 || total > int64(len(mem)) {
		return nil, fmt.Errorf("arena: corrupt header (max MRs %d, data at %d size %d, mapping %d bytes)", h.maxMRs, h.dataOff, h.dataSize, len(mem))
	}
	h.bind()
	return h, nil
}

func (h *header) bind() {
	h.seq = (*atomic.Uint32)(unsafe.Pointer(&h.mem[offDoorbell]))
	h.waiters = (*atomic.Uint32)(unsafe.Pointer(&h.mem[offWaiters]))
	h.rejections = (*atomic.Int64)(unsafe.Pointer(&h.mem[offRejections]))
}

func (h *header) table() *Table { return newTable(h.mem, tableStart, h.maxMRs, h.rejections) }
