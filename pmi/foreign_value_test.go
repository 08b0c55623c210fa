package pmi

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestForeignSplitsLongValues(t *testing.T) {
	for _, tc := range []struct {
		wire   string
		vallen string
		size   int
	}{{"1", "100", 5000}, {"1", "1024", 20000}, {"1", "1024", 0}, {"2", "", 7000}} {
		t.Run(fmt.Sprintf("PMI-%s/vallen%s/%d", tc.wire, tc.vallen, tc.size), func(t *testing.T) {
			pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
				if cmd == "get_maxes" {
					return "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=" + tc.vallen
				}
				return def
			})
			if err := putFenceGet(testCtx(t), pm.env(EnvPMIWire, tc.wire), blob(tc.size, 3)); err != nil {
				t.Fatal(err)
			}
			vallen := 1024
			if tc.vallen != "" {
				fmt.Sscan(tc.vallen, &vallen)
			}
			puts := 0
			for _, r := range pm.requests() {
				if strings.HasPrefix(r, "cmd=put ") || strings.HasPrefix(r, "cmd=kvs-put;") {
					puts++
					if tc.wire == "1" && len(r)+1 > MaxSimpleRequest {
						t.Errorf("request of %d bytes: %q", len(r)+1, Truncate(r))
					}
					v := r[strings.Index(r, "value=")+len("value="):]
					if v = strings.TrimSuffix(v, ";"); len(v) > vallen-1 {
						t.Errorf("value of %d bytes over vallen_max %d", len(v), vallen)
					}
				}
			}
			if want := (tc.size*4/3 + vallen - 2) / (vallen - 1); puts < want {
				t.Errorf("%d puts for %d bytes in values of %d, want at least %d", puts, tc.size, vallen, want)
			}
		})
	}
}

func TestForeignGarbledValue(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct{ name, head, part, err string }{
		{"no header", "AAAA", "", "no g1 header"},
		{"bad header", "g1:x:3:00000000:", "", "bad header"},
		{"part missing", "g1:2:1000:00000000:AAAA", "", "part 1 of 2 is missing"},
		{"truncated", "g1:1:1000:00000000:AAAA", "", "4 characters of base64 for 1000 bytes"},
		{"checksum", "g1:1:3:00000000:AAAA", "", "checksum mismatch"},
		{"bad base64", "g1:1:3:00000000:A!AA", "", "illegal base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pm := newFakePM(t, nil)
			pm.mu.Lock()
			pm.kvs["gorma-0-card"] = tc.head
			pm.mu.Unlock()
			f, err := Connect(ctx, pm.env())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = f.Get(ctx, 0, "card")
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "garbled") {
				t.Fatalf("got %v, want a garbled-value error with %q", err, tc.err)
			}
		})
	}
}

func TestForeignKeys(t *testing.T) {
	ctx := testCtx(t)
	pm := newFakePM(t, nil)
	f, err := Connect(ctx, pm.env())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Put(ctx, "bad key", nil); err == nil || !strings.Contains(err.Error(), "a key is letters") {
		t.Errorf("bad key: %v", err)
	}
	if err := f.Put(ctx, strings.Repeat("k", 60), []byte("x")); err == nil || !strings.Contains(err.Error(), "longer than the server's 63 bytes") {
		t.Errorf("long key: %v", err)
	}
	if _, err := f.Get(ctx, 1, "card"); err == nil || !strings.Contains(err.Error(), "no such rank") {
		t.Errorf("rank out of range: %v", err)
	}
	if err := f.Put(ctx, "card", make([]byte, MaxForeignValue+1)); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("huge value: %v", err)
	}
	if err := f.Put(ctx, "card", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	for _, r := range pm.requests() {
		if strings.HasPrefix(r, "cmd=put ") && !strings.HasPrefix(r, "cmd=put kvsname=kvs_42_0 key=gorma-0-card value=g1:1:2:") {
			t.Errorf("put request %q", r)
		}
	}
}

// TestForeignValueSizes puts values of every length around the part boundaries of a
// small vallen_max and reads them back.
func TestForeignValueSizes(t *testing.T) {
	ctx := testCtx(t)
	for _, wire := range []string{"1", "2"} {
		pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
			if cmd == "get_maxes" {
				return "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=90"
			}
			return def
		})
		f, err := Connect(ctx, pm.env(EnvPMIWire, wire))
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n <= 400; n++ {
			if err := f.Put(ctx, fmt.Sprintf("v%d", n), blob(n, n)); err != nil {
				t.Fatalf("PMI-%s put of %d bytes: %v", wire, n, err)
			}
		}
		if err := f.Fence(ctx); err != nil {
			t.Fatal(err)
		}
		for n := 0; n <= 400; n++ {
			v, err := f.Get(ctx, 0, fmt.Sprintf("v%d", n))
			if err != nil || !bytes.Equal(v, blob(n, n)) {
				t.Fatalf("PMI-%s get of %d bytes: %d bytes, %v", wire, n, len(v), err)
			}
		}
		f.Close()
	}
}
