package launcher

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
)

// Fetching puts from the agent that holds them. A gorma rank's fence is a barrier
// (pmi.Barrierer): its puts stay at its own agent, and only the fact that it fenced
// reaches the submitter. A get that names a rank on another host is answered by that
// host's agent, the owner: the asking agent dials the owner's control address
// (jobSpec.Addrs) with the cluster's handshake, sends fFetch naming the job and the
// round, and gets every put of the owner's ranks as of that round. It keeps them until
// its next round completes, so a host's puts cross to another host at most once a
// round, and only to a host whose ranks asked. One link per owner serves one request at
// a time; concurrent gets of one owner's ranks share a request.
//
// The owner answers for round R while it is in round R (its ranks all fenced in R, and
// the submitter's word that R completed has not reached it yet) or after R: every put
// of R is held either way (pmi.Exchange.Held).

// fetchMsg asks the owner agent for the puts of its ranks in the job's rounds up to
// Round. From is the asking agent's host index, for the owner's log.
type fetchMsg struct {
	Job         string
	From, Round int
}

// fetchAnsMsg is the owner's answer: its ranks' puts, or why it has none.
type fetchAnsMsg struct {
	Puts map[int]map[string][]byte `json:",omitempty"`
	Err  string                    `json:",omitempty"`
}

// fetchTimeout bounds one fetch: the dial, the handshake and the answer.
const fetchTimeout = 30 * time.Second

// peerTiming is the deadlines of a link between two agents of a job (a fetch, the spec
// or a fence payload down the tree): the dial and the handshake get fetchTimeout
// together. Many agents may dial one at once (every host asks rank 0's agent for its
// card), and a busy host answers their handshakes late, not never.
func peerTiming() ctlTiming {
	tm := defaultTiming
	tm.dial, tm.handshake = fetchTimeout/2, fetchTimeout/2
	return tm
}

// fetcher is an agent job's side of fetching: its links to owners and what they sent.
type fetcher struct {
	mu    sync.Mutex
	links map[int]*ownerLink   // by host index
	got   map[int]*fetchResult // by host index, for one round
	round int                  // the round got holds
	shut  bool                 // the job ended: no more links
	asked map[*ctlConn]bool    // links on which other agents ask this one
}

// ownerLink is a connection to an owner agent; mu serializes its requests.
type ownerLink struct {
	mu sync.Mutex
	cc *ctlConn
}

// fetchResult is one owner's answer for one round; done closes once it is in.
type fetchResult struct {
	done chan struct{}
	puts map[int]map[string][]byte
	err  error
}

// remoteGet answers a get of rank's key that the job's Exchange could not: rank runs on
// another host, whose agent holds its barrier puts. It returns pmi.ErrNotFound's error
// when the owner has no such put.
func (j *agentJob) remoteGet(ctx context.Context, rank int, key string) ([]byte, error) {
	roster, _ := j.rosterNow()
	if rank < 0 || rank >= roster.Size {
		return nil, fmt.Errorf("%w: rank %d of a %d-rank job", pmi.ErrNotFound, rank, roster.Size)
	}
	host := roster.RankHost[rank]
	round := j.x.Rounds()
	if host == j.spec.Node || round == 0 {
		return nil, fmt.Errorf("%w: rank %d key %q (not put, or not fenced yet)", pmi.ErrNotFound, rank, key)
	}
	puts, err := j.fetchHost(ctx, host, round)
	if err != nil {
		return nil, err
	}
	v, ok := puts[rank][key]
	if !ok {
		return nil, fmt.Errorf("%w: rank %d key %q (not put, or not fenced yet)", pmi.ErrNotFound, rank, key)
	}
	return v, nil
}

// fetchHost returns the puts of host's ranks as of round, asking its agent once a round.
func (j *agentJob) fetchHost(ctx context.Context, host, round int) (map[int]map[string][]byte, error) {
	f := &j.fetch
	f.mu.Lock()
	if f.shut {
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: the job is over", pmi.ErrAborted)
	}
	if round != f.round || f.got == nil {
		f.got, f.round = map[int]*fetchResult{}, round
	}
	res, asked := f.got[host]
	if !asked {
		res = &fetchResult{done: make(chan struct{})}
		f.got[host] = res
	}
	f.mu.Unlock()
	if !asked {
		res.puts, res.err = j.ask(host, round)
		close(res.done)
		if res.err != nil { // the next get asks again
			f.mu.Lock()
			if f.got[host] == res {
				delete(f.got, host)
			}
			f.mu.Unlock()
		}
	}
	select {
	case <-res.done:
		return res.puts, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ask sends one fetch to host's agent over its link, dialing it first if need be.
func (j *agentJob) ask(host, round int) (map[int]map[string][]byte, error) {
	l, err := j.ownerLink(host)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cc == nil {
		addrs := j.addrsNow()
		if host >= len(addrs) || addrs[host] == "" {
			return nil, fmt.Errorf("no control address for host %d of the job", host)
		}
		cc, err := dialControl(addrs[host], j.a.ckey, peerTiming())
		if err != nil {
			return nil, fmt.Errorf("fetch the puts of %s's ranks from its agent: %v", j.hostName(host), err)
		}
		l.cc = cc
	}
	m, err := l.request(fetchMsg{Job: j.spec.ID, From: j.spec.Node, Round: round})
	if err != nil {
		l.cc.close()
		l.cc = nil
		return nil, fmt.Errorf("fetch the puts of %s's ranks from its agent: %v", j.hostName(host), err)
	}
	if m.Err != "" {
		return nil, fmt.Errorf("fetch the puts of %s's ranks from its agent: it answered: %s", j.hostName(host), m.Err)
	}
	return m.Puts, nil
}

// request sends m and reads the answer, within fetchTimeout; the caller holds l.mu.
func (l *ownerLink) request(m fetchMsg) (*fetchAnsMsg, error) {
	l.cc.c.SetReadDeadline(time.Now().Add(fetchTimeout))
	defer l.cc.c.SetReadDeadline(time.Time{})
	if err := l.cc.send(fFetch, m); err != nil {
		return nil, err
	}
	t, p, err := l.cc.recv()
	if err != nil {
		return nil, err
	}
	if t != fFetchAns {
		return nil, fmt.Errorf("answered with a %v frame", t)
	}
	v, err := decodeBody(t, p)
	if err != nil {
		return nil, err
	}
	return v.(*fetchAnsMsg), nil
}

// ownerLink returns the link to host's agent, made on first use.
func (j *agentJob) ownerLink(host int) (*ownerLink, error) {
	f := &j.fetch
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shut {
		return nil, fmt.Errorf("%w: the job is over", pmi.ErrAborted)
	}
	if f.links == nil {
		f.links = map[int]*ownerLink{}
	}
	l := f.links[host]
	if l == nil {
		l = &ownerLink{}
		f.links[host] = l
	}
	return l, nil
}

// closeFetch closes the job's links to owners and from askers; later fetches fail.
func (j *agentJob) closeFetch() {
	f := &j.fetch
	f.mu.Lock()
	f.shut = true
	links := f.links
	f.links = nil
	for cc := range f.asked {
		cc.close() // its serveFetches returns
	}
	f.mu.Unlock()
	for _, l := range links {
		l.mu.Lock()
		if l.cc != nil {
			l.cc.close()
			l.cc = nil
		}
		l.mu.Unlock()
	}
}

// hostName names the roster's host i.
func (j *agentJob) hostName(i int) string {
	roster, _ := j.rosterNow()
	if i >= 0 && i < len(roster.Hosts) {
		return roster.Hosts[i]
	}
	return fmt.Sprintf("#%d", i)
}

// serveFetches answers an asking agent's fetches on cc, the first being first, until
// the asker closes cc or the job ends.
func (j *agentJob) serveFetches(cc *ctlConn, first *fetchMsg) {
	f := &j.fetch
	f.mu.Lock()
	if f.shut {
		f.mu.Unlock()
		cc.send(fFetchAns, fetchAnsMsg{Err: "the job is over"})
		return
	}
	if f.asked == nil {
		f.asked = map[*ctlConn]bool{}
	}
	f.asked[cc] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.asked, cc)
		f.mu.Unlock()
	}()
	for m := first; ; {
		var ans fetchAnsMsg
		if puts, ok := j.x.Held(j.localNow(), m.Round); ok {
			ans.Puts = puts
		} else {
			ans.Err = fmt.Sprintf("asked for round %d, which this agent has not reached (it completed %d)", m.Round, j.x.Rounds())
		}
		if err := cc.send(fFetchAns, ans); err != nil {
			return
		}
		t, p, err := cc.recv()
		if err != nil {
			return
		}
		v, err := decodeBody(t, p)
		if err != nil || t != fFetch || v.(*fetchMsg).Job != j.spec.ID {
			j.a.log.Printf("job %s: fetch link from %s: unexpected %v frame (%v)", j.spec.ID, cc.c.RemoteAddr(), t, err)
			return
		}
		m = v.(*fetchMsg)
	}
}

// serveFetchLink answers a connection whose first frame is a fetch: an agent of one of
// this agent's jobs asks for its ranks' puts.
func (a *Agent) serveFetchLink(cc *ctlConn, p []byte) {
	v, err := decodeBody(fFetch, p)
	if err != nil {
		a.log.Printf("fetch from %s: %v", cc.c.RemoteAddr(), err)
		return
	}
	m := v.(*fetchMsg)
	j := a.job(m.Job)
	if j == nil {
		cc.send(fFetchAns, fetchAnsMsg{Err: fmt.Sprintf("job %s does not run on agent %s", truncate(m.Job, 40), a.name)})
		return
	}
	cc.c.SetReadDeadline(time.Time{})
	j.serveFetches(cc, m)
}

// job returns the running job with id, or nil.
func (a *Agent) job(id string) *agentJob {
	a.mu.Lock()
	defer a.mu.Unlock()
	for j := range a.jobs {
		if j.spec.ID == id {
			return j
		}
	}
	return nil
}
