package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// otherUID is a uid that owns nothing on the machine: another user, for the kernel.
const otherUID = 64123

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWriteFileReplacesLink: a link at the name is replaced by the file, and the link's
// target keeps its content.
func TestWriteFileReplacesLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "trace.json")
	if err := os.Symlink(victim, name); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(name, []byte("trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read(t, victim); got != "keep" {
		t.Errorf("the link's target holds %q, want %q", got, "keep")
	}
	fi, err := os.Lstat(name)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Errorf("%s is %v, want a regular file", name, fi.Mode())
	}
	if got := read(t, name); got != "trace" {
		t.Errorf("%s holds %q, want %q", name, got, "trace")
	}
	um := syscall.Umask(0o022)
	syscall.Umask(um)
	if want := os.FileMode(0o644 &^ um); fi.Mode().Perm() != want {
		t.Errorf("mode %v, want %v (0644 under umask %04o)", fi.Mode().Perm(), want, um)
	}
}

// TestCreateCloseAbort: the name appears only at Close, and Abort leaves nothing.
func TestCreateCloseAbort(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "summary.txt")
	f, err := Create(name, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name() != name {
		t.Errorf("Name() = %q, want %q", f.Name(), name)
	}
	if _, err := f.WriteString("part"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(name); !os.IsNotExist(err) {
		t.Errorf("%s exists before Close (%v)", name, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, name); got != "part" {
		t.Errorf("%s holds %q after Close, want %q", name, got, "part")
	}
	g, err := Create(filepath.Join(dir, "other"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	g.WriteString("x")
	g.Abort()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "summary.txt" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the folder holds %v, want only summary.txt", names)
	}
}

// TestCreateMissingFolder: the error names the caller's path, not the temporary one.
func TestCreateMissingFolder(t *testing.T) {
	name := filepath.Join(t.TempDir(), "no", "t.json")
	_, err := Create(name, 0o644)
	if err == nil || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("Create in a missing folder: %v, want an error naming %s only", err, name)
	}
}

// TestCheckOwn: paths of this user's, its own links and sticky shared folders pass.
func TestCheckOwn(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "prof")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sub, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, sub, filepath.Join(sub, "t.json"), filepath.Join(dir, "new", "deeper", "t.json"),
		filepath.Join(shared, "t.json"), link, filepath.Join(link, "summary.txt")} {
		if err := Check(p); err != nil {
			t.Errorf("Check(%s): %v", p, err)
		}
	}
}

// TestCheckOpenFolder: a folder any user may change, without the sticky bit, is
// refused, and so is a path through it.
func TestCheckOpenFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "t.json")} {
		err := Check(p)
		if err == nil || !strings.Contains(err.Error(), "no sticky bit") || !strings.Contains(err.Error(), dir) {
			t.Errorf("Check(%s) = %v, want the folder refused for its mode", p, err)
		}
	}
}

// TestCheckOtherUser: another user's link, folder or file is refused with its owner
// named. Making them needs root.
func TestCheckOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testbudget.SkipEngine(t, "gives files to another uid: needs root")
	}
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(dir, "sticky")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(sticky, "t.json")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(sticky, "their.json")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(file, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(sticky, "out")
	if err := os.Symlink(dir, dirLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(dirLink, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{link, "is a link that uid 64123 made"},
		{filepath.Join(dirLink, "t.json"), "is a link that uid 64123 made"},
		{theirs, "belongs to uid 64123"},
		{filepath.Join(theirs, "summary.txt"), "belongs to uid 64123"},
		{file, "belongs to uid 64123"},
	} {
		if err := Check(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%s) = %v, want an error containing %q", tc.path, err, tc.want)
		}
	}
	if err := WriteFile(link, []byte("trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read(t, victim); got != "keep" {
		t.Errorf("writing over another user's link changed its target: %q", got)
	}
}
