package pmi

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestParseSimpleLine(t *testing.T) {
	tests := []struct {
		line   string
		cmd    string
		fields []Field
		err    string
	}{
		{line: "cmd=barrier_out\n", cmd: "barrier_out"},
		{line: "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0", cmd: "response_to_init",
			fields: []Field{{"pmi_version", "1"}, {"pmi_subversion", "1"}, {"rc", "0"}}},
		{line: "cmd=maxes  rc=0\tvallen_max=1024   kvsname_max=256 keylen_max=64 \r\n", cmd: "maxes",
			fields: []Field{{"rc", "0"}, {"vallen_max", "1024"}, {"kvsname_max", "256"}, {"keylen_max", "64"}}},
		{line: "cmd=get_result rc=0 value=", cmd: "get_result", fields: []Field{{"rc", "0"}, {"value", ""}}},
		{line: "cmd=get_result value=a=b rc=0", cmd: "get_result", fields: []Field{{"value", "a=b"}, {"rc", "0"}}},
		{line: `cmd=abort exitcode=3 message=two\ words`, cmd: "abort",
			fields: []Field{{"exitcode", "3"}, {"message", `two\ words`}}},
		{line: "cmd=get_result rc=-1 found msg=key_x_not_found", cmd: "get_result",
			fields: []Field{{"rc", "-1"}, {"found", ""}, {"msg", "key_x_not_found"}}},
		{line: "cmd=x a=1 a=2", cmd: "x", fields: []Field{{"a", "1"}, {"a", "2"}}},
		{line: "", err: "empty"},
		{line: "rc=0 cmd=maxes", err: "does not start with cmd="},
		{line: "cmd= rc=0", err: "does not start with cmd="},
		{line: "cmd=x =v", err: "has no key"},
		{line: "cmd=x a=\x01", err: "not printable"},
		{line: "cmd=x a=\xff", err: "not printable"},
		{line: `cmd=x a=b\`, err: "lone backslash"},
		{line: "hello world", err: "does not start with cmd="},
		{line: "cmd=x v=" + strings.Repeat("a", MaxSimpleLine), err: "too long"},
	}
	for _, tt := range tests {
		l, err := ParseSimpleLine(tt.line)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrProtocol) {
				t.Errorf("ParseSimpleLine(%q) = %v, want an ErrProtocol containing %q", Truncate(tt.line), err, tt.err)
			}
			continue
		}
		if err != nil || l.Cmd != tt.cmd || !reflect.DeepEqual(l.Fields, tt.fields) {
			t.Errorf("ParseSimpleLine(%q) = %q %v, %v; want %q %v", tt.line, l.Cmd, l.Fields, err, tt.cmd, tt.fields)
		}
	}
	l, _ := ParseSimpleLine("cmd=maxes vallen_max=1024 rc=0")
	if v, ok := l.Get("vallen_max"); !ok || v != "1024" || l.Value("absent") != "" {
		t.Errorf("Get: %q %v", v, ok)
	}
}

func TestFormatSimpleLine(t *testing.T) {
	got, err := FormatSimpleLine("put", "kvsname", "kvs_1_0", "key", "gorma-0-card", "value", "AbC-_9")
	if err != nil || got != "cmd=put kvsname=kvs_1_0 key=gorma-0-card value=AbC-_9\n" {
		t.Fatalf("FormatSimpleLine = %q, %v", got, err)
	}
	if got, err := FormatSimpleLine("get_result", "value", ""); err != nil || got != "cmd=get_result value=\n" {
		t.Errorf("empty value: %q, %v", got, err)
	}
	for _, bad := range [][]string{
		{"put", "key"},
		{"", "a", "b"},
		{"put", "k ey", "v"},
		{"put", "k=", "v"},
		{"put", "k", "two words"},
		{"put", "k", "a=b"},
		{"put", "k", `a\b`},
		{"put", "k", "tab\there"},
		{"put", "k", "é"},
	} {
		if got, err := FormatSimpleLine(bad[0], bad[1:]...); err == nil {
			t.Errorf("FormatSimpleLine(%q) = %q, want an error", bad, got)
		}
	}
	// What Format writes, Parse reads back.
	line, _ := FormatSimpleLine("x", "b", "2", "a", "1")
	l, err := ParseSimpleLine(line)
	if err != nil || l.Cmd != "x" || !reflect.DeepEqual(l.Fields, []Field{{"b", "2"}, {"a", "1"}}) {
		t.Errorf("round trip: %+v %v", l, err)
	}
}

func TestSimpleReader(t *testing.T) {
	in := "cmd=a x=1\ncmd=b\n" + "cmd=c v=" + strings.Repeat("z", 5000) + "\ncmd=d"
	r := NewSimpleReader(strings.NewReader(in))
	for _, want := range []string{"a", "b", "c"} {
		l, err := r.ReadLine()
		if err != nil || l.Cmd != want {
			t.Fatalf("ReadLine = %q, %v; want %q", l.Cmd, err, want)
		}
	}
	if _, err := r.ReadLine(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("line cut by EOF: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := NewSimpleReader(strings.NewReader("")).ReadLine(); err != io.EOF {
		t.Errorf("empty stream: %v, want io.EOF", err)
	}
	// A PMI-2 stream: the init line, then frames, through one reader.
	r2 := NewSimpleReader(strings.NewReader("cmd=init pmi_version=2 pmi_subversion=0\n" + "10    cmd=y;a=1;"))
	if l, err := r2.ReadLine(); err != nil || l.Value("pmi_version") != "2" {
		t.Fatalf("init line: %+v, %v", l, err)
	}
	if f, err := r2.ReadFrame(); err != nil || f.Cmd != "y" || f.Value("a") != "1" {
		t.Fatalf("frame after the init line: %+v, %v", f, err)
	}
	long := "cmd=x v=" + strings.Repeat("y", MaxSimpleLine+10) + "\n"
	if _, err := NewSimpleReader(strings.NewReader(long)).ReadLine(); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("over-long line: %v, want ErrLineTooLong", err)
	}
}

func TestParseFrame(t *testing.T) {
	tests := []struct {
		body   string
		cmd    string
		fields []Field
		err    string
	}{
		{body: "cmd=kvs-fence-response;rc=0;", cmd: "kvs-fence-response", fields: []Field{{"rc", "0"}}},
		{body: "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=1;size=4;appnum=-1;debugged=FALSE;pmiverbose=FALSE;",
			cmd: "fullinit-response", fields: []Field{{"rc", "0"}, {"pmi-version", "2"}, {"pmi-subversion", "0"},
				{"rank", "1"}, {"size", "4"}, {"appnum", "-1"}, {"debugged", "FALSE"}, {"pmiverbose", "FALSE"}}},
		{body: "cmd=kvs-get-response;found=TRUE;rc=0;value=a b=c", cmd: "kvs-get-response",
			fields: []Field{{"found", "TRUE"}, {"rc", "0"}, {"value", "a b=c"}}},
		{body: "cmd=x;msg=a;;b;", cmd: "x", fields: []Field{{"msg", "a;b"}}},
		{body: "cmd=x;a=;;b=1;", cmd: "x", fields: []Field{{"a", ""}, {"b", "1"}}},
		{body: "rc=0;cmd=x;", err: "does not start with cmd="},
		{body: "cmd=;", err: "does not start with cmd="},
		{body: "cmd=x;novalue;", err: "not key=value"},
		{body: "cmd=x;a=\n;", err: "not printable"},
		{body: "", err: "empty"},
	}
	for _, tt := range tests {
		f, err := ParseFrame(tt.body)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrProtocol) {
				t.Errorf("ParseFrame(%q) = %v, want an ErrProtocol containing %q", tt.body, err, tt.err)
			}
			continue
		}
		if err != nil || f.Cmd != tt.cmd || !reflect.DeepEqual(f.Fields, tt.fields) {
			t.Errorf("ParseFrame(%q) = %q %v, %v; want %q %v", tt.body, f.Cmd, f.Fields, err, tt.cmd, tt.fields)
		}
	}
}

func TestFormatAndReadFrame(t *testing.T) {
	got, err := FormatFrame("fullinit", "pmijobid", "12.0", "pmirank", "3", "threaded", "FALSE")
	want := "52    cmd=fullinit;pmijobid=12.0;pmirank=3;threaded=FALSE;"
	if err != nil || got != want {
		t.Fatalf("FormatFrame = %q, %v; want %q", got, err, want)
	}
	for _, bad := range [][]string{{"abort", "msg", "a;b"}, {"abort", "msg", ""}, {"abort", "m sg", "x"}, {"x", "k"}} {
		if got, err := FormatFrame(bad[0], bad[1:]...); err == nil {
			t.Errorf("FormatFrame(%q) = %q, want an error", bad, got)
		}
	}
	// Both paddings of the length, a frame right after another, and the errors.
	stream := got + "    20cmd=x;msg=two words;" + "000010cmd=y;a=1;"
	r := bytes.NewReader([]byte(stream))
	for _, want := range []string{"fullinit", "x", "y"} {
		f, err := ReadFrame(r)
		if err != nil || f.Cmd != want {
			t.Fatalf("ReadFrame = %q, %v; want %q", f.Cmd, err, want)
		}
	}
	if _, err := ReadFrame(r); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
	for _, bad := range []struct{ in, err string }{
		{"abcdefcmd=x;", "not a decimal"},
		{"0     ", "outside"},
		{"-1    cmd=x;", "not a decimal"},
		{"999999" + "cmd=x;", "outside"},
		{"20    cmd=x;", "unexpected EOF"},
		{"12", "unexpected EOF"},
	} {
		_, err := ReadFrame(strings.NewReader(bad.in))
		if err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("ReadFrame(%q) = %v, want an error containing %q", bad.in, err, bad.err)
		}
	}
}

func FuzzParseSimpleLine(f *testing.F) {
	for _, s := range []string{
		"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
		"cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024",
		"cmd=get_result rc=0 msg=success value=(vector,(0,1,3))",
		`cmd=abort exitcode=1 message=a\ b`,
		"cmd=get_result rc=-1 found=FALSE msg=key_not_found",
		"cmd=set size=4", "cmd=initack", "mcmd=spawn", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseSimpleLine(s)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not wrap ErrProtocol", err)
			}
			return
		}
		if l.Cmd == "" {
			t.Fatalf("parsed %q without a command", s)
		}
		// A line whose parts Format accepts reads back the same.
		kv := []string{}
		for _, fl := range l.Fields {
			kv = append(kv, fl.Key, fl.Value)
		}
		if line, err := FormatSimpleLine(l.Cmd, kv...); err == nil {
			l2, err := ParseSimpleLine(line)
			if err != nil || l2.Cmd != l.Cmd || !reflect.DeepEqual(l2.Fields, l.Fields) {
				t.Fatalf("round trip of %q: %q -> %+v, %v", s, line, l2, err)
			}
		}
	})
}

func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{
		"52    cmd=fullinit;pmijobid=12.0;pmirank=3;threaded=FALSE;",
		"    28cmd=kvs-fence-response;rc=0;",
		"38    cmd=kvs-get-response;rc=0;found=FALSE;",
		"15    cmd=x;msg=a;;b;", "0     ", "abcdef", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ReadFrame(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrProtocol) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("error %v is neither ErrProtocol nor EOF", err)
			}
			return
		}
		kv := []string{}
		for _, fl := range fr.Fields {
			kv = append(kv, fl.Key, fl.Value)
		}
		if frame, err := FormatFrame(fr.Cmd, kv...); err == nil {
			fr2, err := ReadFrame(strings.NewReader(frame))
			if err != nil || fr2.Cmd != fr.Cmd || !reflect.DeepEqual(fr2.Fields, fr.Fields) {
				t.Fatalf("round trip of %q: %q -> %+v, %v", b, frame, fr2, err)
			}
		}
	})
}
