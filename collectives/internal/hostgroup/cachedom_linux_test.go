package hostgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCacheDomainsTree: readLLC and cacheDomains on a pretend sysfs tree. The last-level
// cache is the highest level that holds data, L2 where no L3 is listed; a domain is
// named by its lowest processor; a processor whose caches cannot be read, or whose
// last-level cache does not list it, is in no known domain. One read records the domain
// of every processor that shares the cache.
func TestCacheDomainsTree(t *testing.T) {
	root := t.TempDir()
	l3 := func(shared string) []string {
		return []string{"1 Data 0", "1 Instruction 0", "2 Unified 0", "3 Unified " + shared}
	}
	writeCaches(t, root, map[int][]string{
		0:  l3("0-3,8-11"),
		4:  l3("4-7"),
		9:  l3("0-3,8-11"),
		12: {"1 Data 12", "2 Unified 12-13", "9 Instruction 12-15"},
		20: {},
		21: l3("oops"),
		22: l3("0-3"),
		23: {"1 Data 23", "x Unified 0-23"},
	})
	if got, err := readLLC(root, 9); err != nil || len(got) != 8 || got[0] != 0 || got[7] != 11 {
		t.Errorf("readLLC(processor 9) = %v, %v; want 0-3,8-11", got, err)
	}
	c := &cacheDomains{root: root}
	if d := c.of(9); d != 0 {
		t.Errorf("processor 9 in domain %d, want 0", d)
	}
	// Processor 0's domain comes from the table, not from its directory.
	if err := os.RemoveAll(filepath.Join(root, "cpu0")); err != nil {
		t.Fatal(err)
	}
	// In this order: 7 and 13 have no directory, and come from 4's and 12's reads.
	for _, q := range [][2]int{{0, 0}, {2, 0}, {11, 0}, {4, 4}, {7, 4}, {12, 12}, {13, 12}, {20, -1}, {21, -1}, {22, -1}, {23, 23}, {99, -1}, {-1, -1}} {
		if d := c.of(q[0]); d != q[1] {
			t.Errorf("processor %d in domain %d, want %d", q[0], d, q[1])
		}
	}
	// A rank's domain: the one that holds all its processors (srun -c, a block, one).
	for _, q := range []struct {
		cpus []int
		want int
	}{
		{[]int{9}, 0}, {[]int{0, 1, 2, 3}, 0}, {[]int{2, 3, 8, 9}, 0}, {[]int{4, 5, 6, 7}, 4}, {[]int{12, 13}, 12},
		{[]int{3, 4}, -1}, {[]int{0, 20}, -1}, {[]int{20}, -1}, {nil, -1},
	} {
		if d := c.ofSet(q.cpus); d != q.want {
			t.Errorf("processors %v in domain %d, want %d", q.cpus, d, q.want)
		}
	}
}

// writeCaches writes a pretend sysfs processor directory under root: for each processor,
// its caches as "level type shared_cpu_list" lines.
func writeCaches(t *testing.T, root string, caches map[int][]string) {
	t.Helper()
	for cpu, list := range caches {
		for i, c := range list {
			dir := filepath.Join(root, "cpu"+strconv.Itoa(cpu), "cache", "index"+strconv.Itoa(i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(c)
			for j, name := range []string{"level", "type", "shared_cpu_list"} {
				if j < len(f) {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(f[j]+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}
