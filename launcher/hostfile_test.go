package launcher

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseHostfile(t *testing.T) {
	in := `# cluster
node1 slots=4
node2:2   # trailing comment

node3
node1 slots=1
  10.0.0.5   slots=8
`
	got, err := ParseHostfile("hosts", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []HostSlots{{"node1", 5}, {"node2", 2}, {"node3", 1}, {"10.0.0.5", 8}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestParseHostfileErrors(t *testing.T) {
	tests := []struct {
		in   string
		line int
		want string
	}{
		{"a slots=x\n", 1, "slots \"x\""},
		{"\n\na slots=0\n", 3, "from 1"},
		{"a:2 slots=3\n", 1, "twice"},
		{"a cpus=3\n", 1, "unknown attribute \"cpus\""},
		{"a slots=4 max_slots=3\n", 1, "below its 4 slots"},
		{"a max_slots=2 max-slots=3\n", 1, "max_slots given twice"},
		{"a max_slots=0\n", 1, "max_slots: slots \"0\""},
		{"a b\n", 1, "unexpected \"b\""},
		{"ok\nb@d\n", 2, "not allowed"},
		{"a:\n", 1, "slots"},
		{":3\n", 1, "empty host name"},
		{"a:99999999\n", 1, "from 1 to"},
	}
	for _, tt := range tests {
		_, err := ParseHostfile("hf", strings.NewReader(tt.in))
		var he *HostfileError
		if !errors.As(err, &he) {
			t.Errorf("%q: got %v, want a *HostfileError", tt.in, err)
			continue
		}
		if he.File != "hf" || he.Line != tt.line || !strings.Contains(he.Msg, tt.want) {
			t.Errorf("%q: got %q, want hf:%d mentioning %q", tt.in, err, tt.line, tt.want)
		}
		if !strings.HasPrefix(err.Error(), "hf:") {
			t.Errorf("%q: message %q does not start with file:line", tt.in, err)
		}
	}
	if _, err := ParseHostfile("empty", strings.NewReader("# nothing\n\n")); err == nil || !strings.Contains(err.Error(), "no hosts") {
		t.Errorf("empty hostfile: got %v", err)
	}
}

func FuzzHostfile(f *testing.F) {
	f.Add("node1 slots=4\nnode2:2\n# c\n\nnode3\n")
	f.Add("a:1 slots=2")
	f.Add("x slots=\xff\n")
	f.Add("localhost slots=2 max_slots=4\nb max-slots=3\nb:2\n")
	f.Fuzz(func(t *testing.T, in string) {
		hosts, maxes, err := parseHostfile("fuzz", strings.NewReader(in))
		if err != nil {
			if hosts != nil || maxes != nil {
				t.Fatal("hosts and an error")
			}
			return
		}
		slots := map[string]int{}
		for _, h := range hosts {
			slots[h.Name] = h.Slots
		}
		for name, m := range maxes {
			if _, ok := slots[name]; !ok || m < 1 || m > maxSlots {
				t.Fatalf("max_slots %d for host %q from %q (hosts %v)", m, name, in, hosts)
			}
		}
		if r, err := Place(hosts, len(hosts)+1, Placement{Oversubscribe: true, MaxSlots: maxes}); err == nil {
			if r.Check() != nil || r.Size != len(hosts)+1 {
				t.Fatalf("oversubscribed roster %+v from %q", r, in)
			}
		}
		seen := map[string]bool{}
		for _, h := range hosts {
			if h.Slots < 1 || h.Slots > maxSlots || checkHostName(h.Name) != nil || seen[h.Name] {
				t.Fatalf("bad host %+v from %q", h, in)
			}
			seen[h.Name] = true
		}
		if _, err := PlanRanks(hosts, 1); err != nil {
			t.Fatalf("cannot place 1 rank on %v: %v", hosts, err)
		}
	})
}
