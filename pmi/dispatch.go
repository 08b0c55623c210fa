package pmi

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// answer is the line the dispatcher writes back (nil: none); hangup closes the
// connection after it; perr is set when the request broke the protocol.
type answer struct {
	cmd    string
	f      kv
	hangup bool
	perr   error
}

func reply(cmd string, f ...string) *answer { return &answer{cmd: cmd, f: f} }

// fail is the answer to a request of cmd that failed with err: rc=-1 and msg=, plus code=
// for a gorma client. A PMI-1 client gets a msg its parser takes (no space, no '=').
func (sc *sconn) fail(cmd string, err error) *answer {
	name, known := replyTo[cmd]
	if !known {
		name = cmdError
	}
	a := &answer{cmd: name, f: kv{"rc", "-1", "msg", token(err.Error())}}
	if sc.mode == modeGorma {
		a.f = kv{"rc", "-1", "code", errorCode(err), "msg", text(err.Error())}
	}
	if errors.Is(err, ErrProtocol) {
		a.perr = err
	}
	return a
}

// dispatch serves one request on sc (its dispatcher goroutine).
func (s *Server) dispatch(ctx context.Context, sc *sconn, m msg) *answer {
	cmd := m["cmd"]
	switch {
	case cmd == cmdInit || cmd == cmdGormaInit:
		a := s.init(ctx, sc, m)
		a.hangup = sc.rank < 0 // a refused first init ends the connection
		return a
	case sc.rank < 0:
		return sc.fail(cmd, fmt.Errorf("%w: %s before init (the first request is cmd=init pmi_version=1)", ErrProtocol, Truncate(cmd)))
	}
	switch cmd {
	case cmdMaxes:
		return reply("maxes", "kvsname_max", strconv.Itoa(KVSNameMax), "keylen_max", strconv.Itoa(KeyLenMax),
			"vallen_max", strconv.Itoa(ValLenMax))
	case cmdAppnum:
		return reply("appnum", "appnum", strconv.Itoa(sc.info.AppNum))
	case cmdKVSName:
		return reply("my_kvsname", "kvsname", sc.info.KVSName)
	case cmdUniverse:
		return reply("universe_size", "size", strconv.Itoa(sc.info.UniverseSize))
	case cmdPut:
		return s.put(sc, m)
	case cmdGet:
		return s.get(ctx, sc, m)
	case cmdBarrier:
		return s.fence(ctx, sc)
	case cmdAbort:
		return s.abort(sc, m)
	case cmdFinalize:
		sc.log.finalized()
		s.h.Finalize(sc.rank)
		return reply("finalize_ack")

	case cmdGormaSpawn:
		return s.spawn(ctx, sc, m)
	case cmdPublish, cmdUnpublish, cmdLookup, cmdSpawn:
		return sc.fail(cmd, fmt.Errorf("pmi: %s is not supported by golaunch", cmd))
	}
	return sc.fail(cmd, fmt.Errorf("%w: unknown command %q", ErrProtocol, Truncate(cmd)))
}

// init admits the connection: PMI-1's init (a connection handed to a rank) or gorma-init
// (rank, job and version named).
func (s *Server) init(ctx context.Context, sc *sconn, m msg) *answer {
	cmd := m["cmd"]
	if sc.rank >= 0 {
		return sc.fail(cmd, fmt.Errorf("%w: second init", ErrProtocol))
	}
	rank, job, mode := sc.assigned, "", modePMI1
	if cmd == cmdInit {
		if v := m["pmi_version"]; v != "1" {
			a := sc.fail(cmd, fmt.Errorf("%w: init asks for pmi_version=%q; golaunch serves PMI-1 (pmi_version=1) on PMI_FD: use the MPI library's PMI-1 client (gorma: GORMA_PMI=1)",
				ErrProtocol, Truncate(v)))
			a.f = append(kv{"pmi_version", "1", "pmi_subversion", "1"}, a.f...)
			return a
		}
		if rank < 0 {
			return sc.fail(cmd, fmt.Errorf("%w: PMI-1 init on the agent socket (a PMI-1 client talks on the PMI_FD its agent gave it)", ErrProtocol))
		}
	} else {
		mode = modeGorma
		if v := m["version"]; v != strconv.Itoa(ProtocolVersion) {
			sc.mode = mode
			return sc.fail(cmd, fmt.Errorf("%w: rank speaks PMI version %s, agent %d (mixed gorma builds?)", ErrProtocol, Truncate(v), ProtocolVersion))
		}
		var err error
		if rank, err = m.int("rank"); err != nil {
			sc.mode = mode
			return sc.fail(cmd, err)
		}
		if job = untext(m["job"]); job == "" || sc.assigned >= 0 && rank != sc.assigned {
			sc.mode = mode
			return sc.fail(cmd, fmt.Errorf("%w: gorma-init of rank %d names job %q on a connection of rank %d", ErrProtocol, rank, Truncate(job), sc.assigned))
		}
	}
	sc.mode = mode
	info, err := s.h.Init(ctx, rank, job)
	if err != nil {
		return sc.fail(cmd, err)
	}
	if mode == modeGorma {
		sc.log.setWire(WireGorma)
	} else {
		sc.log.setWire(WirePMI1)
	}
	s.mu.Lock()
	if _, taken := s.ranks[rank]; taken {
		s.mu.Unlock()
		return sc.fail(cmd, fmt.Errorf("pmi: rank %d is already connected", rank))
	}
	sc.rank, sc.info = rank, info.withDefaults()
	s.ranks[rank] = sc
	s.calls[rank] = &sc.log
	var news []string
	if mode == modeGorma {
		news = slices.Clone(s.news) // under s.mu: Announce reaches sc either here or itself
	}
	s.mu.Unlock()
	for _, line := range news {
		go sc.send(line)
	}
	if mode == modePMI1 {
		return reply("response_to_init", "pmi_version", "1", "pmi_subversion", "1", "rc", "0")
	}
	return reply(replyTo[cmdGormaInit], "rc", "0", "size", strconv.Itoa(info.Size), "secret", hex.EncodeToString(info.Secret),
		"kvsname", sc.info.KVSName, "appnum", strconv.Itoa(sc.info.AppNum),
		"mapping", text(sc.info.ProcessMapping), "hosts", textList(sc.info.Hosts))
}

func (s *Server) put(sc *sconn, m msg) *answer {
	key := m["key"]
	if err := sc.checkSizes(cmdPut, m); err != nil {
		return sc.fail(cmdPut, err)
	}
	if strings.HasPrefix(key, "PMI_") {
		return sc.fail(cmdPut, fmt.Errorf("pmi: key %q: keys with the PMI_ prefix are the process manager's", Truncate(key)))
	}
	sc.puts[key] = []byte(m["value"])
	return reply("put_result", "rc", "0", "msg", "success")
}

// get answers a value: of one rank (gorma's rank=), or of the job (PMI-1), where the
// agent knows PMI_process_mapping itself. Like Hydra, the server has one key-value space
// per job and does not check a request's kvsname.
func (s *Server) get(ctx context.Context, sc *sconn, m msg) *answer {
	key := m["key"]
	if err := sc.checkSizes(cmdGet, m); err != nil {
		return sc.fail(cmdGet, err)
	}
	rank := AnyRank
	if _, ok := m["rank"]; ok {
		r, err := m.int("rank")
		if err != nil {
			return sc.fail(cmdGet, err)
		}
		rank = r
	}
	if rank == AnyRank && key == ProcessMappingKey && sc.info.ProcessMapping != "" {
		return reply("get_result", "rc", "0", "msg", "success", "value", sc.info.ProcessMapping)
	}
	v, err := s.h.Get(ctx, rank, key)
	if err != nil {
		if sc.mode == modePMI1 {
			return &answer{cmd: "get_result", f: kv{"rc", "-1", "msg", "key_" + token(key) + "_not_found", "value", "unknown"}}
		}
		return sc.fail(cmdGet, err)
	}
	return reply("get_result", "rc", "0", "msg", "success", "value", string(v))
}

// fence is barrier_in: the rank's puts since its last fence go to the Handler, which
// blocks until the job-wide round completes. A PMI-1 client gets no answer when the
// fence fails (the job is aborting, and the agent ends the rank): MPI libraries do not
// check barrier_out's rc and would go on with a half-filled key-value space.
func (s *Server) fence(ctx context.Context, sc *sconn) *answer {
	batch := make(map[string][]byte, len(sc.puts))
	for k, v := range sc.puts {
		batch[k] = v
	}
	clear(sc.puts)
	fence := s.h.Fence
	if b, ok := s.h.(Barrierer); ok && sc.mode == modeGorma {
		fence = b.Barrier
	}
	if err := fence(ctx, sc.rank, batch); err != nil {
		if sc.mode == modePMI1 {
			return nil
		}
		return sc.fail(cmdBarrier, err)
	}
	return reply("barrier_out")
}

// abort passes a rank's abort on; only a gorma client gets an answer (an MPI library
// waits to be ended).
func (s *Server) abort(sc *sconn, m msg) *answer {
	code := 1 // PMI-1's default
	if _, ok := m["exitcode"]; ok {
		c, err := m.int("exitcode")
		if err != nil {
			return sc.fail(cmdAbort, err)
		}
		code = c
	}
	message := m["message"]
	if sc.mode == modeGorma {
		message = untext(message)
	}
	s.h.Abort(sc.rank, code, message)
	if sc.mode != modeGorma {
		return nil
	}
	return reply(replyTo[cmdAbort], "rc", "0")
}

// spawn is gorma-spawn: n new ranks for the Handler to start, if it is a Spawner. Only a
// gorma client asks for it.
func (s *Server) spawn(ctx context.Context, sc *sconn, m msg) *answer {
	if sc.mode != modeGorma {
		return sc.fail(cmdGormaSpawn, fmt.Errorf("%w: %s on a PMI-1 connection", ErrProtocol, cmdGormaSpawn))
	}
	n, err := m.int("n")
	if err == nil && n < 1 {
		err = fmt.Errorf("%w: n=%d: want at least 1 rank", ErrProtocol, n)
	}
	if err != nil {
		return sc.fail(cmdGormaSpawn, err)
	}
	sp, ok := s.h.(Spawner)
	if !ok {
		return sc.fail(cmdGormaSpawn, fmt.Errorf("%w: this process manager does not spawn ranks", ErrRefused))
	}
	first, err := sp.Spawn(ctx, sc.rank, n)
	if err != nil {
		return sc.fail(cmdGormaSpawn, err)
	}
	return reply(replyTo[cmdGormaSpawn], "rc", "0", "first", strconv.Itoa(first), "n", strconv.Itoa(n))
}

// checkSizes checks a put's or get's key, kvsname and (a PMI-1 put's) value against the
// bounds the maxes answer announces. A gorma client's values are hex cards, bounded by
// MaxLine only.
func (sc *sconn) checkSizes(cmd string, m msg) error {
	key := m["key"]
	if key == "" {
		return fmt.Errorf("%w: %s without key=", ErrProtocol, cmd)
	}
	if len(key) > KeyLenMax {
		return fmt.Errorf("%w: key of %d bytes exceeds keylen_max=%d (get_maxes)", ErrProtocol, len(key), KeyLenMax)
	}
	if n := len(m["kvsname"]); n > KVSNameMax {
		return fmt.Errorf("%w: kvsname of %d bytes exceeds kvsname_max=%d (get_maxes)", ErrProtocol, n, KVSNameMax)
	}
	if n := len(m["value"]); cmd == cmdPut && sc.mode == modePMI1 && n > ValLenMax {
		return fmt.Errorf("%w: value of %d bytes exceeds vallen_max=%d (get_maxes): split longer values over several keys",
			ErrProtocol, n, ValLenMax)
	}
	return nil
}
