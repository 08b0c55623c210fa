package launcher

import (
	"reflect"
	"strings"
	"testing"
)

func TestPlace(t *testing.T) {
	abc := []HostSlots{{"a", 2}, {"b", 2}, {"c", 1}}
	tests := []struct {
		name     string
		hosts    []HostSlots
		n        int
		p        Placement
		rankHost []int // host index per rank, into the roster's hosts
		hosts2   []string
	}{
		{"core fills each host", abc, 5, Placement{}, []int{0, 0, 1, 1, 2}, []string{"a", "b", "c"}},
		{"socket is core's table", abc, 3, Placement{MapBy: MapSocket}, []int{0, 0, 1}, []string{"a", "b"}},
		{"node deals in turn", abc, 5, Placement{MapBy: MapNode}, []int{0, 1, 2, 0, 1}, []string{"a", "b", "c"}},
		{"node skips full hosts", []HostSlots{{"a", 3}, {"b", 1}}, 4, Placement{MapBy: MapNode}, []int{0, 1, 0, 0}, []string{"a", "b"}},
		{"npernode caps the slots", []HostSlots{{"a", 4}, {"b", 4}}, 4, Placement{PerNode: 2}, []int{0, 0, 1, 1}, []string{"a", "b"}},
		{"npernode with map-by node", []HostSlots{{"a", 4}, {"b", 4}}, 4, Placement{PerNode: 2, MapBy: MapNode}, []int{0, 1, 0, 1}, []string{"a", "b"}},
		{"npernode beyond slots with oversubscribe", []HostSlots{{"a", 1}, {"b", 1}}, 6, Placement{PerNode: 3, Oversubscribe: true},
			[]int{0, 0, 0, 1, 1, 1}, []string{"a", "b"}},
		{"oversubscribe deals the extra ranks", []HostSlots{{"a", 2}, {"b", 1}}, 6, Placement{Oversubscribe: true},
			[]int{0, 0, 1, 0, 1, 0}, []string{"a", "b"}},
		{"oversubscribe up to max_slots", []HostSlots{{"a", 1}, {"b", 1}}, 5, Placement{Oversubscribe: true, MaxSlots: map[string]int{"a": 2}},
			[]int{0, 1, 0, 1, 1}, []string{"a", "b"}},
		{"fewer ranks than slots", abc, 1, Placement{MapBy: MapNode}, []int{0}, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Place(tt.hosts, tt.n, tt.p)
			if err != nil {
				t.Fatalf("Place: %v", err)
			}
			if err := r.Check(); err != nil {
				t.Fatalf("Check: %v (%+v)", err, r)
			}
			if !reflect.DeepEqual(r.RankHost, tt.rankHost) || !reflect.DeepEqual(r.Hosts, tt.hosts2) {
				t.Errorf("Place(%v, %d, %+v) = hosts %v ranks %v, want %v %v", tt.hosts, tt.n, tt.p, r.Hosts, r.RankHost, tt.hosts2, tt.rankHost)
			}
		})
	}
	errs := []struct {
		hosts []HostSlots
		n     int
		p     Placement
		want  string
	}{
		{abc, 6, Placement{}, "-n 6 needs 6 slots but the hosts offer 5 (a:2, b:2, c:1); add hosts or slots, or pass --oversubscribe"},
		{abc, 4, Placement{PerNode: 1}, "the hosts offer 3 (a:2, b:2, c:1), at most 1 per host with --npernode 1; add hosts or raise --npernode"},
		{abc, 7, Placement{PerNode: 2, Oversubscribe: true}, "add hosts or raise --npernode"},
		{[]HostSlots{{"a", 1}}, 3, Placement{Oversubscribe: true, MaxSlots: map[string]int{"a": 2}}, "max_slots allow"},
	}
	for _, tt := range errs {
		if _, err := Place(tt.hosts, tt.n, tt.p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Place(%v, %d, %+v) = %v, want an error containing %q", tt.hosts, tt.n, tt.p, err, tt.want)
		}
	}
	if got := (Placement{PerNode: 2}).DefaultRanks(abc); got != 5 {
		t.Errorf("DefaultRanks with --npernode 2 = %d, want 5", got)
	}
}

func TestCPUList(t *testing.T) {
	for _, tt := range []struct {
		cpus []int
		want string
	}{{[]int{0}, "0"}, {[]int{0, 1, 2, 3}, "0-3"}, {[]int{0, 2, 3, 4, 7}, "0,2-4,7"}, {nil, ""}} {
		if got := cpuList(tt.cpus); got != tt.want {
			t.Errorf("cpuList(%v) = %q, want %q", tt.cpus, got, tt.want)
		}
	}
}
