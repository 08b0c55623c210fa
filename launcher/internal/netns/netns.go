package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"
)

// Available reports whether namespaces can be made here (root and `ip`), and why not.
func Available() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "network namespaces need root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return false, "network namespaces need iproute2 (`ip`): apt-get install iproute2"
	}
	return true, ""
}

// Host is one namespace host.
type Host struct {
	Name string // namespace name
	Addr string // its IPv4 address on the bridge
	link string // its veth end in the switch namespace
	c    *Cluster
}

// Cluster is a set of hosts on one bridge.
type Cluster struct {
	Hosts  []*Host
	swtch  string
	prefix string
}

var subnetSeq atomic.Uint32

// New creates n hosts named <prefix>-h0 … on a fresh bridge.
func New(n int) (*Cluster, error) {
	id := make([]byte, 3)
	rand.Read(id)
	prefix := "gorma" + hex.EncodeToString(id)
	subnet := fmt.Sprintf("10.231.%d", (uint32(os.Getpid())+subnetSeq.Add(1))%250+1)
	c := &Cluster{swtch: prefix + "-sw", prefix: prefix}
	if err := run("ip", "netns", "add", c.swtch); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"ip", "-n", c.swtch, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", c.swtch, "link", "set", "br0", "up"},
		{"ip", "-n", c.swtch, "link", "set", "lo", "up"},
	}
	for i := range n {
		h := &Host{Name: fmt.Sprintf("%s-h%d", prefix, i), Addr: fmt.Sprintf("%s.%d", subnet, i+1),
			link: fmt.Sprintf("v%s%d", prefix[len(prefix)-6:], i), c: c}
		c.Hosts = append(c.Hosts, h)
		steps = append(steps,
			[]string{"ip", "netns", "add", h.Name},
			[]string{"ip", "-n", h.Name, "link", "set", "lo", "up"},
			[]string{"ip", "-n", c.swtch, "link", "add", h.link, "type", "veth", "peer", "name", "eth0", "netns", h.Name},
			[]string{"ip", "-n", c.swtch, "link", "set", h.link, "master", "br0", "up"},
			[]string{"ip", "-n", h.Name, "addr", "add", h.Addr + "/24", "dev", "eth0"},
			[]string{"ip", "-n", h.Name, "link", "set", "eth0", "up"},
		)
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Command returns a command that runs name with args inside h's namespace.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// Cut takes h's link down (its packets are dropped from now on); Restore brings it back.
func (h *Host) Cut() error { return run("ip", "-n", h.c.swtch, "link", "set", h.link, "down") }

// Restore brings a cut link back up.
func (h *Host) Restore() error { return run("ip", "-n", h.c.swtch, "link", "set", h.link, "up") }

// Close kills every process left in the hosts' namespaces and deletes them.
func (c *Cluster) Close() error {
	var errs []string
	for _, h := range c.Hosts {
		if out, _ := exec.Command("ip", "netns", "pids", h.Name).Output(); len(out) > 0 {
			for _, pid := range strings.Fields(string(out)) {
				exec.Command("kill", "-9", pid).Run()
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := run("ip", "netns", "del", h.Name); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := run("ip", "netns", "del", c.swtch); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("netns: %s", strings.Join(errs, "; "))
	}
	return nil
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netns: %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
