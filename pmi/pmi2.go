package pmi

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// PMI-2 to a foreign server: after the PMI-1 style init line, length-prefixed frames.
// design.md has the exchanges.

// PMI-2 limits from MPICH's pmi2.h (PMI2_MAX_KEYLEN, PMI2_MAX_VALLEN), which Slurm shares;
// PMI-2 has no get_maxes. One byte is left for the C string's NUL.
const (
	pmi2KeyMax = 64 - 1
	pmi2ValMax = 1024 - 1
)

// start2 runs fullinit, job-getid and the job attribute PMI_process_mapping.
func (f *Foreign) start2(ctx context.Context, e pmiEnv) error {
	f.version = "2.0"
	f.keyMax, f.valMax = pmi2KeyMax, pmi2ValMax
	if e.pmiRank == "" {
		return fmt.Errorf("pmi: PMI-2 fullinit needs %s (or %s), which the process manager sets; it is not set", EnvPMIRank, EnvPMIID)
	}
	kv := []string{}
	if e.jobid != "" {
		kv = append(kv, "pmijobid", e.jobid)
	}
	kv = append(kv, "pmirank", e.pmiRank, "threaded", "FALSE")
	r, err := f.call2(ctx, "fullinit", "fullinit-response", kv...)
	if err != nil {
		return err
	}
	rank, err := intField(r.Get, "rank", 0)
	if err == nil {
		var size int
		if size, err = intField(r.Get, "size", 1); err == nil {
			err = f.checkPlace(rank, size, e)
		}
	}
	if err != nil {
		return f.fail("fullinit", r.Raw, err)
	}
	if _, ok := r.Get("appnum"); ok {
		if f.appnum, err = intField(r.Get, "appnum", -1); err != nil {
			return f.fail("fullinit", r.Raw, err)
		}
	}
	if err := f.jobid2(ctx, e); err != nil {
		return err
	}
	v, err := f.jobAttr2(ctx, ProcessMappingKey)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return f.setMapping("info-getjobattr "+ProcessMappingKey, v)
}

// jobid2 asks job-getid for the jobid (the KVS name kvs-get names), falling back to
// PMI_JOBID when the server does not answer it.
func (f *Foreign) jobid2(ctx context.Context, e pmiEnv) error {
	r, err := f.request2(ctx, "job-getid", "job-getid-response")
	if err != nil {
		return err
	}
	f.kvsname = r.Value("jobid")
	if refusal(r.Get) != nil || f.kvsname == "" {
		f.kvsname = e.jobid
	}
	if f.kvsname != "" && frameValueOK(f.kvsname) != nil {
		return f.fail("job-getid", r.Raw, fmt.Errorf("%w: jobid %q cannot travel in a frame", ErrProtocol, f.kvsname))
	}
	return nil
}

// request2 sends the frame cmd=op with kv and reads the answer cmd=want, without judging
// its rc.
func (f *Foreign) request2(ctx context.Context, op, want string, kv ...string) (Frame, error) {
	req, err := FormatFrame(op, kv...)
	if err != nil {
		return Frame{}, f.fail(op, "", err)
	}
	var fr Frame
	err = f.roundTrip(ctx, op, req, func() error {
		fr, err = f.readFrame(op, want)
		return err
	})
	return fr, err
}

// call2 is request2 that turns rc != 0 into an error.
func (f *Foreign) call2(ctx context.Context, op, want string, kv ...string) (Frame, error) {
	fr, err := f.request2(ctx, op, want, kv...)
	if err == nil {
		if rerr := refusal(fr.Get); rerr != nil {
			err = f.fail(op, fr.Raw, rerr)
		}
	}
	return fr, err
}

func (f *Foreign) put2(ctx context.Context, key, value string) error {
	_, err := f.call2(ctx, "kvs-put", "kvs-put-response", "key", key, "value", value)
	return err
}

func (f *Foreign) fence2(ctx context.Context) error {
	_, err := f.call2(ctx, "kvs-fence", "kvs-fence-response")
	return err
}

func (f *Foreign) finalize2(ctx context.Context) error {
	_, err := f.call2(ctx, "finalize", "finalize-response")
	return err
}

// get2 reads one key of the job's KVS with kvs-get (srcid=-1: any rank's).
func (f *Foreign) get2(ctx context.Context, key string) (string, error) {
	kv := []string{}
	if f.kvsname != "" {
		kv = append(kv, "jobid", f.kvsname)
	}
	kv = append(kv, "srcid", "-1", "key", key)
	return f.found2(ctx, "kvs-get", "kvs-get-response", key, kv...)
}

// jobAttr2 reads a job attribute with info-getjobattr.
func (f *Foreign) jobAttr2(ctx context.Context, key string) (string, error) {
	return f.found2(ctx, "info-getjobattr", "info-getjobattr-response", key, "key", key)
}

// found2 runs a PMI-2 request answered with found=TRUE|FALSE and value=.
func (f *Foreign) found2(ctx context.Context, op, want, key string, kv ...string) (string, error) {
	fr, err := f.call2(ctx, op, want, kv...)
	if err != nil {
		return "", err
	}
	found, ok := fr.Get("found")
	switch {
	case ok && strings.EqualFold(found, "FALSE"):
		return "", f.fail(op+" "+key, "", ErrNotFound)
	case ok && !strings.EqualFold(found, "TRUE"):
		return "", f.fail(op+" "+key, fr.Raw, fmt.Errorf("%w: found=%q is neither TRUE nor FALSE", ErrProtocol, found))
	}
	return fr.Value("value"), nil
}
