package gorma_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoTrackedExecutable fails when git tracks a compiled program: build output belongs
// in bin/ or in .gitignore, never in the repository. It reads the paths git tracks from
// .git/index itself (CI runs without the git command) and looks at the first bytes of
// each file: an ELF header is a compiled program.
func TestNoTrackedExecutable(t *testing.T) {
	paths, err := indexPaths(gitIndex())
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no .git/index: not a git checkout")
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 100 {
		t.Fatalf(".git/index lists %d paths; want the repository's hundreds", len(paths))
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 4)
		n, _ := f.Read(head)
		f.Close()
		if bytes.Equal(head[:n], []byte("\x7fELF")) {
			t.Errorf("%s is a compiled program tracked by git: git rm --cached it and add it to .gitignore", p)
		}
	}
}

// gitIndex is the index file of the checkout: .git/index, or in a linked worktree (where
// .git is a file saying "gitdir: DIR") DIR/index.
func gitIndex() string {
	b, err := os.ReadFile(".git")
	if err != nil {
		return filepath.Join(".git", "index")
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return filepath.Join(".git", "index")
	}
	return filepath.Join(dir, "index")
}

// indexPaths returns the paths of a git index file (versions 2 and 3: each entry is 62
// bytes of stat data, object id and flags, then its NUL-terminated path, padded to a
// multiple of 8 bytes).
func indexPaths(name string) ([]string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, fmt.Errorf("%s: not a git index", name)
	}
	version, count := binary.BigEndian.Uint32(b[4:8]), binary.BigEndian.Uint32(b[8:12])
	if version != 2 && version != 3 {
		return nil, fmt.Errorf("%s: index version %d: want 2 or 3", name, version)
	}
	var out []string
	off := 12
	for range count {
		const fixed = 62
		if off+fixed > len(b) {
			return nil, fmt.Errorf("%s: truncated at entry %d", name, len(out))
		}
		flags := binary.BigEndian.Uint16(b[off+60 : off+62])
		start := off + fixed
		if flags&0x4000 != 0 { // extended flags (version 3)
			start += 2
		}
		end := bytes.IndexByte(b[start:], 0)
		if end < 0 {
			return nil, fmt.Errorf("%s: unterminated path at entry %d", name, len(out))
		}
		out = append(out, string(b[start:start+end]))
		entry := start + end - off + 1 // through the NUL
		off += (entry + 7) &^ 7
	}
	return out, nil
}
