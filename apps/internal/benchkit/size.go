package benchkit

import (
	"fmt"
	"strconv"
)

// Size is a byte count flag (pflag.Value) accepting the suffixes K, M and G (powers of
// 1024): 8, 4K, 1M.
type Size int

func (v *Size) String() string { return strconv.Itoa(int(*v)) }

// Type names the flag's value in --help.
func (v *Size) Type() string { return "size" }

// Set parses s.
func (v *Size) Set(s string) error {
	mult := 1
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		}
		if mult > 1 {
			s = s[:n-1]
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > (1<<31)/mult {
		return fmt.Errorf("want a byte count such as 8, 4K or 1M")
	}
	*v = Size(n * mult)
	return nil
}
