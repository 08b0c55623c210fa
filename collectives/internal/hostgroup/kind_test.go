package hostgroup

import (
	"strings"
	"testing"
)

// TestKindNames: every base kind, and its nonblocking and persistent forms, gets an id
// that fits KindBits and names it back; a name outside the table is another collective.
func TestKindNames(t *testing.T) {
	seen := map[uint8]string{}
	for _, base := range kinds[1:] {
		forms := []string{base}
		if !strings.Contains(base, " ") {
			forms = append(forms, "I"+strings.ToLower(base[:1])+base[1:], base+"Init")
		}
		for _, name := range forms {
			k := Kind(name)
			if k >= 1<<KindBits {
				t.Errorf("Kind(%q) = %d: more than %d bits", name, k, KindBits)
			}
			if got := kindName(k); got != name {
				t.Errorf("kindName(Kind(%q)) = %q", name, got)
			}
			if other, ok := seen[k]; ok {
				t.Errorf("Kind(%q) = Kind(%q) = %d", name, other, k)
			}
			seen[k] = name
		}
	}
	if got := kindName(Kind("Neighbor_alltoall")); got != "another collective" {
		t.Errorf("kindName of a name outside the table = %q, want another collective", got)
	}
}
