package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// kbField returns the value in kB of the line "NAME:   1234 kB" of a /proc status or
// meminfo text.
func kbField(text, name string) (int64, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("no %s line", name)
}

// procKB reads the fields names (in kB) of the /proc file path.
func procKB(path string, names ...string) ([]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(names))
	for i, n := range names {
		if out[i], err = kbField(string(b), n); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

// shmemKB is the host's shared memory: /proc/meminfo's Shmem (tmpfs and /dev/shm files,
// memfd and SysV segments, shared anonymous mappings: the pages in use, not the sizes
// mapped).
func shmemKB() (int64, error) {
	v, err := procKB("/proc/meminfo", "Shmem")
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// openFDs counts this process's open file descriptors, without the one that reading
// /proc/self/fd holds.
func openFDs() (int, error) {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	return len(es) - 1, nil
}
