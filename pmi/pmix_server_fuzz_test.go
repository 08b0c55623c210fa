package pmi

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzPMIxServerDecode feeds a connect body and a request body to the server's decoders:
// they return a value or an error wrapping ErrProtocol (a spawn's reader returns a program
// or ""), never panic, and a commit's blocks written back (encodePMIxBlocks) read the same.
func FuzzPMIxServerDecode(f *testing.F) {
	f.Add(readPMIxFixture(f, "connect.bin")[16:], readPMIxFixture(f, "commit.bin"))
	f.Add([]byte("native\x00"), readPMIxFixture(f, "fence.bin"))
	f.Add([]byte{}, readPMIxFixture(f, "get.bin"))
	f.Add([]byte("native\x00\x00\x00\x00\x08"), pmixAbortBody(3, "bye"))
	f.Add([]byte{}, readPMIxFixture(f, "spawn.bin"))
	f.Fuzz(func(t *testing.T, connect, body []byte) {
		if _, err := parsePMIxConnect(connect); err != nil && !isProtocol(err) {
			t.Fatalf("connect: %v", err)
		}
		cmd, d, err := pmixReqCmd(body)
		if err != nil {
			return
		}
		switch cmd {
		case pmixCmdCommit:
			blocks, err := parsePMIxCommit(d)
			if err != nil {
				checkProtocol(t, err)
				return
			}
			again, err := parsePMIxCommit(&pmixDec{b: encodePMIxBlocks(blocks)})
			if err != nil || !reflect.DeepEqual(mergePMIxBlocks(nil, again), mergePMIxBlocks(nil, blocks)) {
				t.Fatalf("commit blocks %v read back as %v, %v", blocks, again, err)
			}
			for _, local := range []bool{false, true} {
				st, _, err := parsePMIxGet(pmixGetAnswer("ns", 1, blocks, local))
				if err != nil || st != 0 {
					t.Fatalf("get answer: status %d, %v", st, err)
				}
			}
		case pmixCmdFence:
			_, err = parsePMIxFence(d)
		case pmixCmdGet:
			_, err = parsePMIxGetReq(d)
		case pmixCmdAbort:
			_, err = parsePMIxAbort(d)
		case pmixCmdRegEvents:
			err = parsePMIxRegEvents(d)
		case pmixCmdJobControl:
			_, _, err = parsePMIxJobControl(d)
		case pmixCmdSpawn:
			pmixSpawnProgram(d) // a program or "", whatever the body
		}
		checkProtocol(t, err)
	})
}

func isProtocol(err error) bool {
	return err == nil || bytes.Contains([]byte(err.Error()), []byte(ErrProtocol.Error()))
}

func checkProtocol(t *testing.T, err error) {
	t.Helper()
	if !isProtocol(err) {
		t.Fatalf("error %v does not wrap ErrProtocol", err)
	}
}

// FuzzPMIxServerRequest sends one fuzzed request of a connected rank to a real server:
// either the server reports one protocol error of that rank and closes the connection,
// or it serves the rank's next request (a job-data request) with that request's tag.
func FuzzPMIxServerRequest(f *testing.F) {
	for _, name := range []string{"commit.bin", "fence.bin", "get.bin"} {
		f.Add(readPMIxFixture(f, name))
	}
	f.Add(pmixFenceBody("golaunch.job1", true))
	f.Add(pmixFenceBody("golaunch.job1", false))
	f.Add(pmixGetBody("golaunch.job1", 0, "k"))
	f.Add(pmixAbortBody(1, "x"))
	f.Add([]byte{2, pmixCmdDeregEvents})
	f.Add([]byte{2, pmixCmdRegEvents, 2, 0, 2, 0})
	f.Add([]byte{2, 77})
	f.Fuzz(func(t *testing.T, body []byte) {
		h := newJob(1)
		s := listenPMIx(t, h, pmixJobOf(1))
		c, pindex := connectRank(t, s, 0)
		sendPMIx(t, c, pindex, 1, body)
		sendPMIx(t, c, pindex, 2, pmixCmd(pmixCmdReq).b)
		for {
			var hb [pmixHdrLen]byte
			if err := readFullOrClose(c, hb[:]); err != nil {
				s.Close()
				if errs := h.protocolErrors(); len(errs) != 1 || errs[0].Rank != 0 {
					t.Fatalf("connection closed (%v) with protocol errors %v", err, errs)
				}
				return
			}
			hd, err := parsePMIxHdr(hb[:])
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, hd.nbytes)
			if err := readFullOrClose(c, b); err != nil {
				t.Fatal(err)
			}
			if hd.tag == 2 {
				if _, err := parsePMIxJob(b); err != nil {
					t.Fatalf("job data after the request: %v", err)
				}
				return
			}
			if hd.tag != 1 {
				t.Fatalf("answer of tag %d", hd.tag)
			}
		}
	})
}
