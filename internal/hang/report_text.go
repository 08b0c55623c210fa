package hang

import (
	"strconv"
	"strings"
	"time"
)

// AppendReport appends r's text form to b and returns the extended buffer: a header line,
// one line per record (AppendRecord's form), one line per Done record, then, when Stacks
// is not empty, a block of exactly as many bytes as the header's stacks field says,
// followed by a newline:
//
//	rank=0 host=node1 state=blocked progress=12 omitted=0 records=2 stacks=0
//	call=Recv comm=World peer=1 tag=0 since=31200000000
//	call=Send comm=World peer=2 tag=7 since=2000000000
//
// A Foreign rank's header carries its process and PMI calls, each field left out at its
// zero value:
//
//	rank=1 host=node1 state=foreign progress=9 omitted=0 records=0 stacks=0 pid=4242 pmi=PMIx pmiwait=fence pmisince=31000000000
//
// The header's done field, left out at 0, counts the Done lines. Every line ends in a
// newline. Host and the other strings are percent-encoded like a record's. At most
// MaxRecords records are written (the rest add to omitted), at most MaxRecords Done
// records (the newest) and at most MaxStacks bytes of Stacks.
func AppendReport(b []byte, r Report) []byte {
	recs, omitted := r.Records, r.Omitted
	if len(recs) > MaxRecords {
		omitted += len(recs) - MaxRecords
		recs = recs[:MaxRecords]
	}
	done := r.Done
	if len(done) > MaxRecords {
		done = done[len(done)-MaxRecords:]
	}
	stacks := r.Stacks
	if len(stacks) > MaxStacks {
		stacks = stacks[:MaxStacks]
	}
	b = strconv.AppendInt(append(b, "rank="...), int64(r.Rank), 10)
	b = appendEscaped(append(b, " host="...), r.Host)
	b = append(append(b, " state="...), r.State.String()...)
	b = strconv.AppendUint(append(b, " progress="...), r.Progress, 10)
	b = strconv.AppendInt(append(b, " omitted="...), int64(omitted), 10)
	b = strconv.AppendInt(append(b, " records="...), int64(len(recs)), 10)
	b = strconv.AppendInt(append(b, " stacks="...), int64(len(stacks)), 10)
	b = appendInt(b, " done=", len(done), 0)
	b = appendString(b, " trace=", r.Trace)
	b = appendInt(b, " pid=", r.Pid, 0)
	b = appendString(b, " end=", r.End)
	b = appendString(b, " pmi=", r.PMI.Wire)
	b = appendString(b, " pmiwait=", r.PMI.Wait)
	b = appendString(b, " pmilast=", r.PMI.Last)
	if r.PMI.Since != 0 {
		b = strconv.AppendInt(append(b, " pmisince="...), int64(r.PMI.Since), 10)
	}
	if r.PMI.Finalized {
		b = append(b, " pmifinalized=1"...)
	}
	b = append(b, '\n')
	for _, rec := range recs {
		b = append(AppendRecord(b, rec), '\n')
	}
	for _, rec := range done {
		b = append(AppendRecord(b, rec), '\n')
	}
	if stacks != "" {
		b = append(append(b, stacks...), '\n')
	}
	return b
}

var headerKeys = map[string]bool{"rank": true, "host": true, "state": true, "progress": true,
	"omitted": true, "records": true, "stacks": true, "done": true, "trace": true, "pid": true, "end": true,
	"pmi": true, "pmiwait": true, "pmilast": true, "pmisince": true, "pmifinalized": true}

// ParseReport parses exactly one report in AppendReport's form. The header's fields may
// come in any order (unknown keys are skipped; rank, state, records and stacks are
// required), records, done and stacks say how many record lines, Done lines and stack
// bytes follow, and nothing may follow them. Errors wrap ErrSyntax.
func ParseReport(s string) (Report, error) {
	head, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return Report{}, syntaxf("no header line")
	}
	if len(head) > maxHeaderLen {
		return Report{}, syntaxf("header longer than %d bytes", maxHeaderLen)
	}
	fs, err := fields(head, headerKeys)
	if err != nil {
		return Report{}, err
	}
	var r Report
	nrec, ndone, nstacks := -1, 0, -1
	hasRank, hasState := false, false
	for _, f := range fs {
		k, v := f[0], f[1]
		switch k {
		case "rank":
			r.Rank, err = parseInt(v, 0)
			hasRank = true
		case "host":
			r.Host, err = unescape(v)
		case "trace":
			r.Trace, err = unescape(v)
		case "pid":
			r.Pid, err = parseInt(v, 0)
		case "end":
			r.End, err = unescape(v)
		case "pmi":
			r.PMI.Wire, err = unescape(v)
		case "pmiwait":
			r.PMI.Wait, err = unescape(v)
		case "pmilast":
			r.PMI.Last, err = unescape(v)
		case "pmisince":
			var n int64
			n, err = strconv.ParseInt(v, 10, 64)
			r.PMI.Since = time.Duration(n)
		case "pmifinalized":
			if v != "1" {
				err = syntaxf("pmifinalized=%.20q: want 1", v)
			}
			r.PMI.Finalized = true
		case "state":
			var ok bool
			if r.State, ok = parseState(v); !ok {
				err = syntaxf("unknown state %.20q", v)
			}
			hasState = true
		case "progress":
			r.Progress, err = strconv.ParseUint(v, 10, 64)
		case "omitted":
			r.Omitted, err = parseInt(v, 0)
		case "records":
			if nrec, err = parseInt(v, 0); err == nil && nrec > MaxRecords {
				err = syntaxf("more than %d records", MaxRecords)
			}
		case "done":
			if ndone, err = parseInt(v, 0); err == nil && ndone > MaxRecords {
				err = syntaxf("more than %d done records", MaxRecords)
			}
		case "stacks":
			if nstacks, err = parseInt(v, 0); err == nil && nstacks > MaxStacks {
				err = syntaxf("stacks longer than %d bytes", MaxStacks)
			}
		}
		if err != nil {
			return Report{}, wrap("header "+k, err)
		}
	}
	if !hasRank || !hasState || nrec < 0 || nstacks < 0 {
		return Report{}, syntaxf("header lacks rank, state, records or stacks")
	}
	if r.Records, rest, err = parseRecords(rest, nrec, "record"); err != nil {
		return Report{}, err
	}
	if r.Done, rest, err = parseRecords(rest, ndone, "done record"); err != nil {
		return Report{}, err
	}
	if nstacks > 0 {
		if len(rest) < nstacks+1 || rest[nstacks] != '\n' {
			return Report{}, syntaxf("stacks block shorter than %d bytes or not ended by a newline", nstacks)
		}
		r.Stacks, rest = rest[:nstacks], rest[nstacks+1:]
	}
	if rest != "" {
		return Report{}, syntaxf("%d bytes after the report", len(rest))
	}
	return r, nil
}

// parseRecords parses n record lines from the start of s and returns them (nil for none)
// and what follows them; what names them in errors.
func parseRecords(s string, n int, what string) ([]Record, string, error) {
	var recs []Record
	for i := 0; i < n; i++ {
		line, more, ok := strings.Cut(s, "\n")
		if !ok {
			return nil, "", syntaxf("%d of %d %ss", i, n, what)
		}
		rec, err := ParseRecord(line)
		if err != nil {
			return nil, "", wrap(what+" "+strconv.Itoa(i), err)
		}
		recs = append(recs, rec)
		s = more
	}
	return recs, s, nil
}
