package gosched

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

func TestMain(m *testing.M) { os.Exit(testbudget.Run(m)) }

// TestYield: with one P, Yield lets another goroutine run; after SetLocked it does not
// give the P away, and Locked reports the switch.
func TestYield(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ran atomic.Bool
	go ran.Store(true)
	for i := 0; !ran.Load(); i++ {
		if i == 1000 {
			t.Fatal("1000 Yields with one P did not let another goroutine run")
		}
		Yield()
	}
	if Locked() {
		t.Fatal("Locked before SetLocked")
	}
	SetLocked()
	defer locked.Store(false)
	if !Locked() {
		t.Fatal("not Locked after SetLocked")
	}
	ran.Store(false)
	go ran.Store(true)
	for range 100 {
		Yield() // returns at once: no switch to the goroutine above
	}
	if ran.Load() {
		t.Error("a Yield after SetLocked let another goroutine run on the one P")
	}
}
