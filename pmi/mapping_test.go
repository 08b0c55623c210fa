package pmi

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProcessMapping(t *testing.T) {
	tests := []struct {
		v    string
		size int
		want []int
		err  string
	}{
		{v: "(vector,(0,4,1))", size: 4, want: []int{0, 1, 2, 3}},
		{v: "(vector,(0,1,4))", size: 4, want: []int{0, 0, 0, 0}},
		{v: "(vector,(0,2,2))", size: 4, want: []int{0, 0, 1, 1}},
		{v: "(vector,(0,2,1),(0,2,1))", size: 4, want: []int{0, 1, 0, 1}},
		{v: "(vector,(0,2,2),(1,1,3))", size: 7, want: []int{0, 0, 1, 1, 1, 1, 1}},
		{v: "(vector,(0,2,2),(2,2,4))", size: 12, want: []int{0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}},
		{v: "(vector,(0,4,1),(0,4,1),(2,2,1),(2,2,1))", size: 12, want: []int{0, 1, 2, 3, 0, 1, 2, 3, 2, 3, 2, 3}},
		// Node ids renumbered by first appearance.
		{v: "(vector,(5,1,1),(2,1,2))", size: 3, want: []int{0, 1, 1}},
		// Fewer ranks listed than the job has: the vector repeats, as MPICH reads it.
		{v: "(vector,(0,2,1))", size: 5, want: []int{0, 1, 0, 1, 0}},
		{v: "(vector,(0,1,2))", size: 3, want: []int{0, 0, 0}},
		{v: " ( vector , (0, 2 ,2) ) ", size: 4, want: []int{0, 0, 1, 1}},
		{v: "", size: 4, want: nil},
		{v: "(vector,(0,2,2))", size: 3, err: "more ranks than the job's 3"},
		{v: "(vector,(0,1,4),(1,1,4))", size: 6, err: "PMI_SIZE short"},
		{v: "(vector,(0,0,4))", size: 4, err: "outside 1.."},
		{v: "(vector,(0,1,0))", size: 4, err: "outside 1.."},
		{v: "(vector)", size: 4, err: "without blocks"},
		{v: "(vector,(0,1,4)", size: 4, err: `want "," or ")"`},
		{v: "(vector,(0,1,4)))", size: 4, err: "trailing"},
		{v: "(vector,(0,1,4),)", size: 4, err: `want "("`},
		{v: "(vector;(0,1,4))", size: 4, err: `want "," or ")"`},
		{v: "(hostlist,(0,1,4))", size: 4, err: `want "vector"`},
		{v: "(vector,(0,1,-4))", size: 4, err: "want a number"},
		{v: "(vector,(0,1,99999999999))", size: 4, err: "want a number"},
		{v: "(vector,(0,1,4))", size: 0, err: "want 1.."},
		{v: "garbage", size: 4, err: `want "("`},
	}
	for _, tt := range tests {
		got, err := ParseProcessMapping(tt.v, tt.size)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "PMI_process_mapping") {
				t.Errorf("ParseProcessMapping(%q, %d) = %v, %v; want an error naming PMI_process_mapping with %q", tt.v, tt.size, got, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseProcessMapping(%q, %d) = %v, %v; want %v", tt.v, tt.size, got, err, tt.want)
		}
	}
}

func TestFormatProcessMapping(t *testing.T) {
	tests := []struct {
		nodes []int
		want  string
	}{
		{nil, ""},
		{[]int{0}, "(vector,(0,1,1))"},
		{[]int{0, 0, 0, 0}, "(vector,(0,1,4))"},
		{[]int{0, 1, 2, 3}, "(vector,(0,4,1))"},
		{[]int{0, 0, 1, 1}, "(vector,(0,2,2))"},
		{[]int{0, 1, 0, 1}, "(vector,(0,2,1),(0,2,1))"},
		{[]int{0, 0, 1, 1, 1, 1, 1}, "(vector,(0,2,2),(1,1,3))"},
		{[]int{0, 1, 1, 1}, "(vector,(0,2,1),(1,1,2))"},
		{[]int{0, 0, 1, 2, 2}, "(vector,(0,1,2),(1,2,1),(2,1,1))"},
	}
	for _, tt := range tests {
		got := FormatProcessMapping(tt.nodes)
		if got != tt.want {
			t.Errorf("FormatProcessMapping(%v) = %q, want %q", tt.nodes, got, tt.want)
		}
		if len(tt.nodes) == 0 {
			continue
		}
		back, err := ParseProcessMapping(got, len(tt.nodes))
		if err != nil || !reflect.DeepEqual(back, tt.nodes) {
			t.Errorf("ParseProcessMapping(%q) = %v, %v; want %v back", got, back, err, tt.nodes)
		}
	}
}

func FuzzParseProcessMapping(f *testing.F) {
	for _, s := range []string{"(vector,(0,4,1))", "(vector,(0,2,1),(0,2,1))", "(vector,(0,2,2),(1,1,3))", "", "(vector,(0,1,0))", "(vector"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, v string, size int) {
		if size > 1<<12 {
			size %= 1 << 12
		}
		nodes, err := ParseProcessMapping(v, size)
		if err != nil {
			if !strings.Contains(err.Error(), "PMI_process_mapping") {
				t.Fatalf("error %q does not name PMI_process_mapping", err)
			}
			return
		}
		if nodes == nil {
			return
		}
		if len(nodes) != size {
			t.Fatalf("%q for %d ranks gave %d nodes", v, size, len(nodes))
		}
		seen := -1
		for _, n := range nodes {
			if n > seen+1 || n < 0 {
				t.Fatalf("%q: node indices %v are not numbered by first appearance", v, nodes)
			}
			if n > seen {
				seen = n
			}
		}
		back, err := ParseProcessMapping(FormatProcessMapping(nodes), size)
		if err != nil || !reflect.DeepEqual(back, nodes) {
			t.Fatalf("%q: format/parse of %v gave %v, %v", v, nodes, back, err)
		}
	})
}
