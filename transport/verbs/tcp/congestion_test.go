package tcp

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// congestionOfConn reads TCP_CONGESTION of s's live connection.
func congestionOfConn(t *testing.T, s *side) string {
	t.Helper()
	raw := liveConn(t, s).c
	var name string
	var serr error
	if err := raw.Control(func(fd uintptr) {
		name, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return strings.TrimRight(name, "\x00")
}

// kernelAllows reports whether this process may set congestion control name.
func kernelAllows(name string) bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name) == nil
}

// TestCongestion checks that both ends of a connection use the device's congestion
// control: CUBIC by default, the kernel's default with "system", another allowed one by
// name; and that a name the kernel refuses fails Open with ErrUnsupported, naming it.
func TestCongestion(t *testing.T) {
	sysDefault, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Skipf("no congestion control sysctl: %v", err)
	}
	for _, tc := range []struct{ cfg, want string }{
		{"", DefaultCongestion},
		{CongestionSystem, strings.TrimSpace(string(sysDefault))},
		{"reno", "reno"},
	} {
		t.Run("cfg="+tc.cfg, func(t *testing.T) {
			if tc.want == DefaultCongestion && !kernelAllows(tc.want) {
				t.Skipf("the kernel refuses %s here; the device keeps the kernel's default", tc.want)
			}
			if tc.cfg == "reno" && !kernelAllows("reno") {
				t.Skip("the kernel refuses reno here")
			}
			cfg := testCfg()
			cfg = withOptions(cfg, func(o *Options) { o.Congestion = tc.cfg })
			a, b := pair(t, cfg, verbs.QPAttr{})
			for _, s := range []*side{a, b} {
				if got := congestionOfConn(t, s); got != tc.want {
					t.Errorf("TCP_CONGESTION %q, want %q", got, tc.want)
				}
			}
		})
	}
	cfg := testCfg()
	cfg = withOptions(cfg, func(o *Options) { o.Congestion = "nosuchcc" })
	d, err := verbs.Open(providerName, cfg)
	if err == nil {
		d.Close()
		t.Fatal("Open with Congestion nosuchcc succeeded")
	}
	if !errors.Is(err, verbs.ErrUnsupported) || !strings.Contains(err.Error(), `"nosuchcc"`) || !strings.Contains(err.Error(), CongestionSystem) {
		t.Errorf("Open with Congestion nosuchcc: %v; want ErrUnsupported naming it and the alternatives", err)
	}
}
