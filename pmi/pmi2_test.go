package pmi

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPMI2(t *testing.T) {
	ctx := testCtx(t)
	pm := newFakePM(t, nil)
	f, err := Connect(ctx, pm.env(EnvPMIWire, "2", EnvPMIJobID, "42.0"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version() != "2.0" || f.KVSName() != "42.0" {
		t.Errorf("version %q jobid %q", f.Version(), f.KVSName())
	}
	f.Close()
	reqs := pm.requests()
	want := []string{
		"cmd=init pmi_version=2 pmi_subversion=0",
		"cmd=fullinit;pmijobid=42.0;pmirank=0;threaded=FALSE;",
		"cmd=job-getid;",
		"cmd=info-getjobattr;key=PMI_process_mapping;",
	}
	if !reflect.DeepEqual(reqs, want) {
		t.Errorf("requests\n%q\nwant\n%q", reqs, want)
	}
	pm2 := newFakePM(t, func(p *fakePM, cmd string, req Field2, def string) string {
		if cmd == "info-getjobattr" {
			return "cmd=info-getjobattr-response;found=TRUE;rc=0;value=(vector,(0,1,1));"
		}
		return def
	})
	if err := putFenceGet(ctx, pm2.env(EnvPMIWire, "2"), blob(3000, 4)); err != nil {
		t.Fatal(err)
	}
	for _, r := range pm2.requests() {
		if strings.HasPrefix(r, "cmd=kvs-get;") && !strings.HasPrefix(r, "cmd=kvs-get;jobid=42.0;srcid=-1;key=gorma-0-") {
			t.Errorf("kvs-get request %q", r)
		}
	}
}

func TestPMI2Errors(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct{ name, cmd, answer, err string }{
		{"fullinit refused", "fullinit", "cmd=fullinit-response;rc=14;errmsg=pmirank missing;", "pmirank missing"},
		{"fullinit without size", "fullinit", "cmd=fullinit-response;rc=0;rank=0;", "answer without size="},
		{"fence refused", "kvs-fence", "cmd=kvs-fence-response;rc=1;errmsg=failed to send temp kvs;", "PMI-2 kvs-fence (rank 0)"},
		{"bad found", "kvs-get", "cmd=kvs-get-response;rc=0;found=MAYBE;", "neither TRUE nor FALSE"},
		{"other command", "kvs-put", "cmd=kvs-fence-response;rc=0;", "want cmd=kvs-put-response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
				if cmd == tc.cmd {
					return tc.answer
				}
				return def
			})
			err := putFenceGet(ctx, pm.env(EnvPMIWire, "2"), blob(10, 5))
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "PMI-2") {
				t.Fatalf("got %v, want an error naming PMI-2 with %q", err, tc.err)
			}
		})
	}
	// No PMI_RANK nor PMI_ID: fullinit has nothing to send.
	pm := newFakePM(t, nil)
	env := pm.env(EnvPMIWire, "2")
	_, err := Connect(ctx, func(k string) string {
		if k == EnvPMIRank || k == EnvPMISize {
			return ""
		}
		return env(k)
	})
	if err == nil || !strings.Contains(err.Error(), "PMI_RANK") {
		t.Fatalf("got %v, want an error naming PMI_RANK", err)
	}
}

// TestPMIFallback: a server that refuses PMI-1 and names 2.0 (Slurm, when another rank on
// its node chose PMI-2) is spoken to in PMI-2 on the same connection under
// GORMA_PMI=auto, and refused under GORMA_PMI=1.
func TestPMIFallback(t *testing.T) {
	ctx := testCtx(t)
	refuse := func(p *fakePM, cmd string, _ Field2, def string) string {
		if cmd == "init" {
			return "cmd=response_to_init rc=1 pmi_version=2 pmi_subversion=0"
		}
		return def
	}
	pm := newFakePM(t, refuse)
	if err := putFenceGet(ctx, pm.env(), blob(100, 6)); err != nil {
		t.Fatal(err)
	}
	if reqs := pm.requests(); len(reqs) < 2 || reqs[0] != "cmd=init pmi_version=1 pmi_subversion=1" || !strings.HasPrefix(reqs[1], "cmd=fullinit;") {
		t.Errorf("requests %q: want init 1.1, then fullinit", reqs)
	}
	pm1 := newFakePM(t, refuse)
	_, err := Connect(ctx, pm1.env(EnvPMIWire, "1"))
	if err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "GORMA_PMI=1") {
		t.Fatalf("got %v, want a refusal naming GORMA_PMI", err)
	}
}
