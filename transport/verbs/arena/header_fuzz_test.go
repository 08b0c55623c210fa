package arena

import (
	"testing"
	"unsafe"
)

// FuzzReadHeader: a mapped segment's header, which a peer process writes, never makes
// readHeader panic, and a header it accepts describes a table and data area inside the
// mapping.
func FuzzReadHeader(f *testing.F) {
	good := alignedBytes(tableStart + 64*slotSize + 4096)
	dataOff, _ := layout(64, 4096)
	writeHeader(good, 64, dataOff, 4096, 1)
	f.Add(good[:offRejections+8], 0)
	f.Add(good[:128], 0)
	f.Add(good[:128], 1)
	f.Fuzz(func(t *testing.T, head []byte, extra int) {
		size := tableStart + 64*slotSize + 4096 + (extra&0xff)*slotSize
		mem := alignedBytes(size)
		copy(mem, head)
		h, err := readHeader(mem)
		if err != nil {
			return
		}
		if _, total := layout(h.maxMRs, h.dataSize); total > int64(len(mem)) || h.dataOff < tableStart {
			t.Fatalf("accepted a header that does not fit: %d MRs, data at %d size %d, mapping %d", h.maxMRs, h.dataOff, h.dataSize, len(mem))
		}
	})
}

// alignedBytes returns n zero bytes starting on an 8-byte boundary, as a mapping does.
func alignedBytes(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}
