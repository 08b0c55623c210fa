package main

import (
	"fmt"
	"slices"
	"strings"
)

// Startup16 is docs/startup16.json: one run of scripts/device16-startup.sh on the 16-core
// device machine, as the job wrote it, the source of the page's section "Startup on a
// 16-core node" (the machine's cores named). chart page takes the medians and the spread
// from its runs.
type Startup16 struct {
	Command string     `json:"command"`
	Machine D16Machine `json:"machine"`
	OpenMPI string     `json:"openmpi"` // the version the bundle's mpirun reports
	// Lstopo is the lstopo that golaunch found on PATH and gave Open MPI's ranks the
	// node's topology from ("": none); HostLstopo is the machine's own ("": none).
	Lstopo     string         `json:"lstopo"`
	HostLstopo string         `json:"host_lstopo"`
	Reps       int            `json:"reps"`
	Load       *Load          `json:"load,omitempty"`
	Runs       []StartupCells `json:"runs"`
	Failed     []string       `json:"failed,omitempty"`
}

// StartupCells is every run of one system at one rank count: each job's wall time, in ms.
type StartupCells struct {
	System string    `json:"system"` // an id of startupSystems
	Ranks  int       `json:"ranks"`
	MS     []float64 `json:"ms"`
}

// startupSystems are the systems of the job, in the page's column order.
var startupSystems = []struct{ id, name string }{
	{"golaunch_ompi", "Open MPI's hello, golaunch"},
	{"golaunch_ompi_notopo", "Open MPI's hello, golaunch without lstopo"},
	{"mpirun_ompi", "Open MPI's hello, mpirun"},
	{"golaunch_gorma", "gorma's hello, golaunch"},
}

// loadStartup16 reads path strictly, or returns nil when it does not exist.
func loadStartup16(path string) (*Startup16, error) {
	s, err := loadStrict[Startup16](path)
	if s == nil || err != nil {
		return nil, err
	}
	for _, c := range s.Runs {
		if !slices.ContainsFunc(startupSystems, func(k struct{ id, name string }) bool { return k.id == c.System }) {
			return nil, fmt.Errorf("%s: unknown system %q", path, c.System)
		}
	}
	return s, nil
}

// cell returns the runs of system at ranks, or nil.
func (s *Startup16) cell(system string, ranks int) []float64 {
	for _, c := range s.Runs {
		if c.System == system && c.Ranks == ranks && len(c.MS) > 0 {
			return c.MS
		}
	}
	return nil
}

// renderStartup16 writes the section "Startup on a N-core node": a row per rank count, a
// column per system that ran, and golaunch over mpirun for Open MPI's hello against the
// target <= 1.00x.
func renderStartup16(s *Startup16) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "## Startup on a %d-core node\n\n", s.Machine.Cores)
	fmt.Fprintf(&b, "From `%s`, run on the device machine from the bundle of `scripts/device16.sh bundle startup`: %d cores (%s), %d GiB, %d NUMA node(s). "+
		"The wall time of a whole hello job: Open MPI's (`bench/mpi/hello.c` built with Debian's `mpicc.openmpi`, Open MPI %s from the bundle) "+
		"under golaunch and under its own mpirun (`orterun --allow-run-as-root --oversubscribe`), and gorma's (`apps/hello`) under golaunch. "+
		"Medians of %d repetitions, each running every cell once, in turn; in brackets the fastest and the slowest run. "+
		"A run counts only when its ranks formed one world.\n\n",
		s.Command, s.Machine.Cores, s.Machine.CPU, s.Machine.MemoryGiB, s.Machine.NUMANodes, s.OpenMPI, s.Reps)
	b.WriteString(lstopoText(s) + "\n\n")
	b.WriteString(loadText(s.Load, s.Machine.Cores) + "\n\n")
	if len(s.Failed) > 0 {
		fmt.Fprintf(&b, "Not measured: %s.\n\n", strings.Join(s.Failed, "; "))
	}
	var ranks []int
	for _, c := range s.Runs {
		if !slices.Contains(ranks, c.Ranks) {
			ranks = append(ranks, c.Ranks)
		}
	}
	slices.Sort(ranks)
	head := []string{"ranks"}
	var cols []string
	for _, sys := range startupSystems {
		if slices.ContainsFunc(s.Runs, func(c StartupCells) bool { return c.System == sys.id && len(c.MS) > 0 }) {
			head, cols = append(head, sys.name), append(cols, sys.id)
		}
	}
	head = append(head, "golaunch / mpirun, Open MPI's hello", "target")
	b.WriteString("### Open MPI's and gorma's hello under golaunch and mpirun (ms, lower is better)\n\n")
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|---|" + strings.Repeat("---:|", len(head)-2) + "---|\n")
	for _, n := range ranks {
		cells := []string{fmt.Sprint(n)}
		for _, id := range cols {
			cells = append(cells, startupCell(s.cell(id, n)))
		}
		g, m := s.cell("golaunch_ompi", n), s.cell("mpirun_ompi", n)
		if g == nil || m == nil {
			cells = append(cells, "-", "<= "+ratioText(1)+" not measured")
		} else {
			q := median(g) / median(m)
			ok := q <= 1
			cells = append(cells, ratioText(q), targetText(&Target{Text: "<= " + ratioText(1), OK: &ok}, ""))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String(), nil
}

// lstopoText says where golaunch's topology for Open MPI's ranks came from.
func lstopoText(s *Startup16) string {
	host := "The machine has no lstopo of its own"
	if s.HostLstopo != "" {
		host = fmt.Sprintf("The machine's own lstopo is `%s`", s.HostLstopo)
	}
	if s.Lstopo == "" {
		return host + "; golaunch found none, so each Open MPI rank discovered the node's topology itself (hwloc, in MPI_Init)."
	}
	return host + fmt.Sprintf("; golaunch gave Open MPI's ranks the node's topology from `%s` (pmix.hwlocxml2), "+
		"and \"without lstopo\" is golaunch with no lstopo on PATH: each rank discovers the topology itself.", s.Lstopo)
}

// startupCell is a cell's median with its fastest and slowest run.
func startupCell(ms []float64) string {
	if len(ms) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s-%s)", num(median(ms), 3), num(slices.Min(ms), 3), num(slices.Max(ms), 3))
}
