package launcher

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// maxSlots bounds the slots of one host, so that a typo cannot ask for a billion ranks.
const maxSlots = 1 << 16

// HostSlots is one host of a host list and the ranks it may run.
type HostSlots struct {
	Name  string
	Slots int
}

// HostfileError is a bad line of a hostfile: which file, which line, what was wrong.
type HostfileError struct {
	File string
	Line int
	Msg  string
}

func (e *HostfileError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// ReadHostfile reads the hostfile at path; see ParseHostfile.
func ReadHostfile(path string) ([]HostSlots, error) {
	hosts, _, err := readHostfile(path)
	return hosts, err
}

// readHostfile reads the hostfile at path, and the max_slots of its hosts.
func readHostfile(path string) ([]HostSlots, map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("hostfile: %w", err)
	}
	defer f.Close()
	return parseHostfile(path, f)
}

// ParseHostfile parses a hostfile read from r (name is used in errors). Each line is
// blank, a comment (# to the end of the line), `host`, `host slots=N`, `host:N`, or one
// of those with `max_slots=M` (Open MPI's spelling; also max-slots=M), the most ranks
// --oversubscribe may place on the host (M >= N). CRLF line ends and a leading UTF-8
// byte-order mark are accepted. A host listed twice gets the sum of its slots (and of
// its max_slots) at its first position. A bad line yields a *HostfileError naming the
// file, the line and the problem.
func ParseHostfile(name string, r io.Reader) ([]HostSlots, error) {
	hosts, _, err := parseHostfile(name, r)
	return hosts, err
}

// parseHostfile is ParseHostfile, also returning the max_slots of the hosts that have
// one.
func parseHostfile(name string, r io.Reader) ([]HostSlots, map[string]int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	var hosts []HostSlots
	maxes := map[string]int{}
	unbounded := map[string]bool{} // hosts with a line without max_slots
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff") // the byte-order mark of Windows editors
		}
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		h, m, err := parseHostLine(fields)
		if err != nil {
			return nil, nil, &HostfileError{File: name, Line: n, Msg: err.Error()}
		}
		hosts = addHost(hosts, h)
		if m == 0 {
			unbounded[h.Name] = true
		} else {
			maxes[h.Name] = min(maxes[h.Name]+m, maxSlots)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, &HostfileError{File: name, Line: n + 1, Msg: err.Error()}
	}
	if len(hosts) == 0 {
		return nil, nil, fmt.Errorf("%s: no hosts in the hostfile", name)
	}
	for h := range unbounded {
		delete(maxes, h) // one line of the host sets no bound: the host has none
	}
	return hosts, maxes, nil
}

// parseHostLine parses the fields of one non-blank hostfile line: the host and its
// slots, and its max_slots (0 when the line gives none).
func parseHostLine(fields []string) (HostSlots, int, error) {
	h, err := parseHostSpec(fields[0])
	if err != nil {
		return HostSlots{}, 0, err
	}
	slotsSet := strings.Contains(fields[0], ":")
	maxSet := 0
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return HostSlots{}, 0, fmt.Errorf("unexpected %q after the host name (want slots=N or max_slots=M)", f)
		}
		switch k {
		case "slots":
			if slotsSet {
				return HostSlots{}, 0, fmt.Errorf("slots given twice for host %q", h.Name)
			}
			s, err := parseSlots(v)
			if err != nil {
				return HostSlots{}, 0, err
			}
			h.Slots, slotsSet = s, true
		case "max_slots", "max-slots":
			if maxSet > 0 {
				return HostSlots{}, 0, fmt.Errorf("max_slots given twice for host %q", h.Name)
			}
			m, err := parseSlots(v)
			if err != nil {
				return HostSlots{}, 0, fmt.Errorf("max_slots: %w", err)
			}
			maxSet = m
		default:
			return HostSlots{}, 0, fmt.Errorf("unknown attribute %q (slots=N and max_slots=M are understood)", k)
		}
	}
	if maxSet > 0 && maxSet < h.Slots {
		return HostSlots{}, 0, fmt.Errorf("host %q: max_slots=%d is below its %d slots", h.Name, maxSet, h.Slots)
	}
	return h, maxSet, nil
}

// ParseHostList parses the -H argument: comma-separated `host` or `host:slots` entries
// (one slot when omitted). A host listed twice gets the sum of its slots.
func ParseHostList(s string) ([]HostSlots, error) {
	var hosts []HostSlots
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("empty entry in host list %q", s)
		}
		h, err := parseHostSpec(item)
		if err != nil {
			return nil, err
		}
		hosts = addHost(hosts, h)
	}
	return hosts, nil
}

// parseHostSpec parses `host` or `host:slots`.
func parseHostSpec(s string) (HostSlots, error) {
	name, slots, hasSlots := strings.Cut(s, ":")
	if err := checkHostName(name); err != nil {
		return HostSlots{}, err
	}
	h := HostSlots{Name: name, Slots: 1}
	if hasSlots {
		n, err := parseSlots(slots)
		if err != nil {
			return HostSlots{}, fmt.Errorf("host %q: %w", name, err)
		}
		h.Slots = n
	}
	return h, nil
}

func parseSlots(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxSlots {
		return 0, fmt.Errorf("slots %q: want an integer from 1 to %d", s, maxSlots)
	}
	return n, nil
}

// checkHostName accepts host names and IP addresses: letters, digits and ".-_".
func checkHostName(name string) error {
	if name == "" {
		return fmt.Errorf("empty host name")
	}
	if len(name) > 253 {
		return fmt.Errorf("host name of %d bytes is too long", len(name))
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || bytes.IndexByte([]byte(".-_"), c) >= 0
		if !ok {
			return fmt.Errorf("host name %q: character %q is not allowed", name, c)
		}
	}
	return nil
}

// addHost appends h, or adds its slots to an earlier entry of the same name.
func addHost(hosts []HostSlots, h HostSlots) []HostSlots {
	for i := range hosts {
		if hosts[i].Name == h.Name {
			hosts[i].Slots = min(hosts[i].Slots+h.Slots, maxSlots)
			return hosts
		}
	}
	return append(hosts, h)
}
