package collectives

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// lowerPush lets vectors of a few elements take the push form (and, with segs, cuts
// their blocks into directMaxSegments segments) until the returned function runs.
func lowerPush(segs bool) func() {
	oldPush, oldSeg := pushMinBlockBytes, directSegMinBytes
	pushMinBlockBytes = 64
	if segs {
		directSegMinBytes = 64
	}
	return func() { pushMinBlockBytes, directSegMinBytes = oldPush, oldSeg }
}

// TestAllreduceDirectPush: with every rank reached over tcp, direct writes the blocks of
// both rounds into the peers' scratch (allreduceDirectPush). Results are right for a
// predefined operator (one pass, Op.combine), a user-defined one and Max, not in place
// and in place (where the second round's blocks land where the first round's writes
// read), with recv holding garbage; send is left as it was. Counts below the push
// threshold keep the rendezvous; growing counts set the scratch up again, and a count
// that fits reuses it (calls alternate). With segs, blocks go in directMaxSegments
// segments of equal and unequal lengths.
func TestAllreduceDirectPush(t *testing.T) {
	cases := fromSendCases()
	for _, segs := range []bool{false, true} {
		for p := 2; p <= 4; p++ {
			t.Run(fmt.Sprintf("segments=%v/p=%d", segs, p), func(t *testing.T) {
				defer lowerPush(segs)()
				// 1 and p-1: blocks of one element at most (below 64 bytes: rendezvous
				// path); then growing, shrinking and odd counts.
				counts := []int{1, p - 1, 8 * p, 3001, 70001, 8*p + 1, 70001 - p, 24*p + 1}
				runJob(t, p, runtimetest.Options{Transport: "tcp"}, 60*time.Second, func(e rankEnv) error {
					forceAllreduce(e.w, algoDirect)
					defer forceAllreduce(e.w, algoAuto)
					if err := checkFromSend(e, cases, counts); err != nil {
						return err
					}
					s, err := stateOf(e.w)
					if err != nil {
						return err
					}
					if s.push == nil || s.noZeroCopy != 1 {
						return fmt.Errorf("no push scratch after the calls (noZeroCopy %d): the push form did not run", s.noZeroCopy)
					}
					return nil
				})
			})
		}
	}
}

// TestAllreduceDirectPushNotOnSharedHosts: when two members share a host (shm between
// them), no member takes the push form, whatever its own links are, since every member
// must decide alike; the result is still right.
func TestAllreduceDirectPushNotOnSharedHosts(t *testing.T) {
	defer lowerPush(false)()
	runJob(t, 3, runtimetest.Options{Hosts: []string{"a", "a", "b"}}, 30*time.Second, func(e rankEnv) error {
		forceAllreduce(e.w, algoDirect)
		defer forceAllreduce(e.w, algoAuto)
		oc := opCase[int64]{Sum[int64](), func(r, i int) int64 { return int64(wide(r, i)) }}
		for _, n := range []int{3001, 70001} {
			send := input(oc.gen, e.r, n)
			recv := make([]int64, n)
			if err := Allreduce(e.ctx, e.w, send, recv, oc.op); err != nil {
				return err
			}
			if err := compare(name[int64]("allreduce", n, false), recv, reference(oc, 3, n)); err != nil {
				return err
			}
		}
		s, err := stateOf(e.w)
		if err != nil {
			return err
		}
		if s.push != nil || s.noZeroCopy != -1 {
			return fmt.Errorf("push form on a job with two ranks on one host (noZeroCopy %d, scratch %v)", s.noZeroCopy, s.push != nil)
		}
		return nil
	})
}

// TestAllreduceDirectPushMismatch: ranks that pass different counts to the push form end
// in ErrMismatch (the scratch sizes or a note's count disagree) or their context's end,
// never in a wrong result, and some rank sees the mismatch. Both a count that changes the
// scratch size and one that does not (same largest block) are tried, and the World's
// Allreduce works again afterwards.
func TestAllreduceDirectPushMismatch(t *testing.T) {
	defer lowerPush(true)()
	const p = 3
	for _, delta := range []int{p * 100, 1} {
		t.Run(fmt.Sprintf("delta=%d", delta), func(t *testing.T) {
			seen := 0
			outcomes := make(chan mismatchOutcome, p)
			runJob(t, p, runtimetest.Options{Transport: "tcp"}, 40*time.Second, func(e rankEnv) error {
				forceAllreduce(e.w, algoDirect)
				defer forceAllreduce(e.w, algoAuto)
				n := 30001 // and 30002: the same largest block (10001), so the same scratch
				if e.r == 1 {
					n += delta
				}
				out, err := runMismatched(e, 2*time.Second, "allreduce", func(ce rankEnv) (func() error, error) {
					x := make([]int64, n)
					err := Allreduce(ce.ctx, ce.w, nil, x, Sum[int64]())
					return func() error { return fmt.Errorf("succeeded") }, err
				})
				if err != nil {
					return err
				}
				outcomes <- out
				x := []int64{int64(e.r)}
				if err := Allreduce(e.ctx, e.w, nil, x, Sum[int64]()); err != nil {
					return fmt.Errorf("allreduce after the mismatch: %w", err)
				}
				if x[0] != p*(p-1)/2 {
					return fmt.Errorf("allreduce after the mismatch: got %d", x[0])
				}
				return nil
			})
			close(outcomes)
			for o := range outcomes {
				if o == mismatchSucceeded {
					t.Fatalf("a mismatched push call succeeded")
				}
				if o == mismatchSeen {
					seen++
				}
			}
			if seen == 0 {
				t.Fatalf("no rank reported the mismatch (all timed out)")
			}
		})
	}
}
