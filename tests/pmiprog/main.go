package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/pmi"
)

// Behaviours (argument 1):
//
//	ok                 put a card, fence twice, check every rank's card, finalize
//	exit CODE WHO      rank WHO exits CODE after the fence; the others hang
//	hang               print "ready RANK PID" after the fence, then hang
//	survive            like hang, but ignore SIGTERM and SIGINT (only SIGKILL ends it)
//	nofinalize WHO     rank WHO exits 0 after the fence without Finalize; the others hang
//	abort CODE WHO     rank WHO calls Abort(CODE) after the fence; the others hang
//	env NAME...        print "env RANK NAME=VALUE" for each NAME, then finalize
//	lines K            print K long lines, then finalize
//	stdin              rank 0 echoes its stdin as "stdin: LINE", then finalize
//	nopmi              print "nopmi RANK" and exit 0 without PMI
//	late WHO D         rank WHO sleeps D before PMI init
//	cpus               print "cpus RANK LIST HOSTCPUS GOMAXPROCS": the processors the rank may
//	                   run on (its affinity), GOLAUNCH_HOST_CPUS and Go's GOMAXPROCS
//	raw WHO WHERE LINE rank WHO writes LINE to its PMI connection and hangs (raw.go); the
//	                   others fence and hang
//	ft HOW WHO         the ranks in WHO fail as HOW says while the others fence, which
//	                   then wait for the ProcFailed events and finalize (ft.go; golaunch --ft)
//	pmi1               as ok, but as an MPI library speaks: PMI-1 on PMI_FD, whose fences
//	                   gather every put at every host (pmi.Connect), then finalize
func main() {
	if len(os.Args) < 2 {
		fail("usage: pmiprog MODE [ARGS]")
	}
	mode, args := os.Args[1], os.Args[2:]
	c, err := pmi.ReadContract(os.Getenv)
	if err != nil {
		fail("contract: %v", err)
	}
	if mode == "nopmi" {
		fmt.Printf("nopmi %d\n", c.Rank)
		return
	}
	if mode == "raw" && c.Rank == atoi(args[0]) {
		raw(c, args[1], args[2])
	}
	if mode == "pmi1" {
		pmi1(c)
		return
	}
	if mode == "late" && c.Rank == atoi(args[0]) {
		d, _ := time.ParseDuration(args[1])
		time.Sleep(d)
	}
	ctx := context.Background()
	cl, err := pmi.Dial(ctx, c.AgentSock, c.Rank, c.JobID)
	if err != nil {
		fail("dial: %v", err)
	}
	if mode != "ft" { // ft reads its events itself
		go func() {
			for ev := range cl.Events() {
				fmt.Fprintf(os.Stderr, "event %d kind=%d rank=%d host=%s code=%d cause=%s\n", c.Rank, ev.Kind, ev.Rank, ev.Host, ev.Code, ev.Cause)
			}
		}()
	}
	card := []byte(fmt.Sprintf("card-%d-%s", c.Rank, c.Host))
	if err := cl.Put(ctx, "card", card); err != nil {
		fail("put: %v", err)
	}
	if err := cl.Fence(ctx); err != nil {
		fail("fence: %v", err)
	}
	switch mode {
	case "ok":
		info := cl.Info()
		for r := 0; r < c.Size; r++ {
			v, err := cl.Get(ctx, r, "card")
			if err != nil || !bytes.HasPrefix(v, []byte(fmt.Sprintf("card-%d-", r))) {
				fail("get card of rank %d: %q %v", r, v, err)
			}
		}
		// A second round: every rank publishes again and reads its right neighbour.
		cl.Put(ctx, "round2", []byte(strconv.Itoa(c.Rank*10)))
		if err := cl.Fence(ctx); err != nil {
			fail("fence 2: %v", err)
		}
		next := (c.Rank + 1) % c.Size
		v, err := cl.Get(ctx, next, "round2")
		if err != nil || string(v) != strconv.Itoa(next*10) {
			fail("round 2 get of rank %d: %q %v", next, v, err)
		}
		fmt.Printf("rank %d/%d host %s node %d/%d local %d/%d transport %s secret %d ok\n", c.Rank, c.Size,
			c.Host, c.NodeRank, c.NumNodes, c.LocalRank, c.LocalSize, c.Transport, len(info.Secret))
	case "exit", "nofinalize", "abort":
		who := atoi(args[len(args)-1])
		if c.Rank == who {
			switch mode {
			case "exit":
				os.Exit(atoi(args[0]))
			case "nofinalize":
				os.Exit(0)
			case "abort":
				cl.Abort(atoi(args[0]), "pmiprog abort")
			}
		}
		hang(c)
	case "hang", "raw":
		hang(c)
	case "ft":
		ft(c, cl, args[0], args[1])
		return
	case "survive":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		hang(c)
	case "env":
		for _, n := range args {
			fmt.Printf("env %d %s=%s\n", c.Rank, n, os.Getenv(n))
		}
	case "watchfds":
		// The idle-role watch's contract: the variable and what its descriptors are.
		link := func(fd string) string {
			l, err := os.Readlink("/proc/self/fd/" + fd)
			if err != nil {
				return "none"
			}
			return l
		}
		fmt.Printf("watch %d %q", c.Rank, os.Getenv("GOLAUNCH_IDLE_WATCH"))
		if w := os.Getenv("GOLAUNCH_IDLE_WATCH"); w != "" {
			page, bell, _ := strings.Cut(w, ",")
			fmt.Printf(" page=%s bell=%s", link(page), link(bell))
		}
		fmt.Println()
	case "cpus":
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			fail("affinity: %v", err)
		}
		var ids []string
		for i := 0; i < len(set)*64; i++ {
			if set.IsSet(i) {
				ids = append(ids, strconv.Itoa(i))
			}
		}
		fmt.Printf("cpus %d %s %d %d\n", c.Rank, strings.Join(ids, ","), c.HostCPUs, goruntime.GOMAXPROCS(0))
	case "lines":
		pad := strings.Repeat(string(rune('a'+c.Rank%26)), 200)
		for i := 0; i < atoi(args[0]); i++ {
			fmt.Printf("line %d %d %s end\n", c.Rank, i, pad)
		}
	case "stdin":
		if c.Rank == 0 {
			b, _ := io.ReadAll(os.Stdin)
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				fmt.Printf("stdin: %s\n", l)
			}
		}
	case "late":
	default:
		fail("unknown mode %q", mode)
	}
	if err := cl.Finalize(ctx); err != nil {
		fail("finalize: %v", err)
	}
}

// pmi1 puts a card over PMI-1, fences twice, and checks every rank's card and its right
// neighbour's second put.
func pmi1(c pmi.Contract) {
	ctx := context.Background()
	f, err := pmi.Connect(ctx, os.Getenv)
	if err != nil {
		fail("PMI-1 connect: %v", err)
	}
	defer f.Close()
	if err := f.Put(ctx, "card", []byte(fmt.Sprintf("card-%d-%s", f.Rank(), c.Host))); err != nil {
		fail("put: %v", err)
	}
	if err := f.Fence(ctx); err != nil {
		fail("fence: %v", err)
	}
	for r := range f.Size() {
		v, err := f.Get(ctx, r, "card")
		if err != nil || !bytes.HasPrefix(v, []byte(fmt.Sprintf("card-%d-", r))) {
			fail("get card of rank %d: %q %v", r, v, err)
		}
	}
	f.Put(ctx, "round2", []byte(strconv.Itoa(f.Rank()*10)))
	if err := f.Fence(ctx); err != nil {
		fail("fence 2: %v", err)
	}
	next := (f.Rank() + 1) % f.Size()
	if v, err := f.Get(ctx, next, "round2"); err != nil || string(v) != strconv.Itoa(next*10) {
		fail("round 2 get of rank %d: %q %v", next, v, err)
	}
	if err := f.Finalize(ctx); err != nil {
		fail("finalize: %v", err)
	}
	fmt.Printf("pmi1 rank %d/%d host %s ok\n", f.Rank(), f.Size(), c.Host)
}

func hang(c pmi.Contract) {
	fmt.Printf("ready %d %d\n", c.Rank, os.Getpid())
	time.Sleep(time.Hour)
	os.Exit(0)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail("not a number: %q", s)
	}
	return n
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "pmiprog: "+format+"\n", a...)
	os.Exit(99)
}
