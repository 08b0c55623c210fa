package pmi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// PMI-1 (the "simple" wire, 1.1) to a foreign server. design.md has the exchanges.

// fallbackError is a server's refusal of PMI-1 that offers PMI-2 on the same connection.
type fallbackError struct{ err error }

func (e *fallbackError) Error() string { return e.err.Error() }
func (e *fallbackError) Unwrap() error { return e.err }

// initWire sends "cmd=init pmi_version=V ..." in one write (at most 63 bytes: Slurm reads
// it with a single 64-byte read) and checks response_to_init. For version 1 any 1.x
// answer is accepted (Hydra answers 1.1, newer ones 1.2; gorma speaks the 1.1 subset). A
// refusal naming pmi_version=2 returns a *fallbackError: the server (Slurm, once another
// rank on its node chose 2.0) keeps the connection and reads PMI-2 frames next.
func (f *Foreign) initWire(ctx context.Context, version int) error {
	sub := "1"
	if version == 2 {
		sub = "0"
	}
	req, err := FormatSimpleLine("init", "pmi_version", strconv.Itoa(version), "pmi_subversion", sub)
	if err != nil {
		return f.fail("init", "", err)
	}
	var l SimpleLine
	err = f.roundTrip(ctx, "init", req, func() error {
		l, err = f.readLine("init", "response_to_init")
		return err
	})
	if err != nil {
		return err
	}
	got, ok := l.Get("pmi_version")
	if rerr := refusal(l.Get); rerr != nil {
		if version == 1 && got == "2" {
			return &fallbackError{f.fail("init", l.Raw, rerr)}
		}
		return f.fail("init", l.Raw, fmt.Errorf("%w (gorma speaks PMI %d.%s)", rerr, version, sub))
	}
	if ok && got != strconv.Itoa(version) {
		return f.fail("init", l.Raw, fmt.Errorf("%w: asked for pmi_version=%d", ErrProtocol, version))
	}
	f.version = strconv.Itoa(version) + "." + sub
	return nil
}

// dialPort connects to PMI_PORT and runs its handshake: "cmd=initack pmiid=ID", answered
// by cmd=initack and then three cmd=set lines with size, rank and debug (MPICH sends them
// in that order; any order is taken here).
func (f *Foreign) dialPort(ctx context.Context, e pmiEnv) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.port)
	if err != nil {
		return fmt.Errorf("pmi: connect to %s=%s: %w", EnvPMIPort, e.port, err)
	}
	f.setConn(conn)
	if e.mode == "2" {
		return nil // PMI-2 clients send their init at once (fullinit carries the id)
	}
	req, err := FormatSimpleLine("initack", "pmiid", e.id)
	if err == nil {
		err = f.roundTrip(ctx, "initack", req, func() error { return f.readInitack(e) })
	}
	if err != nil {
		f.Close()
		return err
	}
	return nil
}

func (f *Foreign) readInitack(e pmiEnv) error {
	if _, err := f.readLine("initack", "initack"); err != nil {
		return err
	}
	set := map[string]int{}
	for len(set) < 3 {
		l, err := f.readLine("initack", "set")
		if err != nil {
			return err
		}
		matched := false
		for _, k := range []string{"size", "rank", "debug"} {
			if _, ok := l.Get(k); ok {
				n, err := intField(l.Get, k, 0)
				if err != nil {
					return f.fail("initack", l.Raw, err)
				}
				set[k], matched = n, true
			}
		}
		if !matched {
			return f.fail("initack", l.Raw, fmt.Errorf("%w: want cmd=set with size=, rank= or debug=", ErrProtocol))
		}
	}
	if err := f.checkPlace(set["rank"], set["size"], e); err != nil {
		return f.fail("initack", "", err)
	}
	return nil
}

// start1 runs the PMI-1 requests after init: get_maxes, get_my_kvsname, get_appnum and
// the get of PMI_process_mapping.
func (f *Foreign) start1(ctx context.Context, e pmiEnv) error {
	if err := f.checkPlace(f.rank, f.size, e); err != nil {
		return f.fail("init", "", err)
	}
	m, err := f.call1(ctx, "get_maxes", "maxes")
	if err != nil {
		return err
	}
	if err := f.setMaxes(m); err != nil {
		return err
	}
	k, err := f.call1(ctx, "get_my_kvsname", "my_kvsname")
	if err != nil {
		return err
	}
	if f.kvsname = k.Value("kvsname"); simpleValueOK(f.kvsname) != nil || f.kvsname == "" {
		return f.fail("get_my_kvsname", k.Raw, fmt.Errorf("%w: want kvsname=NAME", ErrProtocol))
	}
	if err := f.appnum1(ctx); err != nil {
		return err
	}
	v, err := f.get1(ctx, ProcessMappingKey)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return f.setMapping("get "+ProcessMappingKey, v)
}

// setMaxes takes keylen_max and vallen_max (counting the C string's NUL, as RFC 13 says).
func (f *Foreign) setMaxes(m SimpleLine) error {
	for _, k := range []string{"kvsname_max", "keylen_max", "vallen_max"} {
		n, err := intField(m.Get, k, 1)
		if err != nil {
			return f.fail("get_maxes", m.Raw, err)
		}
		switch k {
		case "keylen_max":
			f.keyMax = n - 1
		case "vallen_max":
			f.valMax = n - 1
		}
	}
	if f.keyMax < minKeyLen || f.valMax < minValueLen {
		return f.fail("get_maxes", m.Raw, fmt.Errorf("%w: keys of %d and values of %d bytes are too short for gorma (want at least %d and %d)",
			ErrProtocol, f.keyMax, f.valMax, minKeyLen, minValueLen))
	}
	return nil
}

func (f *Foreign) appnum1(ctx context.Context) error {
	a, err := f.request1(ctx, "get_appnum", "appnum")
	if err != nil {
		return err
	}
	if refusal(a.Get) != nil {
		return nil // optional: stays -1
	}
	if f.appnum, err = intField(a.Get, "appnum", -1); err != nil {
		return f.fail("get_appnum", a.Raw, err)
	}
	return nil
}

// request1 sends cmd=op with kv and reads the answer cmd=want, without judging its rc.
func (f *Foreign) request1(ctx context.Context, op, want string, kv ...string) (SimpleLine, error) {
	req, err := FormatSimpleLine(op, kv...)
	if err != nil {
		return SimpleLine{}, f.fail(op, "", err)
	}
	if len(req) > MaxSimpleRequest {
		return SimpleLine{}, f.fail(op, "", fmt.Errorf("request of %d bytes exceeds the %d a PMI-1 server reads", len(req), MaxSimpleRequest))
	}
	var l SimpleLine
	err = f.roundTrip(ctx, op, req, func() error {
		l, err = f.readLine(op, want)
		return err
	})
	return l, err
}

// call1 is request1 that turns rc != 0 into an error.
func (f *Foreign) call1(ctx context.Context, op, want string, kv ...string) (SimpleLine, error) {
	l, err := f.request1(ctx, op, want, kv...)
	if err == nil {
		if rerr := refusal(l.Get); rerr != nil {
			err = f.fail(op, l.Raw, rerr)
		}
	}
	return l, err
}

func (f *Foreign) put1(ctx context.Context, key, value string) error {
	_, err := f.call1(ctx, "put", "put_result", "kvsname", f.kvsname, "key", key, "value", value)
	return err
}

// get1 reads one PMI key. Not found is found=FALSE, or rc != 0 (Hydra and Slurm say so
// with rc alone).
func (f *Foreign) get1(ctx context.Context, key string) (string, error) {
	l, err := f.request1(ctx, "get", "get_result", "kvsname", f.kvsname, "key", key)
	if err != nil {
		return "", err
	}
	if found, ok := l.Get("found"); ok {
		switch {
		case strings.EqualFold(found, "FALSE"):
			return "", f.fail("get "+key, "", ErrNotFound)
		case !strings.EqualFold(found, "TRUE"):
			return "", f.fail("get "+key, l.Raw, fmt.Errorf("%w: found=%q is neither TRUE nor FALSE", ErrProtocol, found))
		}
	}
	if rerr := refusal(l.Get); rerr != nil {
		return "", f.fail("get "+key, "", fmt.Errorf("%w (%v)", ErrNotFound, rerr))
	}
	return l.Value("value"), nil
}

func (f *Foreign) barrier1(ctx context.Context) error {
	_, err := f.call1(ctx, "barrier_in", "barrier_out")
	return err
}

func (f *Foreign) finalize1(ctx context.Context) error {
	_, err := f.call1(ctx, "finalize", "finalize_ack")
	return err
}
