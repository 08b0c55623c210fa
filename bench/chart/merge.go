package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
)

// runMerge is chart merge: each --section FILE (a section as JSON, as chart collect
// --section reads it) takes the place of the report's section with the same id, or
// follows the others when the report has none. The rest of the report stays as it was,
// so one comparison can be measured again without the others. A merged section names
// the commit it measured: its own "commit", else --commit.
func runMerge(args []string) error {
	fs := pflag.NewFlagSet("chart merge", pflag.ContinueOnError)
	in := fs.String("in", "docs/benchmarks.json", "the report to merge into")
	out := fs.String("out", "", "the report to write (default: --in)")
	files := fs.StringArray("section", nil, "FILE: a section as JSON (repeated)")
	commit := fs.String("commit", "", "the git commit the sections measured, for those that do not name theirs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(*files) == 0 {
		return errors.New("merge: at least one --section FILE is needed")
	}
	if *out == "" {
		*out = *in
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	rep, err := decodeReport(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	for _, file := range *files {
		s, err := readSection(file)
		if err != nil {
			return err
		}
		if s.Commit == "" {
			s.Commit = *commit
		}
		if s.Commit == "" {
			return fmt.Errorf("merge: %s names no commit: pass --commit with the commit it measured", file)
		}
		rep.merge(s)
	}
	if err := rep.validate(); err != nil {
		return err
	}
	b, err := rep.encode()
	if err != nil {
		return err
	}
	return os.WriteFile(*out, b, 0o644)
}

// merge puts s in place of the section with its id, or after the others.
func (rep *Report) merge(s Section) {
	for i := range rep.Sections {
		if rep.Sections[i].ID == s.ID {
			rep.Sections[i] = s
			return
		}
	}
	rep.Sections = append(rep.Sections, s)
}
