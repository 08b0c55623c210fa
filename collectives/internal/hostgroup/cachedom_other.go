//go:build !linux

package hostgroup

import (
	"errors"
	"fmt"
)

// readLLC reports the last-level cache of processor cpu unknown: only Linux's sysfs is
// read.
func readLLC(root string, cpu int) ([]int, error) {
	return nil, fmt.Errorf("cache of processor %d under %s: %w", cpu, root, errors.ErrUnsupported)
}
