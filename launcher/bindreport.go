package launcher

import (
	"fmt"
	"path/filepath"
	"strings"
)

// bindingLine is --report-bindings' line for a rank that started on host.
func (s *submitter) bindingLine(host string, m *startedMsg) string {
	label := rankLabel(m.Rank, host, m.Pid)
	if apps := s.spec.Apps; apps != nil {
		i := s.spec.appOf(m.Rank)
		label = fmt.Sprintf("%s, program %d (%s)", label, i, filepath.Base(apps[i].Program))
	}
	if m.CPUs == nil {
		return fmt.Sprintf("golaunch: %s: not bound (any of the host's %d CPUs)", label, m.HostCPUs)
	}
	return fmt.Sprintf("golaunch: %s: bound to CPUs %s (of the host's %d)", label, cpuList(m.CPUs), m.HostCPUs)
}

// cpuList formats ascending processor numbers as ranges: "0-3,6".
func cpuList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		} else {
			fmt.Fprintf(&b, "%d", cpus[i])
		}
		i = j + 1
	}
	return b.String()
}
