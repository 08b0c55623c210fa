package launcher

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
)

// testSpec is a job's spec on hosts hosts of 10 ranks each, with its addresses.
func testSpec(t testing.TB, hosts int) jobSpec {
	t.Helper()
	hs := make([]HostSlots, hosts)
	addrs := make([]string, hosts)
	for i := range hs {
		hs[i], addrs[i] = HostSlots{Name: fmt.Sprintf("h%04d", i), Slots: 10}, fmt.Sprintf("10.0.%d.%d:7946", i/256, i%256)
	}
	roster, err := PlanRanks(hs, 10*hosts)
	if err != nil {
		t.Fatal(err)
	}
	return jobSpec{ID: "0123456789abcdef", Submitter: "sub", Program: "/bin/prog", Args: []string{"-x"}, Env: []string{"A=1"},
		Secret: make([]byte, 32), Roster: roster, Node: 1, Transport: "tcp", BindTo: BindNone, Grace: time.Second,
		FT: true, Addrs: addrs, Rounds: 2, Fanout: 16, Failed: []int{3},
		Store: map[int]map[string][]byte{3: {"k": []byte("v")}}, Spawns: []pmi.SpawnGroup{{First: 20, Count: 2, Leader: 0}}}
}

// testSpecBytes is testSpec's spec as an fJob frame carries it.
func testSpecBytes(t testing.TB, hosts int) []byte {
	b, err := testSpec(t, hosts).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSpecWire: the spec crosses the wire as JSON for its small fields and binary for
// its roster and addresses, and comes back whole; a block placement of 1,000 hosts
// costs bytes per host; a body that does not add up is refused.
func TestSpecWire(t *testing.T) {
	cyclic := testSpec(t, 3)
	var err error
	if cyclic.Roster, err = Place([]HostSlots{{"a", 3}, {"b", 3}, {"c", 3}}, 7, Placement{MapBy: MapNode}); err != nil {
		t.Fatal(err)
	}
	noAddrs := testSpec(t, 2)
	noAddrs.Addrs = nil
	for name, s := range map[string]jobSpec{"block": testSpec(t, 1000), "cyclic": cyclic, "no addresses": noAddrs} {
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back jobSpec
		if err := back.UnmarshalBinary(b); err != nil || back.check() != nil || !reflect.DeepEqual(back, s) {
			t.Errorf("%s: came back as %+v (%v)", name, back, err)
		}
		if name == "block" && len(b) > 40*1000 {
			t.Errorf("a spec of 1,000 hosts: %d bytes on the wire, want at most 40 a host", len(b))
		}
	}
	good, _ := testSpec(t, 2).MarshalBinary()
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte{}, good...), 0),
		"json only": append([]byte{2}, "{}"...),
	} {
		var s jobSpec
		if err := s.UnmarshalBinary(bad); err == nil {
			t.Errorf("%s: decoded to %+v", name, s)
		}
	}
}

func FuzzSpecWire(f *testing.F) {
	good, _ := testSpec(f, 3).MarshalBinary()
	f.Add(good)
	f.Add([]byte{2, '{', '}', 1, 1, 1, 'a', 1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		var s jobSpec
		if s.UnmarshalBinary(p) != nil {
			return
		}
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatalf("%+v does not encode: %v", s, err)
		}
		var again jobSpec
		if err := again.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(again.Roster, s.Roster) || !reflect.DeepEqual(again.Addrs, s.Addrs) {
			t.Fatalf("%q decodes to %+v, which does not survive encoding: %+v, %v", p, s, again, err)
		}
		if s.check() == nil {
			s.Roster.RanksOn(s.Node)
		}
	})
}
