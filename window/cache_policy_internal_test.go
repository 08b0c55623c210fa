package window

import (
	"fmt"
	"testing"
	"unsafe"
)

// useScript drives a pageUse through a script of steps:
//
//	c   a miss that must be the page's first (cold)
//	f   a miss that must fill; the fill brings a copy
//	kV  a miss that must post the check's reads, which then return V (a digit)
//	jV  the same for a repeated Get (a poll)
//	q   a miss that must post the check's reads; rV: they return V
//	b   a miss that must be read through; Bn: (checkEvery<<n)-1 of them
//	Rn  (checkEvery<<n)*pollWeight-1 repeated misses that must be read through
//	h   copyHits hits; 1: one hit; p: copyHits*pollWeight-1 repeated hits; P: one more
//	e   an eviction
func useScript(u *pageUse, script string) error {
	repeat := false
	want := func(want missKind) error {
		if k := u.miss(repeat); k != want {
			return fmt.Errorf("got kind %d, want %d (repeat %v)", k, want, repeat)
		}
		return nil
	}
	for i := 0; i < len(script); i++ {
		op := script[i]
		var err error
		switch op {
		case 'c':
			err = want(missCold)
		case 'f':
			err = want(missFill)
			u.filled()
		case 'k', 'j':
			i++
			repeat = op == 'j'
			if err = want(missCheck); err == nil {
				u.posted()
				u.check(uint32(script[i] - '0'))
			}
		case 'q':
			if err = want(missCheck); err == nil {
				u.posted()
			}
		case 'r':
			i++
			u.check(uint32(script[i] - '0'))
		case 'b':
			err = want(missBypass)
		case 'B', 'R':
			i++
			n := checkEvery<<(script[i]-'0') - 1
			if repeat = op == 'R'; repeat {
				n = (checkEvery<<(script[i]-'0'))*pollWeight - 1
			}
			for j := 0; j < n && err == nil; j++ {
				if err = want(missBypass); err != nil {
					err = fmt.Errorf("read-through miss %d of %d: %w", j+1, n, err)
				}
			}
		case 'h':
			for range copyHits {
				u.hit(false)
			}
		case '1':
			u.hit(false)
		case 'p':
			for range copyHits*pollWeight - 1 {
				u.hit(true)
			}
		case 'P':
			u.hit(true)
		case 'e':
			u.released()
		}
		repeat = false
		if err != nil {
			return fmt.Errorf("step %d (%c) of %q: %w (state %+v)", i, op, script, err, *u)
		}
	}
	return nil
}

func TestPageUse(t *testing.T) {
	tests := []struct {
		name, script string
	}{
		{"first miss reads through, second caches", "cf"},
		{"read-mostly copies stay cached", "cfhfhfhfhfhf"},
		{"one short-lived copy is not enough", "cfhfPfhfPfhf"},
		{"copies that served no poll stay cached", "cfffff1f1fff"},
		{"short-lived copies in a row read through until a version stands still", "cfPfPk1B0k1f"},
		{"writes between the checks keep the page read through", "cfPfPk1B0k2B0k3B0k4B0k4f"},
		{"each relapse doubles the gap, up to the longest",
			"cfPfPk1B0k1f" + "Pk1B1k1f" + "Pk1B2k1f" + "Pk1B3k1f" + "Pk1B4k1f" + "Pk1B4k1f"},
		{"a copy that served its hits resets the streak and the gap", "cfPfPk1B0k1fPk2B1k2fhfPfPk1B0"},
		{"an evicted copy says nothing about writes", "cfefefefhf"},
		{"an eviction keeps the streak", "cfPfefPk1B0"},
		{"misses while the version read is in flight read through", "cfPfPqbbbr1qbr1f"},
		{"a version that moved while in flight keeps the read-through", "cfPfPqbr1qbbr2qr2f"},
		{"polls between checks count 1/pollWeight", "cfPfPk1R0j2R0j2f"},
		{"polled copies need pollWeight times the hits", "cfpfPk1B0k1fpPfpPfpfPk1"},
		{"hits and polls add up", "cf1pfPfPk1B0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u pageUse
			if err := useScript(&u, tt.script); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A record stays small: a rank keeps one for every remote page it may cache.
func TestPageUseSize(t *testing.T) {
	if n := unsafe.Sizeof(pageUse{}); n > 20 {
		t.Fatalf("pageUse takes %d bytes, more than 20", n)
	}
}

// The longest gap fits its counter.
func TestPageUseLongestGap(t *testing.T) {
	if n := checkEvery * pollWeight << maxLevel; n > int(^uint16(0)) {
		t.Fatalf("checkEvery*pollWeight<<maxLevel = %d does not fit pageUse.gap", n)
	}
}
