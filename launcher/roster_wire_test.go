package launcher

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// A roster crosses the control wire as runs and comes back whole; a block placement
// costs bytes per host, not per rank; a wire roster that does not add up is refused.
func TestRosterWire(t *testing.T) {
	hosts := make([]HostSlots, 100)
	for i := range hosts {
		hosts[i] = HostSlots{Name: fmt.Sprintf("h%03d", i), Slots: 10}
	}
	block, err := PlanRanks(hosts, 1000)
	if err != nil {
		t.Fatal(err)
	}
	cyclic, err := Place(hosts[:3], 7, Placement{MapBy: MapNode})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]Roster{"block": block, "cyclic": cyclic} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Roster
		if err := json.Unmarshal(b, &back); err != nil || back.Check() != nil || !reflect.DeepEqual(back, r) {
			t.Errorf("%s: %s came back as %+v (%v)", name, b, back, err)
		}
		if name == "block" && len(b) > 20*len(hosts) {
			t.Errorf("block roster of 1,000 ranks on 100 hosts: %d bytes on the wire, want at most %d", len(b), 20*len(hosts))
		}
	}
	for _, bad := range []string{
		`{"Size":2,"Hosts":["a"],"Runs":[0,1]}`,
		`{"Size":1,"Hosts":["a"],"Runs":[0,2]}`,
		`{"Size":1,"Hosts":["a"],"Runs":[1,1]}`,
		`{"Size":1,"Hosts":["a"],"Runs":[0]}`,
		`{"Size":1,"Hosts":["a"],"Runs":[0,0,0,1]}`,
		`{"Size":99999999,"Hosts":["a"],"Runs":[0,99999999]}`,
	} {
		var r Roster
		if err := json.Unmarshal([]byte(bad), &r); err == nil || !strings.Contains(err.Error(), "roster") {
			t.Errorf("%s: %v, want a roster error", bad, err)
		}
	}
}
