package benchkit

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
)

// WriteJSON writes v as indented JSON with a final newline to the file dest, or to
// standard output when dest is "-".
func WriteJSON(v any, dest string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeOut(b, dest)
}

// WriteJSONLine writes v as one line of JSON to the file dest, or to standard output
// when dest is "-".
func WriteJSONLine(v any, dest string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeOut(b, dest)
}

// writeOut writes b and a newline to the file dest, or to standard output for "-".
func writeOut(b []byte, dest string) error {
	b = append(b, '\n')
	if dest == "-" {
		_, err := os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(dest, b, 0o644)
}

// StartProfile starts a CPU profile of this process into the file prefix.rank and returns
// the function that stops it and closes the file. An empty prefix profiles nothing.
func StartProfile(prefix string, rank int) (stop func(), err error) {
	if prefix == "" {
		return func() {}, nil
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", prefix, rank))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
