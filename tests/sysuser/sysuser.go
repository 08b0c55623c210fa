package sysuser

import (
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// IDs returns the uid and gid of the system user name, creating the account (no home,
// no shell) if need be. It skips t unless the test runs as root; why says what the
// test does as that user.
func IDs(t testing.TB, name, why string) (uid, gid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		testbudget.SkipEngine(t, "%s: needs root to create the user %s (useradd)", why, name)
	}
	u, err := user.Lookup(name)
	if err != nil {
		out, uerr := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
		if u, err = user.Lookup(name); err != nil { // another test process may have made it meanwhile
			t.Fatalf("create user %s: useradd: %v: %s", name, uerr, out)
		}
	}
	if uid, err = strconv.Atoi(u.Uid); err != nil {
		t.Fatalf("user %s: uid %q: %v", name, u.Uid, err)
	}
	if gid, err = strconv.Atoi(u.Gid); err != nil {
		t.Fatalf("user %s: gid %q: %v", name, u.Gid, err)
	}
	return uid, gid
}
