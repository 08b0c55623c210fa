package verbstest

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStrandedSegments checks the leak detector on a segment file of its own: reported
// while nobody holds it, not while this process has it open.
func TestStrandedSegments(t *testing.T) {
	path := segPrefix + "verbstest-selftest-" + strconv.Itoa(os.Getpid())
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
	if err != nil {
		t.Skipf("cannot create %s: %v", path, err)
	}
	defer os.Remove(path)
	if strandedSegments()[path] {
		t.Errorf("%s reported stranded while this process has it open", path)
	}
	f.Close()
	if !strandedSegments()[path] {
		t.Errorf("%s not reported stranded once nobody holds it", path)
	}
	if left := newStranded(map[string]bool{path: true}); len(left) > 0 {
		t.Errorf("a file stranded before the baseline was reported: %v", left)
	}
}

// TestOwnSharedMemory checks that a memfd held by this process is reported, and no longer
// once closed.
func TestOwnSharedMemory(t *testing.T) {
	before := ownSharedMemory()
	fd, err := unix.MemfdCreate("verbstest-selftest", 0)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	if leaks := sharedMemoryLeaks(before); len(leaks) != 1 {
		t.Errorf("open memfd: leaks %v, want exactly one", leaks)
	}
	unix.Close(fd)
	if leaks := sharedMemoryLeaks(before); len(leaks) != 0 {
		t.Errorf("closed memfd still reported: %v", leaks)
	}
}
