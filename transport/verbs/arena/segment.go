package arena

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ShmDir is where fallback segment files live.
const ShmDir = "/dev/shm"

// shmPrefix starts the name of every fallback segment file: gorma-PID-SEQ.
const shmPrefix = "gorma-"

// SegmentDesc tells a process on the same host how to map a segment.
type SegmentDesc struct {
	PID  int32  // owner process
	FD   int32  // memfd in the owner, mapped through /proc/PID/fd/FD; -1 for a path
	Path string // fallback file in /dev/shm, "" for memfd
	Size int64  // bytes
}

const descVersion = 1

// AppendBinary appends d's wire form to b.
func (d SegmentDesc) AppendBinary(b []byte) ([]byte, error) {
	if len(d.Path) > 255 {
		return b, fmt.Errorf("arena: segment path %q longer than 255 bytes", d.Path)
	}
	b = append(b, descVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(d.PID))
	b = binary.LittleEndian.AppendUint32(b, uint32(d.FD))
	b = binary.LittleEndian.AppendUint64(b, uint64(d.Size))
	b = append(b, byte(len(d.Path)))
	return append(b, d.Path...), nil
}

// ErrBadDesc reports undecodable segment description bytes.
var ErrBadDesc = errors.New("arena: bad segment description")

// DecodeSegmentDesc decodes a SegmentDesc from the front of b and returns the rest.
func DecodeSegmentDesc(b []byte) (SegmentDesc, []byte, error) {
	const fixed = 1 + 4 + 4 + 8 + 1
	if len(b) < fixed {
		return SegmentDesc{}, b, fmt.Errorf("%w: %d bytes, need at least %d", ErrBadDesc, len(b), fixed)
	}
	if b[0] != descVersion {
		return SegmentDesc{}, b, fmt.Errorf("%w: version %d, this build speaks %d", ErrBadDesc, b[0], descVersion)
	}
	d := SegmentDesc{
		PID:  int32(binary.LittleEndian.Uint32(b[1:])),
		FD:   int32(binary.LittleEndian.Uint32(b[5:])),
		Size: int64(binary.LittleEndian.Uint64(b[9:])),
	}
	n := int(b[17])
	if len(b) < fixed+n {
		return SegmentDesc{}, b, fmt.Errorf("%w: path truncated", ErrBadDesc)
	}
	d.Path = string(b[fixed : fixed+n])
	if d.PID <= 0 || d.Size <= 0 || (d.Path == "" && d.FD < 0) {
		return SegmentDesc{}, b, fmt.Errorf("%w: pid %d fd %d size %d", ErrBadDesc, d.PID, d.FD, d.Size)
	}
	if d.Path != "" && (filepath.Dir(d.Path) != ShmDir || !strings.HasPrefix(filepath.Base(d.Path), shmPrefix)) {
		return SegmentDesc{}, b, fmt.Errorf("%w: path %q is not a gorma segment in %s", ErrBadDesc, d.Path, ShmDir)
	}
	return d, b[fixed+n:], nil
}

// Segment is a mapped shared memory segment.
type Segment struct {
	mem     []byte
	fd      int // -1 once closed, or for a mapping of another process's segment
	desc    SegmentDesc
	created string // fallback path to unlink on Close, if this process created it
	closed  atomic.Bool
	retired atomic.Bool
}

var segSeq atomic.Uint64

// forceShmFallback makes CreateSegment skip memfd (tests of the fallback path).
var forceShmFallback bool

// CreateSegment creates and maps a sparse segment of size bytes: a memfd, so that nothing
// survives the process, or where memfd_create is unavailable a 0600 file in /dev/shm.
func CreateSegment(name string, size int64) (*Segment, error) {
	if size <= 0 {
		return nil, fmt.Errorf("arena: segment size %d must be positive", size)
	}
	pid := os.Getpid()
	s := &Segment{fd: -1, desc: SegmentDesc{PID: int32(pid), FD: -1, Size: size}}
	fd := -1
	var err error
	if !forceShmFallback {
		fd, err = unix.MemfdCreate(shmPrefix+name, unix.MFD_CLOEXEC)
	}
	if forceShmFallback || err != nil {
		SweepStale()
		path := filepath.Join(ShmDir, fmt.Sprintf("%s%d-%d", shmPrefix, pid, segSeq.Add(1)))
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("arena: create segment: memfd_create unavailable and %s: %w", path, err)
		}
		s.created, s.desc.Path = path, path
	} else {
		s.desc.FD = int32(fd)
	}
	s.fd = fd
	if err := unix.Ftruncate(fd, size); err != nil {
		s.abandon()
		return nil, fmt.Errorf("arena: size segment to %d bytes: %w", size, err)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		s.abandon()
		return nil, fmt.Errorf("arena: map %d-byte segment: %w (lower the arena size)", size, err)
	}
	s.mem = mem
	return s, nil
}

func (s *Segment) abandon() {
	unix.Close(s.fd)
	if s.created != "" {
		os.Remove(s.created)
	}
}

// MapSegment maps a segment created by another process (or this one) on this host.
func MapSegment(d SegmentDesc) (*Segment, error) {
	path := d.Path
	if path == "" {
		path = "/proc/" + strconv.Itoa(int(d.PID)) + "/fd/" + strconv.Itoa(int(d.FD))
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("arena: open segment of pid %d at %s: %w (is the process alive, on this host, and ours?)", d.PID, path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("arena: stat segment %s: %w", path, err)
	}
	if st.Size < d.Size {
		return nil, fmt.Errorf("arena: segment %s holds %d bytes, description says %d", path, st.Size, d.Size)
	}
	mem, err := unix.Mmap(fd, 0, int(d.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("arena: map segment %s: %w", path, err)
	}
	return &Segment{mem: mem, fd: -1, desc: d}, nil
}

// Bytes is the whole mapping.
func (s *Segment) Bytes() []byte { return s.mem }

// Desc describes the segment for peers.
func (s *Segment) Desc() SegmentDesc { return s.desc }

// Punch returns [off, off+n) to the kernel; it reads as zeros afterwards for every mapper.
// Only the creator of a segment may punch it.
func (s *Segment) Punch(off, n int64) error {
	if s.fd < 0 {
		return fmt.Errorf("arena: punch: segment not owned by this mapping")
	}
	if err := unix.Fallocate(s.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n); err != nil {
		return fmt.Errorf("arena: punch %d bytes at %d: %w", n, off, err)
	}
	return nil
}

// Retire releases the segment's memory but keeps its address range readable: the mapping
// is replaced, atomically, by private zero-filled memory (reserved, not committed), and
// the fd is closed and a fallback file unlinked as Close does. A goroutine that still
// reads the segment without a lock after its owner closed it (a poll that raced the
// close) reads zeros instead of faulting. Close unmaps the inert range later; call it
// once nothing can still read it (for example from a cleanup of the owning object).
func (s *Segment) Retire() error {
	if s.closed.Load() || s.retired.Swap(true) {
		return nil
	}
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(unsafe.SliceData(s.mem)), uintptr(len(s.mem)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	if err != nil {
		// The shared mapping stays (and with it the memory) until Close.
		err = fmt.Errorf("arena: retire %d-byte segment: %w", len(s.mem), err)
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	if s.created != "" {
		if rerr := os.Remove(s.created); rerr != nil && err == nil {
			err = rerr
		}
		s.created = ""
	}
	return err
}

// Close unmaps the segment (and closes the fd, and unlinks a fallback file it created).
// After Retire it unmaps the inert range.
func (s *Segment) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := unix.Munmap(s.mem)
	s.mem = nil
	if s.fd >= 0 {
		unix.Close(s.fd)
	}
	if s.created != "" {
		if rerr := os.Remove(s.created); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// SweepStale removes fallback segment files whose owner process is gone (it was killed
// before it could unlink them). It returns how many it removed.
func SweepStale() int {
	ents, err := os.ReadDir(ShmDir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, shmPrefix) {
			continue
		}
		rest := strings.TrimPrefix(name, shmPrefix)
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			if os.Remove(filepath.Join(ShmDir, name)) == nil {
				n++
			}
		}
	}
	return n
}

// Leftovers lists fallback segment files in /dev/shm (for tests and diagnostics).
func Leftovers() []string {
	ents, _ := os.ReadDir(ShmDir)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), shmPrefix) {
			out = append(out, filepath.Join(ShmDir, e.Name()))
		}
	}
	return out
}
