package hostgroup

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCacheDomainsCPUList: parseCPUList reads sysfs processor lists and refuses
// malformed ones.
func TestCacheDomainsCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"0\n", []int{0}},
		{"0-3", []int{0, 1, 2, 3}},
		{"8-9,0-1,4\n", []int{0, 1, 4, 8, 9}},
		{"2,2-3", []int{2, 3}},
		{"65535", []int{65535}},
	} {
		if got, err := parseCPUList(c.in); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "\n", "a", "1-", "-1", "3-2", "1,,2", "0-65536", "1 2", "0x1"} {
		if got, err := parseCPUList(in); err == nil {
			t.Errorf("parseCPUList(%q) = %v, want an error", in, got)
		}
	}
}

// FuzzCacheDomainsCPUList: parseCPUList never panics, and what it accepts is ascending,
// without repeats, within [0, maxCPU), and parses again to itself.
func FuzzCacheDomainsCPUList(f *testing.F) {
	for _, s := range []string{"0", "0-3,8-11\n", "1,3,5", "0-65535", "7-7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := parseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 || cpus[0] < 0 || cpus[len(cpus)-1] >= maxCPU {
			t.Fatalf("parseCPUList(%q) = %v: empty or out of range", s, cpus)
		}
		for i := 1; i < len(cpus); i++ {
			if cpus[i] <= cpus[i-1] {
				t.Fatalf("parseCPUList(%q) = %v: not ascending", s, cpus)
			}
		}
		items := make([]string, len(cpus))
		for i, p := range cpus {
			items[i] = strconv.Itoa(p)
		}
		if again, err := parseCPUList(strings.Join(items, ",")); err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("parseCPUList(%q) = %v, which parses again to %v, %v", s, cpus, again, err)
		}
	})
}

// TestCacheDomainsHost: this machine's sysfs gives every processor a domain that is a
// processor of the domain itself, the same from every processor, or -1 for all of them.
func TestCacheDomainsHost(t *testing.T) {
	c := &cacheDomains{root: sysCPU}
	n := runtime.NumCPU()
	known := 0
	for p := range n {
		d := c.of(p)
		switch {
		case d < 0:
			continue
		case d > p:
			t.Errorf("processor %d in domain %d, which is not its lowest processor", p, d)
		case c.of(d) != d:
			t.Errorf("processor %d in domain %d, whose processor is in domain %d", p, d, c.of(d))
		}
		known++
	}
	if known != 0 && known != n {
		t.Errorf("%d of %d processors have a known domain", known, n)
	}
	if d := c.of(-1); d != -1 {
		t.Errorf("domain of processor -1 is %d", d)
	}
	t.Logf("%d processors, domain of processor 0: %d", n, c.of(0))
}
