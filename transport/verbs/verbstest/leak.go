package verbstest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Leak checks. Providers name fallback segment files /dev/shm/gorma-*; memfd segments
// vanish with the processes that hold them. A file is stranded when no live process has
// it open or mapped: nobody can still unlink it on Close. Files other test binaries are
// using at the same time are therefore never reported, nor files stranded before the
// check's baseline was taken.

const segPrefix = "/dev/shm/gorma-"

// strandedSegments returns the stranded /dev/shm/gorma-* files.
func strandedSegments() map[string]bool {
	files, _ := filepath.Glob(segPrefix + "*")
	if len(files) == 0 {
		return nil
	}
	used := referencedSegments()
	out := map[string]bool{}
	for _, f := range files {
		if !used[f] {
			out[f] = true
		}
	}
	return out
}

// referencedSegments returns the /dev/shm/gorma-* paths some process has open or mapped.
func referencedSegments() map[string]bool {
	used := map[string]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		dir := "/proc/" + p.Name()
		fds, _ := os.ReadDir(dir + "/fd")
		for _, fd := range fds {
			if l, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && strings.HasPrefix(l, segPrefix) {
				used[strings.TrimSuffix(l, " (deleted)")] = true
			}
		}
		maps, _ := os.ReadFile(dir + "/maps")
		for _, line := range strings.Split(string(maps), "\n") {
			if i := strings.Index(line, segPrefix); i >= 0 {
				used[strings.TrimSuffix(line[i:], " (deleted)")] = true
			}
		}
	}
	return used
}

// newStranded returns the files stranded now but not in before. A candidate must still be
// stranded after a short pause, as its creator may be between creating and mapping it.
func newStranded(before map[string]bool) []string {
	var out []string
	for attempt := 0; attempt < 2; attempt++ {
		out = out[:0]
		for f := range strandedSegments() {
			if !before[f] {
				out = append(out, f)
			}
		}
		if len(out) == 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	sort.Strings(out)
	return out
}

// checkNoStranded fails t if a segment file was stranded since before.
func checkNoStranded(t testing.TB, before map[string]bool, when string) {
	t.Helper()
	if left := newStranded(before); len(left) > 0 {
		t.Errorf("%s: shared segment files left behind (no process has them open or mapped): %v", when, left)
	}
}

// ownSharedMemory counts this process's open fds and mappings of memfds and segment files,
// by name. After every device is closed the counts must be back to where they started.
func ownSharedMemory() map[string]int {
	out := map[string]int{}
	note := func(kind, s string) {
		s = strings.TrimSuffix(s, " (deleted)")
		if strings.Contains(s, "memfd:") || strings.HasPrefix(s, segPrefix) {
			out[kind+" "+s]++
		}
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil {
			note("fd", l)
		}
	}
	maps, _ := os.ReadFile("/proc/self/maps")
	for _, line := range strings.Split(string(maps), "\n") {
		if i := strings.Index(line, "/"); i >= 0 {
			note("mapping", line[i:])
		}
	}
	return out
}

// sharedMemoryLeaks describes what this process holds now beyond before.
func sharedMemoryLeaks(before map[string]int) []string {
	var out []string
	for k, n := range ownSharedMemory() {
		if n > before[k] {
			out = append(out, fmt.Sprintf("%s (%d more)", k, n-before[k]))
		}
	}
	sort.Strings(out)
	return out
}
