package pmi

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzForeignConnect answers the PMI-1 requests of Connect, Put, Fence and Get with
// fuzzed lines: whatever a server says, the client returns (success or an error naming
// PMI), never hangs and never panics.
func FuzzForeignConnect(f *testing.F) {
	ok := []string{
		"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
		"cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024",
		"cmd=my_kvsname kvsname=kvs_1",
		"cmd=appnum appnum=0",
		"cmd=get_result rc=0 value=(vector,(0,1,1))",
		"cmd=put_result rc=0",
		"cmd=barrier_out",
		"cmd=get_result rc=0 value=g1:1:3:00000000:AAAA",
	}
	f.Add(strings.Join(ok, "\n"))
	f.Add(strings.Replace(strings.Join(ok, "\n"), "vallen_max=1024", "vallen_max=70", 1))
	f.Add("cmd=response_to_init rc=1 pmi_version=2 pmi_subversion=0")
	f.Add("garbage\n\x00")
	f.Fuzz(func(t *testing.T, script string) {
		fd := scriptedPM(t, strings.Split(script, "\n"))
		env := map[string]string{EnvPMIFD: strconv.Itoa(fd), EnvPMIRank: "0", EnvPMISize: "1", EnvPMIWire: "1"}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fr, err := Connect(ctx, func(k string) string { return env[k] })
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("Connect hung until its context ended: %v", err)
			}
			if !strings.Contains(err.Error(), "PMI") {
				t.Fatalf("error %q does not name PMI", err)
			}
			return
		}
		defer fr.Close()
		if err := fr.Put(ctx, "card", []byte("abc")); err != nil {
			return
		}
		if err := fr.Fence(ctx); err != nil {
			return
		}
		fr.Get(ctx, 0, "card")
		if ctx.Err() != nil {
			t.Fatal("a request hung until its context ended")
		}
	})
}
