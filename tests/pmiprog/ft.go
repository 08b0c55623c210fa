package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
)

// ftWait bounds how long a survivor waits for the ProcFailed events of the failing ranks.
const ftWait = 60 * time.Second

// ft is the fault-tolerant job's behaviour (golaunch --ft), after the first fence: every
// rank prints "ready RANK PID". The ranks in who (a comma list, or "all") then fail as
// how says, a moment later, while the others are in a second fence:
//
//	kill    SIGKILL itself
//	exit3   exit 3 without Finalize
//	abort   Abort(3)
//	hang    hang until the test kills it (or its agent)
//
// The others (the survivors) complete that fence, read each other's puts of it, wait for
// a ProcFailed event naming each rank of who, fence once more, print "procfailed RANK: R
// ..." (the ranks of every ProcFailed event they got, in order) and "survived RANK", and
// finalize.
func ft(c pmi.Contract, cl *pmi.Client, how, who string) {
	ctx := context.Background()
	failing := map[int]bool{}
	for r := range c.Size {
		failing[r] = who == "all"
	}
	if who != "all" {
		for _, s := range strings.Split(who, ",") {
			failing[atoi(s)] = true
		}
	}
	fmt.Printf("ready %d %d\n", c.Rank, os.Getpid())
	if failing[c.Rank] {
		if how == "hang" {
			time.Sleep(time.Hour)
		}
		time.Sleep(100 * time.Millisecond) // the survivors are in their fence by now, most likely
		switch how {
		case "kill":
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Hour)
		case "exit3":
			os.Exit(3)
		case "abort":
			cl.Abort(3, "pmiprog abort")
			time.Sleep(time.Hour)
		}
		fail("ft: unknown failure %q", how)
	}
	if err := cl.Put(ctx, "after", []byte("after-"+strconv.Itoa(c.Rank))); err != nil {
		fail("put: %v", err)
	}
	if err := cl.Fence(ctx); err != nil {
		fail("fence with a failing rank: %v", err)
	}
	for r := range c.Size {
		if failing[r] {
			continue
		}
		if v, err := cl.Get(ctx, r, "after"); err != nil || string(v) != "after-"+strconv.Itoa(r) {
			fail("get rank %d's put of the fence the failure completed: %q %v", r, v, err)
		}
	}
	var got []int
	note := func(ev pmi.Event) {
		fmt.Fprintf(os.Stderr, "event %d kind=%d rank=%d host=%s code=%d cause=%s\n", c.Rank, ev.Kind, ev.Rank, ev.Host, ev.Code, ev.Cause)
		if ev.Kind == pmi.ProcFailed {
			got = append(got, ev.Rank)
		}
	}
	deadline := time.After(ftWait)
	for !allNamed(failing, got) {
		select {
		case ev, ok := <-cl.Events():
			if !ok {
				fail("the agent closed the connection; ProcFailed events got: %v", got)
			}
			note(ev)
		case <-deadline:
			fail("no ProcFailed event for every failed rank within %v; got %v", ftWait, got)
		}
	}
	if err := cl.Fence(ctx); err != nil {
		fail("fence of the survivors: %v", err)
	}
	for more := true; more; {
		select {
		case ev, ok := <-cl.Events():
			if ok {
				note(ev)
			}
			more = ok
		default:
			more = false
		}
	}
	fmt.Printf("procfailed %d:%s\n", c.Rank, ranksText(got))
	if err := cl.Finalize(ctx); err != nil {
		fail("finalize: %v", err)
	}
	fmt.Printf("survived %d\n", c.Rank)
}

// allNamed tells whether got names every rank failing marks.
func allNamed(failing map[int]bool, got []int) bool {
	for r, f := range failing {
		if f && !slices.Contains(got, r) {
			return false
		}
	}
	return true
}

func ranksText(ranks []int) string {
	var b strings.Builder
	for _, r := range ranks {
		b.WriteString(" " + strconv.Itoa(r))
	}
	return b.String()
}
