package trace

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// mergeBenchRanks and mergeBenchRounds size BenchmarkMerge's job: 8 ranks whose full
// flight recorders of the runtime's default size (131072 events) hold a ring exchange,
// 1048576 events in all.
const (
	mergeBenchRanks  = 8
	mergeBenchRounds = 1 << 15
)

// BenchmarkMerge merges the dumps of a job of full flight recorders and reports the cost
// per million events (s/Mevent) and the bytes written per event. Run it with
// `go test -run '^$' -bench Merge -benchtime 3x ./internal/trace`.
func BenchmarkMerge(b *testing.B) {
	dumps, offsets := ring(mergeBenchRanks, mergeBenchRounds, 4*mergeBenchRounds, make([]int64, mergeBenchRanks))
	events := 0
	for _, d := range dumps {
		events += len(d.Events)
	}
	var out countWriter
	b.ResetTimer()
	for b.Loop() {
		if _, err := Merge(&out, dumps, offsets); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(events)*1e6, "s/Mevent")
	b.ReportMetric(float64(out.n)/float64(b.N)/float64(events), "B/event")
}

// BenchmarkMergeFiles is BenchmarkMerge from dump files, as golaunch merges them.
func BenchmarkMergeFiles(b *testing.B) {
	dumps, offsets := ring(mergeBenchRanks, mergeBenchRounds, 4*mergeBenchRounds, make([]int64, mergeBenchRanks))
	dir := b.TempDir()
	var paths []string
	events := 0
	for i, d := range dumps {
		events += len(d.Events)
		enc, err := AppendDump(nil, d)
		if err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(dir, strconv.Itoa(i)+".gtrc")
		if err := os.WriteFile(p, enc, 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := MergeFiles(io.Discard, paths, offsets); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(events)*1e6, "s/Mevent")
}

// countWriter counts the bytes written to it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}
