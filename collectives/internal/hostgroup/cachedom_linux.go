package hostgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// readLLC returns the processors that share processor cpu's last-level cache, ascending.
// root is the processors' sysfs directory (sysCPU). Under root/cpuN/cache, each indexK
// describes one cache: its level, its type (Data, Instruction or Unified) and
// shared_cpu_list. The last-level cache is the one of the highest level that holds data.
func readLLC(root string, cpu int) ([]int, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "cpu"+strconv.Itoa(cpu), "cache", "index*"))
	if err != nil {
		return nil, err
	}
	best, bestLevel := "", 0
	for _, d := range dirs {
		typ, err1 := os.ReadFile(filepath.Join(d, "type"))
		lv, err2 := os.ReadFile(filepath.Join(d, "level"))
		if err1 != nil || err2 != nil || strings.TrimSpace(string(typ)) == "Instruction" {
			continue
		}
		if level, err := strconv.Atoi(strings.TrimSpace(string(lv))); err == nil && level > bestLevel {
			best, bestLevel = d, level
		}
	}
	if best == "" {
		return nil, fmt.Errorf("no data cache of processor %d listed under %s", cpu, root)
	}
	b, err := os.ReadFile(filepath.Join(best, "shared_cpu_list"))
	if err != nil {
		return nil, err
	}
	return parseCPUList(string(b))
}
