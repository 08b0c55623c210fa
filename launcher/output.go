package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// maxPartial bounds a line held back waiting for its newline; a longer one is emitted
// with a newline added, so that one endless line cannot hold memory or the terminal.
const maxPartial = 64 << 10

// outputSink writes the ranks' output where the user asked: to golaunch's stdout and
// stderr (tagged "[rank] " per line, or untagged), or to one file per rank. In line mode
// only whole lines are written, each line (with its tag) in one Write, so lines of
// different ranks never interleave within a line. Safe for concurrent use: each agent
// connection's reader calls write; mu guards everything below it.
type outputSink struct {
	stdout, stderr io.Writer
	tag            bool   // prefix "[rank] "
	lines          bool   // hold partial lines until their newline (else pass bytes through)
	dir            string // one file per rank when set

	mu      sync.Mutex
	partial map[int][]byte   // rank*2+stream-1 -> held-back partial line
	files   map[int]*os.File // rank -> its open file, with dir
	created map[int]bool     // rank -> its file exists (created by this job)
	broken  [3]bool          // stdout or stderr failed (EPIPE): discard further writes
	err     error            // the first file error

	// gone is closed when a write to stdout fails with EPIPE (golaunch ... | head): the
	// job then ends as a pipeline's writer would, instead of running on with its output
	// dropped (a rank printing for ever kept the pipeline from ending).
	gone chan struct{}
}

func newOutputSink(stdout, stderr io.Writer, tag, lines bool, dir string) *outputSink {
	return &outputSink{stdout: stdout, stderr: stderr, tag: tag, lines: lines || tag, dir: dir,
		partial: make(map[int][]byte), files: make(map[int]*os.File), created: make(map[int]bool),
		gone: make(chan struct{})}
}

// prepareOutputDir creates dir (if needed) and checks it is writable.
func prepareOutputDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	f, err := os.CreateTemp(dir, ".golaunch-check-")
	if err != nil {
		return fmt.Errorf("--output-dir %s is not writable: %w", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// rankFile is the file of rank in dir.
func rankFile(dir string, rank int) string {
	return filepath.Join(dir, "rank."+strconv.Itoa(rank)+".log")
}

// write handles a chunk of rank's output on stream (1 stdout, 2 stderr).
func (s *outputSink) write(rank, stream int, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir != "" {
		s.toFile(rank, data)
		return
	}
	if !s.lines {
		s.emit(stream, data)
		return
	}
	k := rank*2 + stream - 1
	held := s.partial[k]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			held = append(held, data...)
			if len(held) >= maxPartial {
				s.emitLine(rank, stream, held, true)
				held = held[:0]
			}
			break
		}
		// A whole line: the held-back start plus data up to its newline.
		if len(held) > 0 {
			held = append(held, data[:i+1]...)
			s.emitLine(rank, stream, held, false)
			held = held[:0]
		} else {
			j := bytes.LastIndexByte(data, '\n')
			s.emitLines(rank, stream, data[:j+1])
			i = j
		}
		data = data[i+1:]
	}
	if len(held) == 0 {
		delete(s.partial, k)
	} else {
		s.partial[k] = held
	}
}

// flushRank emits rank's held-back partial lines (it has ended) and closes its file.
func (s *outputSink) flushRank(rank int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for stream := 1; stream <= 2; stream++ {
		k := rank*2 + stream - 1
		if held := s.partial[k]; len(held) > 0 {
			s.emitLine(rank, stream, held, true)
		}
		delete(s.partial, k)
	}
	if s.dir != "" && !s.created[rank] {
		s.toFile(rank, nil) // a rank without output still gets its (empty) file
	}
	if f := s.files[rank]; f != nil {
		if err := f.Close(); err != nil && s.err == nil {
			s.err = err
		}
		delete(s.files, rank)
	}
}

// close flushes everything and reports the first error writing rank files.
func (s *outputSink) close() error {
	s.mu.Lock()
	var ranks []int
	for k := range s.partial {
		ranks = append(ranks, k/2)
	}
	for r := range s.files {
		ranks = append(ranks, r)
	}
	s.mu.Unlock()
	for _, r := range ranks {
		s.flushRank(r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// emitLines writes one or more whole lines (ending in '\n'), tagged, in one Write.
func (s *outputSink) emitLines(rank, stream int, lines []byte) {
	if !s.tag {
		s.emit(stream, lines)
		return
	}
	prefix := "[" + strconv.Itoa(rank) + "] "
	n := bytes.Count(lines, []byte{'\n'})
	buf := make([]byte, 0, len(lines)+n*len(prefix))
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		buf = append(buf, prefix...)
		buf = append(buf, lines[:i+1]...)
		lines = lines[i+1:]
	}
	s.emit(stream, buf)
}

// emitLine writes line (with its newline, or one added when addNL) tagged.
func (s *outputSink) emitLine(rank, stream int, line []byte, addNL bool) {
	buf := make([]byte, 0, len(line)+16)
	if s.tag {
		buf = append(buf, "["+strconv.Itoa(rank)+"] "...)
	}
	buf = append(buf, line...)
	if addNL {
		buf = append(buf, '\n')
	}
	s.emit(stream, buf)
}

func (s *outputSink) emit(stream int, b []byte) {
	if s.broken[stream] {
		return
	}
	w := s.stdout
	if stream == 2 {
		w = s.stderr
	}
	if _, err := w.Write(b); err != nil {
		s.broken[stream] = true // drop further output of this stream
		if stream == 1 && errors.Is(err, syscall.EPIPE) {
			close(s.gone) // a closed pipe (| head): the job ends (submitter.wait)
		}
	}
}

func (s *outputSink) toFile(rank int, data []byte) {
	f := s.files[rank]
	if f == nil {
		var err error
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if s.created[rank] {
			flags = os.O_WRONLY | os.O_APPEND
		}
		f, err = os.OpenFile(rankFile(s.dir, rank), flags, 0o644)
		if err != nil {
			if s.err == nil {
				s.err = err
			}
			return
		}
		s.files[rank] = f
		s.created[rank] = true
	}
	if _, err := f.Write(data); err != nil && s.err == nil {
		s.err = err
	}
}

// stallWriter is golaunch's own stderr (its summary line and notices). Each write goes
// through a goroutine and is given up after d when the reader of stderr stopped reading,
// so that a message never keeps golaunch from ending a job (SIGTERM included). While a
// write it gave up on is still blocked, later messages are dropped; they are written
// again once it completes. Writes keep their order.
type stallWriter struct {
	w io.Writer
	d time.Duration

	mu      sync.Mutex
	pending chan struct{} // closed when the write in flight completes; nil if none
}

func newStallWriter(w io.Writer, d time.Duration) *stallWriter { return &stallWriter{w: w, d: d} }

func (s *stallWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending != nil {
		select {
		case <-s.pending:
			s.pending = nil
		default:
			return len(p), nil // stderr is still stuck: drop
		}
	}
	buf := append([]byte(nil), p...)
	done := make(chan struct{})
	go func() {
		s.w.Write(buf)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(s.d):
		s.pending = done
	}
	return len(p), nil
}
