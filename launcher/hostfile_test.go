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
		{"a max_slots=3\n", 1, "unknown attribute \"max_slots\""},
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
	f.Fuzz(func(t *testing.T, in string) {
		hosts, err := ParseHostfile("fuzz", strings.NewReader(in))
		if err != nil {
			if hosts != nil {
				t.Fatal("hosts and an error")
			}
			return
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
