package window_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// TestFreedLocalMissesNextWindow is issue 36's stale slice: l := win.Local(); win.Free;
// a new Allocate; l[0] = 42. The freed memory sits in the arena's quarantine, so the
// write lands in memory no live window uses: the new window reads zero at every rank,
// locally and from its neighbour.
func TestFreedLocalMissesNextWindow(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		for _, n := range []int{8, 1024, 1 << 16} {
			old, err := window.Allocate[int64](ctx, w, n)
			if err != nil {
				return err
			}
			stale := old.Local()
			if err := old.Free(ctx); err != nil {
				return err
			}
			win, err := window.Allocate[int64](ctx, w, n)
			if err != nil {
				return err
			}
			for i := range stale {
				stale[i] = 42
			}
			if err := win.Fence(ctx, 0); err != nil {
				return err
			}
			next := (w.Rank() + 1) % w.Size()
			got := make([]int64, n)
			if err := win.Get(got, next, 0); err != nil {
				return err
			}
			if err := win.Fence(ctx, 0); err != nil {
				return err
			}
			for i := range n {
				if win.Local()[i] != 0 || got[i] != 0 {
					return fmt.Errorf("%d elements: after a write through the freed window's slice, element %d is %d here and %d at rank %d, want 0",
						n, i, win.Local()[i], got[i], next)
				}
			}
			if err := win.Free(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// guardedFree is the line Free prints under GORMA_CHECK=1 for a guarded window, after
// golaunch's rank prefix; faultAt is the Go runtime's line for the stale write.
var (
	guardedFree = regexp.MustCompile(`(?m)^\[(\d+)\] gorma: GORMA_CHECK=1: Free of win\d+ \(Allocate\[int64\], 8 elements at rank \d+\): ` +
		`its memory \[0x([0-9a-f]+), 0x([0-9a-f]+)\) is inaccessible in this process`)
	faultAt = regexp.MustCompile(`(?m)^\[(\d+)\] unexpected fault address 0x([0-9a-f]+)$`)
)

// TestLaunchFreedWriteFaults runs rmaprog's freed-write scenario as a real job: by
// default every rank passes (the new windows are untouched); under GORMA_CHECK=1 the
// write through the stale slice faults, the job fails, and a rank's stderr names the
// freed window and its range, with the fault address inside it.
func TestLaunchFreedWriteFaults(t *testing.T) {
	golaunch, rmaprog := buildLaunchBins(t)
	args := []string{"-n", "2", "--timeout", testbudget.Scale(60 * time.Second).String(), rmaprog, "freed-write"}
	stdout, stderr, err := runLaunch(t, golaunch, args)
	if err != nil || !strings.Contains(stdout, "PASS freed-write 2 ranks") {
		t.Fatalf("golaunch %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}

	args = append([]string{"-x", "GORMA_CHECK=1"}, args...)
	stdout, stderr, err = runLaunch(t, golaunch, args)
	if err == nil {
		t.Fatalf("golaunch %s succeeded; want the stale write to fault\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout, stderr)
	}
	ranges := map[string][2]uint64{}
	for _, m := range guardedFree.FindAllStringSubmatch(stderr, -1) {
		lo, _ := strconv.ParseUint(m[2], 16, 64)
		hi, _ := strconv.ParseUint(m[3], 16, 64)
		ranges[m[1]] = [2]uint64{lo, hi}
	}
	faults := faultAt.FindAllStringSubmatch(stderr, -1)
	if len(faults) == 0 {
		t.Fatalf("the job failed without a fault\nstderr:\n%s", stderr)
	}
	for _, f := range faults {
		at, _ := strconv.ParseUint(f[2], 16, 64)
		r, ok := ranges[f[1]]
		if !ok || at < r[0] || at >= r[1] {
			t.Fatalf("rank %s faulted at %#x, outside the freed window it named (%v, range %#x)\nstderr:\n%s", f[1], at, ok, r, stderr)
		}
	}
}
