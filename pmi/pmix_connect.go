package pmi

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// A PMIx server's connect: the first message of a rank's connection, its checks and the
// refusals, and the protocol errors they report.

// report passes a protocol error to a ProtocolHandler: a rank's ends its job, a
// stranger's (rank -1) is only logged.
func (s *PMIxServer) report(rank int, cmd string, err error) {
	s.reportPid(rank, 0, cmd, err)
}

// reportPid is report with the peer's process: with rank -1, the Handler finds the rank,
// if any, whose process pid is.
func (s *PMIxServer) reportPid(rank, pid int, cmd string, err error) {
	if ph, ok := s.h.(ProtocolHandler); ok {
		ph.ProtocolError(&ProtocolError{Rank: rank, Pid: pid, Cmd: cmd, Err: err, Wire: "PMIx"})
	}
}

// connect reads and checks a new connection's connect message, admits its rank through
// the Handler and answers. It reports false when the connection is refused.
func (s *PMIxServer) connect(pc *pxConn, peer peerSock) bool {
	pc.c.SetDeadline(time.Now().Add(pmixConnectTimeout))
	defer pc.c.SetDeadline(time.Time{})
	var hdr [pmixHdrLen]byte
	if _, err := io.ReadFull(pc.c, hdr[:]); err != nil {
		if !errors.Is(err, io.EOF) {
			s.report(-1, "connect", fmt.Errorf("%w: connect message: %v", ErrProtocol, err))
		}
		return false
	}
	n, err := parsePMIxConnectHdr(hdr[:])
	if err != nil {
		s.report(-1, "connect", err)
		return false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(pc.c, body); err != nil {
		s.report(-1, "connect", fmt.Errorf("%w: connect message cut after its header: %v", ErrProtocol, err))
		return false
	}
	cm, err := parsePMIxConnect(body)
	if err != nil {
		s.report(-1, "connect", err)
		return false
	}
	refuse := func(st int32, rank int, err error) bool {
		s.report(rank, "connect", err)
		pc.c.Write(pmixAck(st, 0))
		return false
	}
	// The credential must name the kernel's owner of the peer's socket. A stranger is
	// refused and only logged.
	owner := peer.uid
	switch {
	case cm.sec != pmixSecNative:
		return refuse(pmixErrNoPerm, -1, fmt.Errorf("%w: credential of module %q; golaunch's PMIx server takes %q (PMIX_SECURITY_MODE)", ErrProtocol, cm.sec, pmixSecNative))
	case cm.uid != owner:
		return refuse(pmixErrNoPerm, -1, fmt.Errorf("%w: a process of uid %d with a credential of uid %d; the job's uid is %d", ErrProtocol, owner, cm.uid, s.uid.Load()))
	case cm.typ != 0:
		return refuse(pmixErrNotSupported, -1, fmt.Errorf("%w: connect of type %d (a tool or launcher); golaunch's PMIx server takes only the ranks it started (type 0)", ErrProtocol, cm.typ))
	case cm.nspace != s.job.Nspace:
		return refuse(pmixErrInvalidNS, -1, fmt.Errorf("%w: namespace %q is not this job's %q", ErrProtocol, Truncate(cm.nspace), s.job.Nspace))
	case int64(cm.rank) >= int64(len(s.job.NodeOf)):
		return refuse(pmixErrBadParam, -1, fmt.Errorf("%w: rank %d of a %d-rank job", ErrProtocol, cm.rank, len(s.job.NodeOf)))
	}
	rank := int(cm.rank)
	if why := pmixWireMismatch(cm); why != "" {
		return s.refuseWire(pc, rank, peer, why)
	}
	if _, err := s.h.Init(s.ctx, rank, s.job.JobID); err != nil {
		return refuse(pmixErrNoPerm, -1, fmt.Errorf("%w: connect as rank %d: %v", ErrProtocol, rank, err))
	}
	pc.log.setWire(WirePMIx)
	s.mu.Lock()
	s.pindex++
	pc.pindex, pc.rank = s.pindex, rank
	s.calls[rank] = &pc.log
	s.mu.Unlock()
	if _, err := pc.c.Write(pmixAck(0, pc.pindex)); err != nil {
		s.h.Gone(rank)
		return false
	}
	return true
}

// pmixWireMismatch says why the server cannot speak a connect's wire: its PMIx version,
// buffer type or data store. It is "" when the server can.
func pmixWireMismatch(cm pmixConnect) string {
	switch {
	case !pmixBfropsOK(cm.bfrops):
		return fmt.Sprintf("PMIx is version %s (buffer encoding %q); golaunch's PMIx server speaks the wire of PMIx 4.1 and later (buffer encodings v41, v51, v61)",
			Truncate(cm.version), Truncate(cm.bfrops))
	case cm.bufType != pmixBufNonDesc:
		return fmt.Sprintf("PMIx uses buffer type %d; golaunch's PMIx server speaks non-described buffers (PMIX_BFROP_BUFFER_TYPE=PMIX_BFROP_BUFFER_NON_DESC)", cm.bufType)
	case !hasWord(cm.gds, pmixGDS):
		return fmt.Sprintf("PMIx offers the data stores %q; golaunch's PMIx server offers %q (PMIX_GDS_MODULE)", Truncate(cm.gds), pmixGDS)
	}
	return ""
}

// refuseWire refuses a connect as rank whose wire the server cannot speak. The error is
// a rank's only when the peer's socket is held by a child of this process, the agent
// that started the ranks: it goes with that child's pid and rank -1, so that the Handler
// blames the rank whose process that is, if any. A process that holds the socket and is
// no child, such as a program that a rank runs with the rank's PMIX_* variables, has pid
// 0: no rank's.
func (s *PMIxServer) refuseWire(pc *pxConn, rank int, peer peerSock, why string) bool {
	pid := socketHolder(peer.inode)
	err := fmt.Errorf("%w: the rank's %s", ErrProtocol, why)
	if pid == 0 {
		err = fmt.Errorf("%w: a process that this agent did not start connects as rank %d (a program that a rank runs inherits the rank's PMIX_* variables: unset them in its environment); its %s",
			ErrProtocol, rank, why)
	}
	s.reportPid(-1, pid, "connect", err)
	pc.c.Write(pmixAck(pmixErrNotSupported, 0))
	return false
}
