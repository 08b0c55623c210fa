package tcp

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/idlewatch"
)

// testWatcher is the in-process watcher of the tests' watched devices (in a job it is the
// launcher's, in another process).
var testWatcher = sync.OnceValue(func() *idlewatch.Watcher { return idlewatch.NewWatcher(0) })

// watchedCfg is leaderCfg with a new watch of w; the watch ends with the test.
func watchedCfg(t testing.TB, w *idlewatch.Watcher) verbs.Config {
	t.Helper()
	files, h, err := w.Add()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Remove)
	cfg := leaderCfg()
	cfg = withOptions(cfg, func(o *Options) { o.IdleWatch = &files })
	return cfg
}

// qconnOf returns s's connection.
func qconnOf(t *testing.T, s *side) *qconn {
	t.Helper()
	q := s.qp.(*qp)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.cn == nil {
		t.Fatal("the QP has no connection")
	}
	return q.cn
}

// waitLeading waits until a waiter on c leads cn, calling poke (if not nil) between
// looks, and fails the test after 10 s.
func waitLeading(t *testing.T, c *cq, cn *qconn, who string, poke func()) {
	t.Helper()
	for end := time.Now().Add(testbudget.Scale(10 * time.Second)); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		led := c.leading == cn
		c.mu.Unlock()
		if led {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s never took the role", who)
		}
		if poke != nil {
			poke()
		}
	}
}

// idleSlot returns cn's watch slot word, and -1 if it has none.
func idleSlot(cn *qconn) int64 {
	c := cn.q.rcq
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn.wslot < 0 {
		return -1
	}
	return int64(cn.d.watch.slot(cn.wslot).Load())
}

// leftToWatcher reports whether cn's role is idle with its eventfd not written: left to
// the watcher.
func leftToWatcher(cn *qconn) bool {
	c := cn.q.rcq
	c.mu.Lock()
	defer c.mu.Unlock()
	return cn.wslot >= 0 && cn.role == roleIdle && !cn.rolePosted &&
		cn.d.watch.slot(cn.wslot).Load()&3 == idlewatch.SlotIdle
}

// handWatchedPair connects a, on a device watched by a watcher the test scans by hand
// (its own timer asks for a scan only every hour once a page needs ticks), to b.
func handWatchedPair(t *testing.T) (w *idlewatch.Watcher, a, b *side) {
	t.Helper()
	w = idlewatch.NewWatcher(time.Hour)
	t.Cleanup(func() { w.Close() })
	a = newSide(t, openDev(t, watchedCfg(t, w)), verbs.QPAttr{})
	b = newSide(t, openDev(t, leaderCfg()), verbs.QPAttr{})
	connect(t, a, b)
	return w, a, b
}

// leadOnce gets a's reading role to a's application and leaves it idle there: a waits
// for a receive, b reads a's memory and then sends, until a wait returns from leading
// (the reader lends its role to a waiter only at a frame boundary). a leaves the role
// idle only once its watcher ticks for it: w, which the test scans by hand, is scanned
// while it does not.
func leadOnce(t *testing.T, w *idlewatch.Watcher, a, b *side, src, dst buf, wrid uint64) {
	t.Helper()
	cn := qconnOf(t, a)
	ro, err := a.pd.AllocMR(8, verbs.RemoteRead) // read-only: exposes nothing to the watch
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Dereg()
	for range 50 {
		if !a.dev.watch.ticking() {
			w.Scan()
		}
		postRecv(t, a.qp, verbs.RecvWR{WRID: wrid, Local: dst.b[:8], LKey: dst.key})
		got := waitWCAsync(t, a.cq)
		time.Sleep(5 * time.Millisecond) // a waits first
		// A read of a's memory wakes a's reader without a completion at a: back at its
		// frame boundary, it finds a's waiter parked and offers it the role, and the waiter
		// leads for the Send. (Woken by the Send itself, the reader would complete the
		// wait first, and a wait would lead only when it won a race with the reader.)
		post(t, b.qp, verbs.SendWR{WRID: wrid, Op: verbs.OpRDMARead, Local: src.b[16:24], LKey: src.key,
			Remote: verbs.RemoteAddr{RKey: ro.RKey()}})
		time.Sleep(5 * time.Millisecond)
		post(t, b.qp, verbs.SendWR{WRID: wrid, Op: verbs.OpSend, Local: src.b[:8], LKey: src.key})
		wantWC(t, <-got, wrid, verbs.Success, verbs.WCRecv)
		if leftToWatcher(cn) {
			return
		}
	}
	c := cn.q.rcq
	c.mu.Lock()
	role, posted, slot, w7 := cn.role, cn.rolePosted, cn.d.watch.slot(cn.wslot).Load(), idlewatch.Word(cn.d.watch.page, idlewatch.WordTicking).Load()
	c.mu.Unlock()
	t.Fatalf("no wait of a's led: its role never went idle (role %d posted %v slot %#x word7 %d)", role, posted, slot, w7)
}

// TestIdleWatchHandsRoleBack: a leader leaving Wait leaves its role idle without waking
// the reader; the peer's read of its memory is served only once the watcher rings, which
// it does for a role idle at the same count on two scans.
func TestIdleWatchHandsRoleBack(t *testing.T) {
	w, a, b := handWatchedPair(t)
	src, dst := newBuf(t, b, arenaMem, 64), newBuf(t, a, arenaMem, 64)
	cn := qconnOf(t, a)
	for i := range uint64(3) {
		leadOnce(t, w, a, b, src, dst, i)
		post(t, b.qp, verbs.SendWR{WRID: 100 + i, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: src.b[8:16],
			LKey: src.key, Remote: verbs.RemoteAddr{RKey: dst.key}})
		quiet(t, b.cq, 100*time.Millisecond, "a read of a's memory while a's role is idle and the watcher has not rung")
		w.Scan()
		w.Scan() // the same odd count twice: rings
		wantWC(t, waitWC(t, b.cq), 100+i, verbs.Success, verbs.WCRDMARead)
		if v := idleSlot(cn); v&3 == idlewatch.SlotIdle {
			t.Fatalf("round %d: after the hand-back the slot is %#x, still idle", i, v)
		}
	}
}

// TestWatchPace: the watcher ticks fast only for a rank that needs it: one whose device
// holds memory peers may write or update (RemoteWrite or RemoteAtomic rights; read-only
// memory does not count), and, for good, one whose leader has left a role idle. For the
// others it scans at the slow period (idlewatch's TestSlowScanDropsSockets: and holds no
// duplicate of their sockets).
func TestWatchPace(t *testing.T) {
	w, a, b := handWatchedPair(t)
	pace := func(want time.Duration, why string) {
		t.Helper()
		if got := w.Scan(); got != want {
			t.Fatalf("%s: the next scan is in %v, want %v", why, got, want)
		}
	}
	pace(idlewatch.SlowTick, "a fresh device")
	ro, err := a.pd.AllocMR(64, verbs.LocalWrite|verbs.RemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	pace(idlewatch.SlowTick, "memory peers may only read")
	for _, access := range []verbs.Access{verbs.RemoteWrite, verbs.RemoteAtomic} {
		mr, err := a.pd.AllocMR(64, access)
		if err != nil {
			t.Fatal(err)
		}
		user, err := a.pd.RegMR(make([]byte, 64), access)
		if err != nil {
			t.Fatal(err)
		}
		pace(time.Hour, fmt.Sprintf("memory with the %v right", access))
		mr.Dereg()
		pace(time.Hour, "user memory still registered")
		user.Dereg()
		pace(idlewatch.SlowTick, "every such region deregistered")
	}
	ro.Dereg()
	src := newBuf(t, b, arenaMem, 64)
	local, err := a.pd.AllocMR(8, verbs.LocalWrite) // exposes nothing
	if err != nil {
		t.Fatal(err)
	}
	dst := buf{local.Bytes(), local.LKey()}
	leadOnce(t, w, a, b, src, dst, 1)
	pace(time.Hour, "a leader left a role idle")
	post(t, b.qp, verbs.SendWR{WRID: 2, Op: verbs.OpSend, Local: src.b[:8], LKey: src.key})
	postRecv(t, a.qp, verbs.RecvWR{WRID: 2, Local: dst.b, LKey: dst.key})
	wantWC(t, waitWC(t, a.cq), 2, verbs.Success, verbs.WCRecv)
	pace(time.Hour, "the role taken back: the rank leads, and stays watched")
}

// TestIdleWatchCloseIdleRole: closing a QP (and its device) whose role was left to the
// watcher, which never rings, returns at once: the close wakes the reader itself. The
// watcher then ends the device's watch.
func TestIdleWatchCloseIdleRole(t *testing.T) {
	w, a, b := handWatchedPair(t)
	src, dst := newBuf(t, b, arenaMem, 64), newBuf(t, a, arenaMem, 64)
	leadOnce(t, w, a, b, src, dst, 1)
	done := make(chan struct{})
	go func() {
		a.qp.Close()
		a.dev.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(testbudget.Scale(10 * time.Second)):
		t.Fatal("closing a QP whose reading role was idle did not return")
	}
	post(t, b.qp, verbs.SendWR{WRID: 2, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: src.b[8:16],
		LKey: src.key, Remote: verbs.RemoteAddr{RKey: dst.key}})
	if wc := waitWC(t, b.cq); wc.Status == verbs.Success {
		t.Fatalf("a read from a closed peer succeeded: %+v", wc)
	}
	w.Scan() // the device closed: the watcher ends its watch
	if n := w.Len(); n != 0 {
		t.Fatalf("the watcher still has %d watches after the device closed", n)
	}
}

// TestIdleWatchRejectsBadFiles: Open refuses files that are not a fresh watch and names
// the problem; it closes the files it was given either way.
func TestIdleWatchRejectsBadFiles(t *testing.T) {
	w := idlewatch.NewWatcher(time.Hour)
	defer w.Close()
	memfd := func(size int64) *os.File {
		fd, err := unix.MemfdCreate("test", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), "test")
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		return f
	}
	eventfd := func() *os.File {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		return os.NewFile(uintptr(fd), "bell")
	}
	used := func() idlewatch.Files { // a watch page a device already took
		files, h, err := w.Add()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Remove)
		page, err := unix.Mmap(int(files.Page.Fd()), 0, idlewatch.PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		idlewatch.Word(page, idlewatch.WordUsed).Store(1)
		unix.Munmap(page)
		return files
	}
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cases := []struct {
		name string
		iw   idlewatch.Files
		want string
	}{
		{"no bell", idlewatch.Files{Page: memfd(idlewatch.PageSize)}, "needs both Page and Bell"},
		{"short page", idlewatch.Files{Page: memfd(100), Bell: eventfd()}, "not a 4096-byte memfd"},
		{"pipe bell", idlewatch.Files{Page: memfd(idlewatch.PageSize), Bell: r}, "the bell is not an eventfd"},
		{"no magic", idlewatch.Files{Page: memfd(idlewatch.PageSize), Bell: eventfd()}, "not a fresh watch page"},
		{"used page", used(), "not a fresh watch page"},
	}
	for _, c := range cases {
		cfg := leaderCfg()
		iw := c.iw
		cfg = withOptions(cfg, func(o *Options) { o.IdleWatch = &iw })
		_, err := verbs.Open(providerName, cfg)
		if !errors.Is(err, verbs.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Open = %v, want ErrInvalid saying %q", c.name, err, c.want)
		}
		for _, f := range []*os.File{iw.Page, iw.Bell} {
			if f != nil && f.Close() == nil {
				t.Errorf("%s: Open left a file of the watch open", c.name)
			}
		}
	}
}

// watchedChildEnv makes the test binary the watched process of TestIdleWatchProcess.
const watchedChildEnv = "GORMA_TCP_TEST_WATCHED"

// TestWatchedChild is the child of TestIdleWatchProcess: a device whose idle-role watch
// comes from the parent as descriptors 3 and 4. It connects, leads one wait (a receive),
// says LED and then computes without calling the provider until stdin closes.
func TestWatchedChild(t *testing.T) {
	if os.Getenv(watchedChildEnv) == "" {
		t.Skip("helper process for TestIdleWatchProcess")
	}
	cfg := leaderCfg()
	cfg = withOptions(cfg, func(o *Options) {
		o.IdleWatch = &idlewatch.Files{Page: os.NewFile(3, "page"), Bell: os.NewFile(4, "bell")}
	})
	s := newSide(t, openDev(t, cfg), verbs.QPAttr{})
	mem := newBuf(t, s, arenaMem, 4096)
	in := childConnect(s, mem.key)
	const recvs = 100
	for i := range uint64(recvs) {
		postRecv(t, s.qp, verbs.RecvWR{WRID: i, Local: mem.b[:64], LKey: mem.key})
	}
	fmt.Println("READY")
	cn := qconnOf(t, s)
	for i := 0; ; i++ { // the parent sends until a wait returns from leading
		if i == recvs {
			fmt.Println("ERR no wait led")
			os.Exit(5)
		}
		waitWC(t, s.cq)
		if leftToWatcher(cn) {
			break
		}
	}
	fmt.Println("LED")
	stop := make(chan struct{})
	go func() {
		for in.Scan() {
		}
		close(stop)
	}()
	for x := 0; ; x++ { // compute: never call the provider again
		if x%4096 == 0 {
			select {
			case <-stop:
				os.Exit(0)
			default:
			}
		}
	}
}

// TestIdleWatchProcess: a watched device in another process leads one wait and then
// computes. Its memory is served to this process's reads only thanks to this process's
// watcher: with a watcher that does not tick the reads stay unanswered, with a ticking
// one each completes, and the child's page shows the role going idle and coming back.
func TestIdleWatchProcess(t *testing.T) {
	if os.Getenv(watchedChildEnv) != "" {
		t.Skip()
	}
	for _, tick := range []time.Duration{time.Hour, 0} {
		t.Run(fmt.Sprintf("tick=%v", tick), func(t *testing.T) {
			w := idlewatch.NewWatcher(tick)
			defer w.Close()
			files, h, err := w.Add()
			if err != nil {
				t.Fatal(err)
			}
			defer h.Remove()
			page, err := idlewatch.MapPage(files.Page) // the test's own view of the child's page
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Munmap(page)
			cmd := exec.Command(os.Args[0], "-test.run=^TestWatchedChild$")
			cmd.Env = append(os.Environ(), watchedChildEnv+"=1")
			cmd.ExtraFiles = []*os.File{files.Page, files.Bell}
			cmd.Stderr = os.Stderr
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			files.Page.Close()
			files.Bell.Close()
			h.Signal(cmd.Process) // as the launcher does: rings also send idlewatch.Signal
			defer func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() }()
			lines := bufio.NewScanner(stdout)
			next := func(want string) []string {
				t.Helper()
				if !lines.Scan() {
					t.Fatalf("child said nothing: %v", lines.Err())
				}
				f := strings.Fields(lines.Text())
				if len(f) == 0 || f[0] != want {
					t.Fatalf("child said %q, want %s", lines.Text(), want)
				}
				return f
			}
			f := next("EP")
			ep, _ := hex.DecodeString(f[1])
			rkey, _ := strconv.ParseUint(f[2], 10, 64)
			a := newSide(t, openDev(t, leaderCfg()), verbs.QPAttr{})
			fmt.Fprintf(stdin, "%s\n", hex.EncodeToString(a.qp.Endpoint()))
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
			defer cancel()
			if err := verbs.Connect(ctx, a.qp, ep); err != nil {
				t.Fatal(err)
			}
			next("READY")
			src := newBuf(t, a, arenaMem, 64)
			led := make(chan struct{})
			sent := make(chan struct{})
			go func() { // until the child leads
				defer close(sent)
				for i := range uint64(90) {
					select {
					case <-led:
						return
					case <-time.After(5 * time.Millisecond):
					}
					if err := a.qp.PostSend(&verbs.SendWR{WRID: i, Op: verbs.OpSend, Local: src.b[:8], LKey: src.key}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			next("LED")
			close(led)
			<-sent
			slot := func() uint64 {
				if n := idlewatch.Word(page, idlewatch.WordUsed).Load(); n != 1 {
					t.Fatalf("the child uses %d slots, want 1", n)
				}
				return idlewatch.SlotWord(page, 0).Load()
			}
			if tick == time.Hour {
				if v := slot(); v&3 != idlewatch.SlotIdle {
					t.Fatalf("after the child's wait its slot is %#x, want idle", v)
				}
				post(t, a.qp, verbs.SendWR{WRID: 2, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: src.b[8:16],
					LKey: src.key, Remote: verbs.RemoteAddr{RKey: rkey}})
				quiet(t, a.cq, 300*time.Millisecond, "a read of the child's memory without a ticking watcher")
				return
			}
			for i := range uint64(50) {
				start := time.Now()
				post(t, a.qp, verbs.SendWR{WRID: 10 + i, Op: verbs.OpAtomicFetchAdd, Flags: verbs.Signaled, Local: src.b[8:16],
					LKey: src.key, Remote: verbs.RemoteAddr{RKey: rkey, Offset: 64}, CompareAdd: 1})
				wantWC(t, waitWC(t, a.cq), 10+i, verbs.Success, verbs.WCFetchAdd)
				if i == 0 {
					t.Logf("the first fetch-add of the computing child's memory took %v", time.Since(start))
				}
			}
			if v := slot(); v&3 == idlewatch.SlotIdle || v>>2 < 2 {
				t.Fatalf("after the hand-back the child's slot is %#x, want it no longer idle, after 2 transitions or more", v)
			}
		})
	}
}

// TestCQProgress: a role that a leader left idle (the watcher never rings here) is served
// by Progress on the calling goroutine: the peer's read and fetch-add of a's memory wait
// in the socket until a call, which serves them, reports it, and leaves the role idle
// again. A call with nothing arrived serves nothing and returns at once. While a leader
// holds the role, Progress leaves it alone and the leader serves the peer.
func TestCQProgress(t *testing.T) {
	w, a, b := handWatchedPair(t)
	src, dst := newBuf(t, b, arenaMem, 64), newBuf(t, a, arenaMem, 64)
	cn, ac := qconnOf(t, a), a.cq.(*cq)
	leadOnce(t, w, a, b, src, dst, 1)

	start := time.Now()
	if ac.Progress() {
		t.Fatal("Progress served a frame when the peer had sent none")
	}
	if d := time.Since(start); d > testbudget.Scale(time.Second) {
		t.Fatalf("Progress with nothing to read took %v", d)
	}
	progress := func(what string) {
		t.Helper()
		for end := time.Now().Add(testbudget.Scale(10 * time.Second)); !ac.Progress(); {
			if time.Now().After(end) {
				t.Fatalf("%s: Progress never served it", what)
			}
			time.Sleep(time.Millisecond)
		}
		if v := idleSlot(cn); v&3 != idlewatch.SlotIdle {
			t.Fatalf("%s: after Progress the slot is %#x, not idle", what, v)
		}
	}

	binary.LittleEndian.PutUint64(dst.b[16:24], 40)
	post(t, b.qp, verbs.SendWR{WRID: 2, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: src.b[8:16],
		LKey: src.key, Remote: verbs.RemoteAddr{RKey: dst.key, Offset: 16}})
	quiet(t, b.cq, 50*time.Millisecond, "a read of a's memory while a's role is idle")
	progress("the read")
	wantWC(t, waitWC(t, b.cq), 2, verbs.Success, verbs.WCRDMARead)
	if got := binary.LittleEndian.Uint64(src.b[8:16]); got != 40 {
		t.Fatalf("the read returned %d, want 40", got)
	}

	post(t, b.qp, verbs.SendWR{WRID: 3, Op: verbs.OpAtomicFetchAdd, Flags: verbs.Signaled, Local: src.b[24:32],
		LKey: src.key, Remote: verbs.RemoteAddr{RKey: dst.key, Offset: 16}, CompareAdd: 2})
	quiet(t, b.cq, 50*time.Millisecond, "a fetch-add of a's memory while a's role is idle")
	progress("the fetch-add")
	wantWC(t, waitWC(t, b.cq), 3, verbs.Success, verbs.WCFetchAdd)
	if got, now := binary.LittleEndian.Uint64(src.b[24:32]), binary.LittleEndian.Uint64(dst.b[16:24]); got != 40 || now != 42 {
		t.Fatalf("the fetch-add returned %d and left %d, want 40 and 42", got, now)
	}

	// A leader: a waits for a receive, and serves b's read meanwhile.
	postRecv(t, a.qp, verbs.RecvWR{WRID: 4, Local: dst.b[:8], LKey: dst.key})
	got := waitWCAsync(t, a.cq)
	waitLeading(t, ac, cn, "a's waiter", nil)
	post(t, b.qp, verbs.SendWR{WRID: 5, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: src.b[8:16],
		LKey: src.key, Remote: verbs.RemoteAddr{RKey: dst.key, Offset: 16}})
	wantWC(t, waitWC(t, b.cq), 5, verbs.Success, verbs.WCRDMARead)
	if ac.Progress() {
		t.Fatal("Progress served a frame while a leader held the role")
	}
	post(t, b.qp, verbs.SendWR{WRID: 6, Op: verbs.OpSend, Local: src.b[:8], LKey: src.key})
	wantWC(t, <-got, 4, verbs.Success, verbs.WCRecv)
}

// TestDeferRoleWaitsForTicking: a leader leaves its idle role to the watcher only once
// the watcher scans the rank's page every tick (page word 7, which the watcher sets at a
// scan that finds the page needs it and clears when it no longer does); before that, the
// role is handed back at once, as without a watch.
func TestDeferRoleWaitsForTicking(t *testing.T) {
	w, a, _ := handWatchedPair(t)
	newBuf(t, a, arenaMem, 64) // exposed memory: the page needs fast ticks
	cn, wa := qconnOf(t, a), a.dev.watch
	word := idlewatch.Word(wa.page, idlewatch.WordTicking)
	deferred := func() bool {
		c := cn.q.rcq
		c.mu.Lock()
		defer c.mu.Unlock()
		slot, posted := wa.slot(cn.wslot).Load(), cn.rolePosted
		ok := cn.deferRoleLocked()
		wa.slot(cn.wslot).Store(slot) // the reader holds the role: undo the marks
		cn.rolePosted = posted
		return ok
	}
	word.Store(0) // as before the watcher's first fast scan, or with a watcher without the word
	if deferred() {
		t.Fatal("a role was left to a watcher that does not tick for the page")
	}
	w.Scan()
	if word.Load() != 1 {
		t.Fatalf("after a scan of a page that needs ticks, word 7 is %d, want 1", word.Load())
	}
	if !deferred() {
		t.Fatal("a role was not left to a watcher that ticks for the page")
	}
	idlewatch.Word(wa.page, idlewatch.WordExposed).Store(0) // forged: no exposed memory, and never led
	idlewatch.Word(wa.page, idlewatch.WordLed).Store(0)
	w.Scan()
	if word.Load() != 0 {
		t.Fatalf("after a scan of a page that needs no ticks, word 7 is %d, want 0", word.Load())
	}
}
