package window

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestFreeVerdict: each refusal names its rank and epoch, and the least verdict (the
// agreement's Min) is the lowest refusing rank's, or freeOK when none refuses.
func TestFreeVerdict(t *testing.T) {
	for _, c := range []struct {
		v    verdict
		rank int
		text string
	}{
		{refusal(1, refuseLock, 0), 1, "rank 1 holds a Lock on rank 0 (Unlock before Free)"},
		{refusal(0, refuseLock, 5), 0, "rank 0 holds a Lock on rank 5 (Unlock before Free)"},
		{refusal(3, refuseLock, -1), 3, "rank 3 holds a Lock (Unlock before Free)"},
		{refusal(3, refuseLock, verdictTarget), 3, "rank 3 holds a Lock (Unlock before Free)"},
		{refusal(1<<20, refuseLock, verdictTarget-1), 1 << 20, "rank 1048576 holds a Lock on rank 268435454"},
		{refusal(2, refuseLockAll, 0), 2, "rank 2 holds a LockAll epoch (UnlockAll before Free)"},
		{refusal(4, refuseAccess, 0), 4, "rank 4 has a PSCW access epoch open (Complete before Free)"},
		{refusal(7, refuseExposure, 0), 7, "rank 7 has a PSCW exposure epoch open (Wait or Test before Free)"},
	} {
		if c.v.ok() {
			t.Errorf("%#x: a refusal reads as freeOK", uint64(c.v))
			continue
		}
		err := c.v.err("free")
		var we *Error
		if !errors.Is(err, ErrEpoch) || !errors.As(err, &we) || we.Rank != c.rank || we.Op != "free" {
			t.Errorf("%#x: %v, want a free *Error of rank %d wrapping ErrEpoch", uint64(c.v), err, c.rank)
		}
		if !strings.Contains(err.Error(), c.text) {
			t.Errorf("%#x: %q does not say %q", uint64(c.v), err, c.text)
		}
	}

	for _, c := range []struct {
		votes []verdict
		want  verdict
	}{
		{[]verdict{freeOK, freeOK, freeOK}, freeOK},
		{[]verdict{freeOK, refusal(1, refuseExposure, 0), refusal(2, refuseLock, 0)}, refusal(1, refuseExposure, 0)},
		{[]verdict{refusal(2, refuseLockAll, 0), freeOK, refusal(1, refuseLock, 2)}, refusal(1, refuseLock, 2)},
		{[]verdict{refusal(0, refuseExposure, 0), refusal(1, refuseLock, 0)}, refusal(0, refuseExposure, 0)},
	} {
		if got := slices.Min(c.votes); got != c.want {
			t.Errorf("Min of %x is %#x, want %#x", c.votes, uint64(got), uint64(c.want))
		}
	}
}
