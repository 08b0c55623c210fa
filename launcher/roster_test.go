package launcher

import (
	"reflect"
	"strings"
	"testing"
)

func TestPlanRanks(t *testing.T) {
	tests := []struct {
		hosts []HostSlots
		n     int
		want  Roster
	}{
		{[]HostSlots{{"a", 4}}, 4, Roster{Size: 4, Hosts: []string{"a"}, RankHost: []int{0, 0, 0, 0},
			LocalRank: []int{0, 1, 2, 3}, LocalSize: []int{4}}},
		{[]HostSlots{{"a", 2}, {"b", 2}, {"c", 2}}, 5, Roster{Size: 5, Hosts: []string{"a", "b", "c"},
			RankHost: []int{0, 0, 1, 1, 2}, LocalRank: []int{0, 1, 0, 1, 0}, LocalSize: []int{2, 2, 1}}},
		{[]HostSlots{{"a", 2}, {"b", 2}}, 1, Roster{Size: 1, Hosts: []string{"a"}, RankHost: []int{0},
			LocalRank: []int{0}, LocalSize: []int{1}}},
		{[]HostSlots{{"s", 0}, {"a", 1}, {"b", 3}}, 3, Roster{Size: 3, Hosts: []string{"a", "b"},
			RankHost: []int{0, 1, 1}, LocalRank: []int{0, 0, 1}, LocalSize: []int{1, 2}}},
	}
	for _, tt := range tests {
		got, err := PlanRanks(tt.hosts, tt.n)
		if err != nil {
			t.Errorf("PlanRanks(%v, %d): %v", tt.hosts, tt.n, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("PlanRanks(%v, %d) = %+v, want %+v", tt.hosts, tt.n, got, tt.want)
		}
		if err := got.Check(); err != nil {
			t.Errorf("Check: %v", err)
		}
		for h := range got.Hosts {
			if len(got.RanksOn(h)) != got.LocalSize[h] {
				t.Errorf("RanksOn(%d) = %v", h, got.RanksOn(h))
			}
		}
	}
	if _, err := PlanRanks([]HostSlots{{"a", 2}, {"b", 1}}, 4); err == nil || !strings.Contains(err.Error(), "a:2, b:1") {
		t.Errorf("oversubscription: %v", err)
	}
	if _, err := PlanRanks([]HostSlots{{"a", 2}}, 0); err == nil {
		t.Error("0 ranks accepted")
	}
}

func TestRosterCheck(t *testing.T) {
	good, _ := PlanRanks([]HostSlots{{"a", 2}, {"b", 2}}, 4)
	bad := []func(r *Roster){
		func(r *Roster) { r.RankHost[1] = 5 },
		func(r *Roster) { r.LocalRank[1] = 0 },
		func(r *Roster) { r.LocalSize[0] = 3 },
		func(r *Roster) { r.Size = 5 },
		func(r *Roster) { r.Hosts = nil },
	}
	for i, mutate := range bad {
		r := Roster{Size: good.Size, Hosts: append([]string(nil), good.Hosts...),
			RankHost: append([]int(nil), good.RankHost...), LocalRank: append([]int(nil), good.LocalRank...),
			LocalSize: append([]int(nil), good.LocalSize...)}
		mutate(&r)
		if r.Check() == nil {
			t.Errorf("mutation %d passed Check: %+v", i, r)
		}
	}
}
