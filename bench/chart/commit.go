package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// commitForm is a commit as the measuring scripts record it: an abbreviated or full
// hash, with "-dirty" when tracked files differed from it.
var commitForm = regexp.MustCompile(`^[0-9a-f]{7,40}(-dirty)?$`)

// readCommit reads the commit a job's results measured: the first line of path
// (scripts/device16.sh bundle writes it beside the job). It is "" when path does not
// exist.
func readCommit(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	c, _, _ := strings.Cut(string(b), "\n")
	c = strings.TrimSpace(c)
	if !commitForm.MatchString(c) {
		return "", fmt.Errorf("%s: %q is not a commit (want a hash, with -dirty or not)", path, c)
	}
	return c, nil
}

// commitText is a commit as the page shows it: the datum commit=HASH, or "not
// recorded".
func commitText(c string) string {
	if c == "" {
		return "not recorded"
	}
	return "`commit=" + c + "`"
}
