package launcher

import (
	"fmt"
	"time"
)

// Liveness of a control connection. memberlist's failure detector is tuned to be fast
// (cluster.go), and on a loaded host it can declare a live agent dead: its probes and
// their acks wait behind the load. A death verdict therefore only ends a job when the
// control connection agrees: each side pings the other every heartbeatInterval, and a
// host memberlist declared dead or gone is lost once the connection to it has been silent
// for deadSilence. Until then the verdict is noted once and re-checked on every tick. A
// connection silent for maxSilence is lost without any verdict. EOF or a reset on the
// connection, and a rank's exit reported by its agent, still end the job at once. A host
// declared dead before its connection exists gets deadDialTimeout from the verdict (or
// from the dial's start) to answer the dial (setup.go).
const (
	heartbeatInterval = 250 * time.Millisecond
	deadSilence       = 2 * time.Second
	maxSilence        = 15 * time.Second
	deadDialTimeout   = time.Second
)

// ctlTiming is the deadlines of a submitter's control plane. A job runs with
// defaultTiming. The control-plane simulation scales them with its machine's slack: its
// agents share two processors, and the deadlines are the real ones' stretched, not
// different rules.
type ctlTiming struct {
	dial      time.Duration // connecting to one agent, shed handshakes tried again included
	handshake time.Duration // one control handshake
	ready     time.Duration // every agent set up its part of the job
	dead      time.Duration // silence that confirms memberlist's verdict (deadSilence)
	silent    time.Duration // silence that loses a connection without a verdict (maxSilence)
	deadDial  time.Duration // a dial to a host declared dead, from the verdict (deadDialTimeout)
}

var defaultTiming = ctlTiming{dial: dialTimeout, handshake: defaultHandshake, ready: readyTimeout,
	dead: deadSilence, silent: maxSilence, deadDial: deadDialTimeout}

// scaled returns t with every deadline passed through f.
func (t ctlTiming) scaled(f func(time.Duration) time.Duration) ctlTiming {
	return ctlTiming{dial: f(t.dial), handshake: f(t.handshake), ready: f(t.ready), dead: f(t.dead),
		silent: f(t.silent), deadDial: f(t.deadDial)}
}

// silence is how long the connection's reader has been waiting for its next frame (pings
// included), or 0 while the reader is busy elsewhere: time this side spent not reading
// is not the peer's silence.
func (cc *ctlConn) silence() time.Duration {
	since := cc.waitingSince.Load()
	if since == 0 {
		return 0
	}
	return max(0, time.Since(time.Unix(0, since)))
}

// beat sends a ping every heartbeatInterval until stop is closed or a send fails (the
// connection is gone; its reader notices).
func (cc *ctlConn) beat(stop <-chan struct{}) {
	t := time.NewTicker(heartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if cc.send(fPing, nil) != nil {
				return
			}
		}
	}
}

// verdict decides what a memberlist verdict (ev, nil for none) on the peer of cc means
// now: lost, and why, when the connection has been silent long enough (tm.dead after a
// verdict, tm.silent without one).
func verdict(ev *leaveEvent, cc *ctlConn, tm ctlTiming) (lost bool, why string) {
	q := cc.silence()
	switch {
	case ev != nil && q >= tm.dead:
		return true, fmt.Sprintf("%s; its control connection silent for %v", ev.how(), q.Round(time.Millisecond))
	case q >= tm.silent:
		return true, fmt.Sprintf("its control connection silent for %v", q.Round(time.Millisecond))
	}
	return false, ""
}

// liveNote is the line logged once when memberlist declares a peer (who: "agent h2",
// "submitter golaunch-...") dead or gone whose control connection still delivers frames.
func liveNote(who string, ev leaveEvent, cc *ctlConn) string {
	return fmt.Sprintf("%s %s, but its control connection is live (silent for %v): the job goes on "+
		"unless it stays silent for %v (a loaded host answers memberlist's probes late)",
		who, ev.how(), cc.silence().Round(time.Millisecond), deadSilence)
}

// isolatedGrace is how long an agent that has lost every other host of a job waits for
// the submitter to end the job (it does so, naming the host it lost, when it can still
// reach this agent) before it ends the job's ranks here itself.
const isolatedGrace = 3 * time.Second

// watchSubmitter closes the control connection of job id (runJob or serve then ends the
// job) when its submitter is gone: memberlist declared the submitter dead or gone and the
// connection has been silent for deadSilence. Or all nOthers other hosts of the job are
// declared dead or gone (leaves watches the submitter and those hosts), isolatedGrace has
// passed. The connection is that silent too (a host cut off before gossip told it of the
// submitter). Or the connection has been silent for maxSilence. A verdict on the
// submitter while the connection is live is logged once. It returns when the subscription
// ends or once it closed the connection.
func (a *Agent) watchSubmitter(cc *ctlConn, id, submitter string, nOthers int, leaves <-chan leaveEvent) {
	gone := map[string]bool{}
	var dead *leaveEvent
	var deadAt, isolatedAt time.Time
	noted := false
	tick := time.NewTicker(heartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-leaves:
			if !ok {
				return
			}
			if ev.Name == submitter {
				if dead == nil {
					dead, deadAt = &ev, time.Now()
				}
			} else if !gone[ev.Name] {
				gone[ev.Name] = true
				if len(gone) == nOthers {
					isolatedAt = time.Now()
				}
			}
		case <-tick.C:
		}
		q := cc.silence()
		switch {
		case dead != nil && q >= deadSilence:
			a.log.Printf("job %s: submitter %s %s, and its control connection silent for %v", id, submitter, dead.how(), q.Round(time.Millisecond))
		case !isolatedAt.IsZero() && time.Since(isolatedAt) >= isolatedGrace && q >= deadSilence:
			a.log.Printf("job %s: every other host of the job is gone and the submitter has not ended it: ending it here", id)
		case q >= maxSilence:
			a.log.Printf("job %s: the submitter's control connection has been silent for %v: ending the job here", id, q.Round(time.Millisecond))
		default:
			// A submitter that ends its job leaves the cluster as the job ends, and is then
			// reported as dead: only a verdict that outlives a couple of ticks is noted.
			if dead != nil && !noted && time.Since(deadAt) >= 2*heartbeatInterval {
				noted = true
				a.log.Printf("job %s: %s", id, liveNote("submitter "+submitter, *dead, cc))
			}
			continue
		}
		cc.close()
		return
	}
}
