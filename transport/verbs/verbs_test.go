package verbs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

func TestQPStateTransitions(t *testing.T) {
	states := []verbs.QPState{verbs.Reset, verbs.Init, verbs.RTR, verbs.RTS, verbs.Err}
	legal := map[[2]verbs.QPState]bool{
		{verbs.Reset, verbs.Init}: true, {verbs.Init, verbs.RTR}: true, {verbs.RTR, verbs.RTS}: true,
	}
	for _, from := range states {
		for _, to := range states {
			want := legal[[2]verbs.QPState{from, to}] || to == verbs.Err
			if got := from.CanTransition(to); got != want {
				t.Errorf("%v → %v: CanTransition = %v, want %v", from, to, got, want)
			}
		}
	}
	if verbs.RTR.CanPostSend() || !verbs.RTS.CanPostSend() || verbs.Reset.CanPostRecv() || !verbs.Init.CanPostRecv() {
		t.Error("post rules do not follow libibverbs")
	}
}

func TestSliceOffset(t *testing.T) {
	outer := make([]byte, 100)
	for _, tc := range []struct {
		name  string
		inner []byte
		off   int
		ok    bool
	}{
		{"whole", outer, 0, true},
		{"middle", outer[10:20], 10, true},
		{"tail", outer[99:], 99, true},
		{"empty", nil, 0, true},
		{"past cap", outer[90:100:100], 90, true},
		{"other", make([]byte, 4), 0, false},
		{"extends beyond", outer[95:100][:5], 95, true},
	} {
		off, ok := verbs.SliceOffset(outer, tc.inner)
		if ok != tc.ok || (ok && off != tc.off) {
			t.Errorf("%s: got (%d, %v), want (%d, %v)", tc.name, off, ok, tc.off, tc.ok)
		}
	}
	if _, ok := verbs.SliceOffset(outer[:50], outer[40:60]); ok {
		t.Error("a slice running past the MR's end was accepted")
	}
}

func TestOpenUnknownProvider(t *testing.T) {
	_, err := verbs.Open("nonesuch", verbs.Config{})
	if !errors.Is(err, verbs.ErrUnknownProvider) {
		t.Fatalf("Open(nonesuch) = %v, want ErrUnknownProvider", err)
	}
	var ve *verbs.Error
	if !errors.As(err, &ve) || ve.Provider != "nonesuch" || !strings.Contains(err.Error(), "import the provider package") {
		t.Fatalf("error does not say how to fix it: %v", err)
	}
}

type fakeProvider struct{ name string }

func (p fakeProvider) Name() string                            { return p.name }
func (p fakeProvider) Caps() verbs.Caps                        { return verbs.CapSend }
func (p fakeProvider) Open(verbs.Config) (verbs.Device, error) { return nil, errors.New("fake") }

// registerRuns makes each run's provider name fresh, so that -count > 1 works.
var registerRuns int

func TestRegisterTwicePanics(t *testing.T) {
	registerRuns++
	name := fmt.Sprintf("fake-once-%d", registerRuns)
	verbs.Register(fakeProvider{name})
	if _, ok := verbs.Lookup(name); !ok {
		t.Fatal("registered provider not found")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("second Register of one name did not panic")
		}
	}()
	verbs.Register(fakeProvider{name})
}

func TestStringsAndDefaults(t *testing.T) {
	if s := (verbs.CapSend | verbs.CapAtomic).String(); s != "send|atomic" {
		t.Errorf("Caps.String = %q", s)
	}
	if s := (verbs.RemoteRead | verbs.RemoteWrite).String(); s != "remote-read|remote-write" {
		t.Errorf("Access.String = %q", s)
	}
	if verbs.RemAccessErr.String() != "RemAccessErr" || verbs.OpAtomicCmpSwap.String() != "AtomicCmpSwap" {
		t.Error("enum names drifted from libibverbs")
	}
	cfg := verbs.Config{}.WithDefaults()
	if cfg.ArenaSize != verbs.DefaultArenaSize || cfg.MaxMRs != verbs.DefaultMaxMRs {
		t.Errorf("defaults not applied: %+v", cfg)
	}
	for _, m := range []verbs.WaitMode{verbs.WaitHybrid, verbs.WaitSpin, verbs.WaitBlock} {
		if got, err := verbs.ParseWaitMode(m.String()); err != nil || got != m {
			t.Errorf("ParseWaitMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := verbs.ParseWaitMode("busy"); !errors.Is(err, verbs.ErrInvalid) {
		t.Errorf("ParseWaitMode(busy) = %v", err)
	}
	wc := verbs.WC{WRID: 7, Status: verbs.RemAccessErr, Op: verbs.WCRDMAWrite, QPN: 3}
	if err := wc.Err(); err == nil || !strings.Contains(err.Error(), "RemAccessErr") {
		t.Errorf("WC.Err = %v", err)
	}
}
