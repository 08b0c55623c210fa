package connbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Run runs the role o names: the server, or the client that measures (starting a server
// process of the same program unless o.Addr is set). Text tables go to stdout.
func Run(ctx context.Context, o *Options, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	t, err := lookupTransport(o.Transport)
	if err != nil {
		return err
	}
	if o.Role == "server" {
		return runServer(ctx, t, o, stdout)
	}
	addr := o.Addr
	if addr == "" {
		srv, a, err := startServer(ctx, t, o, stderr)
		if err != nil {
			return err
		}
		defer srv.stop()
		addr = a
	}
	if t.Close != nil {
		defer t.Close()
	}
	text := stdout
	if o.JSON == "-" {
		text = io.Discard
	}
	doc := newDocument(o)
	start := time.Now()
	all := registeredTests()
	for i, test := range all {
		if !contains(o.Tests, test.Name) {
			continue
		}
		env := &Env{O: o, transport: t, addr: addr, index: uint32(i)}
		r, err := test.Run(ctx, env)
		if err != nil {
			return fmt.Errorf("%s over %s: %w", test.Name, t.Name, err)
		}
		r.Test, r.Transport = test.Name, t.Name
		r.writeText(text)
		doc.Results = append(doc.Results, r)
	}
	doc.Seconds = time.Since(start).Seconds()
	if o.JSON != "" {
		return doc.write(o.JSON, stdout)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runServer listens at o.Addr, says "ready ADDR" on stdout, and serves until ctx is
// done or, when spawned, its standard input ends.
func runServer(ctx context.Context, t Transport, o *Options, stdout io.Writer) error {
	l, err := t.Listen(o.Addr)
	if err != nil {
		return fmt.Errorf("listen %s %s: %w", t.Name, o.Addr, err)
	}
	addr := o.Addr
	if strings.HasSuffix(addr, ":0") {
		addr = l.Addr().String()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.Spawned {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}
	s := newServer(l, o)
	fmt.Fprintf(stdout, "ready %s\n", addr)
	return s.run(ctx)
}

// child is a server process the client started.
type child struct {
	cmd   *exec.Cmd
	stdin io.Closer
	dir   string
}

// startServer starts this program as the server of t and waits for its address.
func startServer(ctx context.Context, t Transport, o *Options, stderr io.Writer) (*child, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "connbench-")
	if err != nil {
		return nil, "", err
	}
	args := []string{"--role", "server", "--spawned", "--transport", t.Name, "--addr", t.Addr(dir),
		"--response", strconv.Itoa(o.Response)}
	cmd := exec.Command(exe, args...)
	cmd.Env = os.Environ()
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	c := &child{cmd: cmd, stdin: in, dir: dir}
	ready := make(chan string, 1)
	go func() {
		br := bufio.NewReader(out)
		line, _ := br.ReadString('\n')
		ready <- line
		io.Copy(stderr, br) // what the server prints later, such as a library's log
	}()
	select {
	case line := <-ready:
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
		if !ok {
			c.stop()
			return nil, "", errors.New("the server process did not start (its error is above)")
		}
		return c, addr, nil
	case <-time.After(30 * time.Second):
		c.stop()
		return nil, "", errors.New("the server process did not say ready within 30 s")
	case <-ctx.Done():
		c.stop()
		return nil, "", ctx.Err()
	}
}

// stop ends the server (its standard input closes; a kill after 10 s) and removes the
// run's directory.
func (c *child) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() {
		c.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(c.dir)
}
