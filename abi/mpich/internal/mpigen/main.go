package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	inc := flag.String("include", "/usr/include/x86_64-linux-gnu/mpich", "the folder of MPICH's mpi.h and mpi_proto.h")
	dir := flag.String("dir", ".", "the package folder: its do* functions are read, its z* files written")
	doc := flag.String("doc", "", "a Markdown file whose block between the function-list markers is rewritten")
	check := flag.Bool("check", false, "write nothing: fail if a generated file differs from what would be written")
	flag.Parse()
	if err := run(*inc, *dir, *doc, *check); err != nil {
		log.Fatalf("mpigen: %v", err)
	}
}

func run(inc, dir, doc string, check bool) error {
	hdr, err := os.ReadFile(filepath.Join(inc, "mpi.h"))
	if err != nil {
		return err
	}
	protoSrc, err := os.ReadFile(filepath.Join(inc, "mpi_proto.h"))
	if err != nil {
		return err
	}
	ioSrc, err := os.ReadFile(filepath.Join(inc, "mpio.h"))
	if err != nil {
		return err
	}
	consts := parseConsts(string(hdr))
	protos, err := parseProtos(string(protoSrc))
	if err != nil {
		return err
	}
	ioProtos, err := parseProtos(string(ioSrc))
	if err != nil {
		return err
	}
	// mpio.h declares some of mpi_proto.h's functions again (the Info calls): the
	// first declaration stands.
	have := map[string]bool{}
	for _, p := range protos {
		have[p.name] = true
	}
	for _, p := range ioProtos {
		if !have[p.name] {
			protos = append(protos, p)
		}
	}
	impls, err := readImpls(dir)
	if err != nil {
		return err
	}
	inC, err := readC(dir)
	if err != nil {
		return err
	}
	var calls, listed, absent []*proto
	for _, p := range protos {
		switch {
		case impls[implName(p.name)]:
			calls = append(calls, p)
			listed = append(listed, p)
			delete(impls, implName(p.name))
		case inC[p.name]:
			listed = append(listed, p)
		case p.ret != "int":
			return fmt.Errorf("%s returns %s, not an error code: write it by hand in C (support.c)", p.name, p.ret)
		default:
			absent = append(absent, p)
		}
	}
	if len(impls) > 0 {
		var names []string
		for n := range impls {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("functions %s match no prototype of %s", strings.Join(names, ", "), filepath.Join(inc, "mpi_proto.h"))
	}
	files := map[string][]byte{}
	if files["zconst.go"], err = genConsts(consts); err != nil {
		return err
	}
	if files["zcalls.go"], err = genGo(calls); err != nil {
		return err
	}
	tramps, err := parseTrampolines(string(hdr))
	if err != nil {
		return err
	}
	files["zcalls.c"] = genC(calls, absent, tramps)
	files["zcalls.h"] = genH(tramps)
	if doc != "" {
		src, err := os.ReadFile(doc)
		if err != nil {
			return err
		}
		out, err := genDoc(src, listed, absent)
		if err != nil {
			return fmt.Errorf("%s: %v", doc, err)
		}
		files[doc] = out
	}
	for name, b := range files {
		path := name
		if name != doc {
			path = filepath.Join(dir, name)
		}
		if check {
			old, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(old, b) {
				return fmt.Errorf("%s is not what mpigen writes: run `make abi-gen`", path)
			}
			continue
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// A constant is one #define of mpi.h whose value is a number, possibly cast to a handle
// type, or the name of another such constant; or an enumerator with its number.
type constant struct {
	name, typ string
	val       int64
}

var (
	defineRE = regexp.MustCompile(`^#define\s+((?:MPIX?|MPICH)_[A-Za-z0-9_]+)\s+(.+)$`)
	castRE   = regexp.MustCompile(`^\(*\s*\((MPI_[A-Za-z]+)\)\s*\(?\s*(-?[0-9A-Fa-fx]+|MPIX?_[A-Z0-9_]+)\s*\)*$`)
	numRE    = regexp.MustCompile(`^\(?\s*(-?(?:0x[0-9A-Fa-f]+|[0-9]+))\s*\)?$`)
	enumRE   = regexp.MustCompile(`\b(MPIX?_[A-Z0-9_]+)\s*=\s*(-?[0-9]+)\b`)
	aliasRE  = regexp.MustCompile(`^((?:MPIX?|MPICH)_[A-Z0-9_]+)(?:\s*\+\s*([0-9]+))?$`)
)

// handleTypes are mpi.h's handle typedefs of int and the Go types of this package.
var handleTypes = map[string]string{
	"MPI_Comm": "Comm", "MPI_Datatype": "Datatype", "MPI_Op": "Op", "MPI_Group": "Group",
	"MPI_Win": "Win", "MPI_Request": "Request", "MPI_Errhandler": "Errhandler",
	"MPI_Info": "Info", "MPI_Message": "Message", "MPI_Session": "Session",
}

// tPointers are the MPI_T handle typedefs of mpi.h: pointers to opaque structs.
var tPointers = map[string]bool{
	"MPI_T_enum": true, "MPI_T_cvar_handle": true, "MPI_T_pvar_handle": true, "MPI_T_pvar_session": true,
	"MPI_T_event_registration": true, "MPI_T_event_instance": true,
}

// errhOwners are the calls that make a communicator or session: a failure goes to the
// handler that the call passes for the new object (MPI-4.0, 11.2 and 7.4.2).
var errhOwners = map[string]bool{
	"MPI_Session_init": true, "MPI_Comm_create_from_group": true, "MPI_Intercomm_create_from_groups": true,
}

func parseConsts(src string) []constant {
	var out []constant
	seen := map[string]int{}
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "/*"); i >= 0 {
			line = line[:i]
		}
		for _, e := range enumRE.FindAllStringSubmatch(line, -1) {
			if _, dup := seen[e[1]]; !dup && !strings.HasPrefix(strings.TrimSpace(line), "#") {
				v, _ := strconv.ParseInt(e[2], 10, 64)
				seen[e[1]] = len(out)
				out = append(out, constant{name: e[1], val: v})
			}
		}
		m := defineRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || strings.Contains(m[1], "(") {
			continue
		}
		name, val := m[1], strings.TrimSpace(m[2])
		if _, dup := seen[name]; dup {
			continue
		}
		c := constant{name: name}
		ref := ""
		if cm := castRE.FindStringSubmatch(val); cm != nil {
			c.typ = handleTypes[cm[1]]
			if c.typ == "" {
				continue
			}
			val = cm[2]
		}
		if nm := numRE.FindStringSubmatch(val); nm != nil {
			v, err := strconv.ParseInt(nm[1], 0, 64)
			if err != nil {
				continue
			}
			c.val = v
		} else if am := aliasRE.FindStringSubmatch(val); am != nil {
			ref = am[1]
			if am[2] != "" {
				c.val, _ = strconv.ParseInt(am[2], 10, 64)
			}
		} else {
			continue
		}
		if ref != "" {
			i, ok := seen[ref]
			if !ok {
				continue
			}
			c.val += out[i].val
			if c.typ == "" {
				c.typ = out[i].typ
			}
		}
		seen[name] = len(out)
		out = append(out, c)
	}
	return out
}

// goConst is the Go name of a C constant: MPI_COMM_WORLD is mpi_COMM_WORLD.
func goConst(name string) string {
	if rest, ok := strings.CutPrefix(name, "MPIX_"); ok {
		return "mpix_" + rest
	}
	if rest, ok := strings.CutPrefix(name, "MPICH_"); ok {
		return "mpich_" + rest
	}
	return "mpi_" + strings.TrimPrefix(name, "MPI_")
}

func genConsts(cs []constant) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("package mpich\n\n// The constants of MPICH's mpi.h.\nconst (\n")
	for _, c := range cs {
		v := strconv.FormatInt(c.val, 10)
		if c.val > 0xffff {
			v = fmt.Sprintf("%#x", c.val)
		}
		if c.typ != "" {
			if c.val > 0x7fffffff {
				v = fmt.Sprintf("-%#x", -int64(int32(uint32(c.val))))
			}
			fmt.Fprintf(&b, "\t%s %s = %s\n", goConst(c.name), c.typ, v)
		} else {
			fmt.Fprintf(&b, "\t%s = %s\n", goConst(c.name), v)
		}
	}
	b.WriteString(")\n")
	return format.Source(b.Bytes())
}

const header = "// Code generated by mpigen from MPICH's mpi.h and mpi_proto.h; DO NOT EDIT.\n// Regenerate: make abi-gen\n\n//go:build cgo\n\n"

// A proto is one C prototype of mpi_proto.h.
type proto struct {
	ret    string
	name   string
	params []param
	text   string // the prototype, one line
}

// A param is one parameter: its C type with the pointers counted apart.
type param struct {
	name  string
	base  string // the type without const, pointers or brackets
	ptrs  int    // '*'s and '[]'s
	isCon bool
}

var (
	protoRE = regexp.MustCompile(`^(int|double|MPI_Aint|MPI_Fint|MPI_Comm|MPI_Datatype)\s+(MPIX?_[A-Za-z0-9_]+)\((.*)\)\s*;$`)
	attrRE  = regexp.MustCompile(`(?:MPICH|ROMIO)_[A-Z_]+(\([^)]*\))?`)
)

func parseProtos(src string) ([]*proto, error) {
	// Join each prototype onto one line: mpi_proto.h wraps long ones.
	var stmts []string
	var cur strings.Builder
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if cur.Len() == 0 && !protoStart(t) {
			continue
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(t)
		if strings.HasSuffix(t, ";") {
			stmts = append(stmts, cur.String())
			cur.Reset()
		}
	}
	var out []*proto
	seen := map[string]bool{}
	for _, s := range stmts {
		m := protoRE.FindStringSubmatch(attrRE.ReplaceAllString(s, ""))
		if m == nil || seen[m[2]] {
			continue
		}
		seen[m[2]] = true
		p := &proto{ret: m[1], name: m[2]}
		ps := strings.TrimSpace(m[3])
		if strings.Contains(ps, "(") || strings.Contains(ps, "...") {
			continue // function-pointer or variadic parameters: QMPI and MPI_Pcontrol, not covered
		}
		if ps != "void" && ps != "" {
			for _, f := range strings.Split(ps, ",") {
				pa, err := parseParam(f)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", p.name, err)
				}
				p.params = append(p.params, pa)
			}
		}
		p.text = strings.Join(strings.Fields(fmt.Sprintf("%s %s(%s)", m[1], m[2], m[3])), " ")
		out = append(out, p)
	}
	if len(out) < 50 {
		return nil, fmt.Errorf("found %d prototypes: is this MPICH's mpi_proto.h or mpio.h?", len(out))
	}
	return out, nil
}

func protoStart(t string) bool {
	for _, r := range []string{"int MPI", "double MPI", "MPI_Aint MPI", "MPI_Fint MPI", "MPI_Comm MPI", "MPI_Datatype MPI"} {
		if strings.HasPrefix(t, r) {
			return true
		}
	}
	return false
}

var (
	identRE      = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	arrayBoundRE = regexp.MustCompile(`\[[0-9]+\]\s*$`)
)

func parseParam(s string) (param, error) {
	s = strings.TrimSpace(s)
	var p param
	// An array of arrays (int ranges[][3]) is a pointer: its inner bound is dropped.
	s = arrayBoundRE.ReplaceAllString(s, "")
	for strings.HasSuffix(s, "[]") {
		p.ptrs++
		s = strings.TrimSpace(strings.TrimSuffix(s, "[]"))
	}
	ids := identRE.FindAllStringIndex(s, -1)
	if len(ids) < 2 {
		return p, fmt.Errorf("parameter %q has no name", s)
	}
	last := ids[len(ids)-1]
	p.name = s[last[0]:last[1]]
	typ := s[:last[0]]
	p.ptrs += strings.Count(typ, "*")
	typ = strings.ReplaceAll(typ, "*", " ")
	for _, f := range strings.Fields(typ) {
		if f == "const" {
			p.isCon = true
			continue
		}
		if p.base != "" {
			p.base += " "
		}
		p.base += f
	}
	return p, nil
}

// implName is the Go function that implements the C function name: MPI_Comm_rank is
// doCommRank, MPIX_Comm_revoke doXCommRevoke.
func implName(name string) string {
	rest, x := strings.CutPrefix(name, "MPIX_")
	if !x {
		rest = strings.TrimPrefix(name, "MPI_")
	}
	var b strings.Builder
	b.WriteString("do")
	if x {
		b.WriteString("X")
	}
	for _, part := range strings.Split(rest, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// readImpls returns the do* functions of the package's hand-written files.
func readImpls(dir string) (map[string]bool, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range names {
		base := filepath.Base(n)
		if strings.HasPrefix(base, "z") || strings.HasSuffix(base, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "do") && len(fd.Name.Name) > 2 && fd.Name.Name[2] >= 'A' && fd.Name.Name[2] <= 'Z' {
				out[fd.Name.Name] = true
			}
		}
	}
	return out, nil
}

// cDefRE matches a PMPI_ function defined in a hand-written C file.
var cDefRE = regexp.MustCompile(`(?m)^(?:int|double|long|void \*)\s*P(MPIX?_[A-Za-z0-9_]+)\(`)

// readC returns the functions that the package's hand-written C files define (MPI_Wtime,
// which stays in C): covered, though mpigen writes nothing for them.
func readC(dir string) (map[string]bool, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.c"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range names {
		if strings.HasPrefix(filepath.Base(n), "z") {
			continue
		}
		src, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		for _, m := range cDefRE.FindAllStringSubmatch(string(src), -1) {
			out[m[1]] = true
		}
	}
	return out, nil
}

// cType is the C type a parameter crosses the cgo boundary as: int, long, double or
// void *. The calling convention sees nothing else of mpi.h's types.
func (p param) cType() string {
	if p.ptrs > 0 || p.base == "MPI_File" || strings.Contains(p.base, "_function") || tPointers[p.base] {
		return "void *"
	}
	switch p.base {
	case "MPI_Aint", "MPI_Count", "MPI_Offset", "long":
		return "long "
	case "double":
		return "double "
	}
	return "int "
}

func (p param) goBoundary() string {
	switch p.cType() {
	case "void *":
		return "unsafe.Pointer"
	case "long ":
		return "C.long"
	case "double ":
		return "C.double"
	}
	return "C.int"
}

// goArg converts the parameter from its boundary type to its implementation's.
func (p param) goArg() string {
	n := goIdent(p.name)
	if p.cType() == "void *" {
		if p.ptrs == 1 {
			switch {
			case p.base == "int" || p.base == "MPI_Fint":
				return "(*int32)(" + n + ")"
			case handleTypes[p.base] != "":
				return "(*" + handleTypes[p.base] + ")(" + n + ")"
			case p.base == "MPI_Status":
				return "statusArg(" + n + ")"
			case p.base == "MPI_Aint" || p.base == "MPI_Count" || p.base == "MPI_Offset":
				return "(*int64)(" + n + ")"
			case p.base == "char":
				return "(*byte)(" + n + ")"
			}
		}
		return n
	}
	switch p.base {
	case "double":
		return "float64(" + n + ")"
	}
	if t := handleTypes[p.base]; t != "" {
		return t + "(" + n + ")"
	}
	return "int(" + n + ")"
}

var goKeywords = map[string]bool{"type": true, "func": true, "range": true, "map": true, "var": true, "len": true, "string": true}

func goIdent(n string) string {
	if goKeywords[n] {
		return n + "_"
	}
	return n
}

// owner is the parameter whose error handler a failure of the call goes to: the first
// file, else the first communicator, else the first window, else the first
// MPI_Session, else (errhOwners) the handler passed for the new object; "" is the
// world's. A call of MPI-IO without a file parameter (MPI_File_open, MPI_File_delete)
// has "MPI_File:nil": MPI_FILE_NULL's handler, as MPI specifies. An MPI_T call has no
// handler: "MPI_T" says it returns its error class.
func (p *proto) owner() string {
	if strings.HasPrefix(p.name, "MPI_T_") {
		return "MPI_T"
	}
	for _, pa := range p.params {
		if pa.base == "MPI_File" && pa.ptrs == 0 {
			return "MPI_File:" + goIdent(pa.name)
		}
	}
	if strings.HasPrefix(p.name, "MPI_File_") {
		return "MPI_File:nil"
	}
	if errhOwners[p.name] {
		for _, pa := range p.params {
			if pa.base == "MPI_Errhandler" && pa.ptrs == 0 {
				return "MPI_Errhandler:" + goIdent(pa.name)
			}
		}
	}
	for _, kind := range []string{"MPI_Comm", "MPI_Win", "MPI_Session"} {
		for _, pa := range p.params {
			if pa.base == kind && pa.ptrs == 0 {
				return kind + ":" + goIdent(pa.name)
			}
		}
	}
	return ""
}

func fnConst(name string) string { return "fn" + strings.TrimPrefix(implName(name), "do") }

func genGo(calls []*proto) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	// Some do* functions fail for every argument: those on an object kind that gorma
	// has none of (MPI_T events, performance variables), whose every handle is invalid.
	b.WriteString("//lint:file-ignore SA4023 a call on an object kind that gorma has none of fails for every argument\n\n")
	b.WriteString("package mpich\n\n// #include <stdlib.h>\nimport \"C\"\n\nimport \"unsafe\"\n\n// fnID names a covered function.\ntype fnID uint16\n\n")
	b.WriteString("// The covered functions, in mpi_proto.h's order.\nconst (\n")
	for i, p := range calls {
		if i == 0 {
			fmt.Fprintf(&b, "\t%s fnID = iota\n", fnConst(p.name))
		} else {
			fmt.Fprintf(&b, "\t%s\n", fnConst(p.name))
		}
	}
	b.WriteString("\tnumFns\n)\n\n// fnNames are the C names of the covered functions.\nvar fnNames = [numFns]string{\n")
	for _, p := range calls {
		fmt.Fprintf(&b, "\t%s: %q,\n", fnConst(p.name), p.name)
	}
	b.WriteString("}\n")
	for _, p := range calls {
		var ps, args []string
		for _, pa := range p.params {
			ps = append(ps, goIdent(pa.name)+" "+pa.goBoundary())
			args = append(args, pa.goArg())
		}
		call := fmt.Sprintf("%s(%s)", implName(p.name), strings.Join(args, ", "))
		fmt.Fprintf(&b, "\n// %s\n//\n//export gorma_%s\n", p.text, p.name)
		switch p.ret {
		case "int":
			fmt.Fprintf(&b, "func gorma_%s(%s) (rc C.int) {\n", p.name, strings.Join(ps, ", "))
			fmt.Fprintf(&b, "\tdefer catch(%s, &rc)\n", fnConst(p.name))
			own := p.owner()
			switch {
			case strings.HasPrefix(own, "MPI_File:"):
				fmt.Fprintf(&b, "\tif err := %s; err != nil {\n\t\treturn C.int(failFile(%s, %s, err))\n\t}\n\treturn 0\n}\n", call, fnConst(p.name), strings.TrimPrefix(own, "MPI_File:"))
			case strings.HasPrefix(own, "MPI_Comm:"):
				fmt.Fprintf(&b, "\tif err := %s; err != nil {\n\t\treturn C.int(failComm(%s, Comm(%s), err))\n\t}\n\treturn 0\n}\n", call, fnConst(p.name), strings.TrimPrefix(own, "MPI_Comm:"))
			case strings.HasPrefix(own, "MPI_Win:"):
				fmt.Fprintf(&b, "\tif err := %s; err != nil {\n\t\treturn C.int(failWin(%s, Win(%s), err))\n\t}\n\treturn 0\n}\n", call, fnConst(p.name), strings.TrimPrefix(own, "MPI_Win:"))
			case strings.HasPrefix(own, "MPI_Session:"):
				fmt.Fprintf(&b, "\tif err := %s; err != nil {\n\t\treturn C.int(failSession(%s, Session(%s), err))\n\t}\n\treturn 0\n}\n", call, fnConst(p.name), strings.TrimPrefix(own, "MPI_Session:"))
			case strings.HasPrefix(own, "MPI_Errhandler:"):
				fmt.Fprintf(&b, "\tif err := %s; err != nil {\n\t\treturn C.int(failErrh(%s, Errhandler(%s), err))\n\t}\n\treturn 0\n}\n", call, fnConst(p.name), strings.TrimPrefix(own, "MPI_Errhandler:"))
			case own == "MPI_T":
				fmt.Fprintf(&b, "\tif err := %s; err != nil {\n\t\treturn C.int(failT(err))\n\t}\n\treturn 0\n}\n", call)
			default:
				fmt.Fprintf(&b, "\tif err := %s; err != nil {\n\t\treturn C.int(failComm(%s, mpi_COMM_WORLD, err))\n\t}\n\treturn 0\n}\n", call, fnConst(p.name))
			}
		case "double":
			fmt.Fprintf(&b, "func gorma_%s(%s) C.double {\n\treturn C.double(%s)\n}\n", p.name, strings.Join(ps, ", "), call)
		case "MPI_Aint":
			fmt.Fprintf(&b, "func gorma_%s(%s) C.long {\n\treturn C.long(%s)\n}\n", p.name, strings.Join(ps, ", "), call)
		default:
			fmt.Fprintf(&b, "func gorma_%s(%s) C.int {\n\treturn C.int(%s)\n}\n", p.name, strings.Join(ps, ", "), call)
		}
	}
	return format.Source(b.Bytes())
}

func cRet(ret string) string {
	switch ret {
	case "double":
		return "double"
	case "MPI_Aint":
		return "long"
	}
	return "int"
}

// trampolines are the function types of mpi.h whose values the package calls: a user's
// MPI_Op, error handlers, attribute callbacks and a generalized request's functions.
var trampolines = []string{"MPI_User_function", "MPI_User_function_c", "MPI_Comm_errhandler_function", "MPI_Win_errhandler_function",
	"MPI_File_errhandler_function",
	"MPI_Comm_copy_attr_function", "MPI_Comm_delete_attr_function", "MPI_Type_copy_attr_function",
	"MPI_Type_delete_attr_function", "MPI_Win_copy_attr_function", "MPI_Win_delete_attr_function",
	"MPI_Grequest_query_function", "MPI_Grequest_free_function", "MPI_Grequest_cancel_function",
	"MPIX_Grequest_poll_function", "MPIX_Grequest_wait_function"}

// A trampoline calls a C function pointer of one of mpi.h's function types.
type trampoline struct {
	name, ret string
	params    []param // types only; a variadic tail is left out
	text      string  // the typedef, one line
}

var typedefRE = regexp.MustCompile(`^typedef (void|int) \((MPIX?_[A-Za-z_]+)\)\s*\((.*)\);$`)

// parseTrampolines reads the typedefs of the trampolines' function types from mpi.h.
func parseTrampolines(src string) ([]trampoline, error) {
	var stmts []string
	var cur strings.Builder
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if cur.Len() == 0 && !strings.HasPrefix(t, "typedef void (MPI") && !strings.HasPrefix(t, "typedef int (MPI") {
			continue
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(t)
		if strings.HasSuffix(t, ";") {
			stmts = append(stmts, strings.Join(strings.Fields(cur.String()), " "))
			cur.Reset()
		}
	}
	var out []trampoline
	for _, want := range trampolines {
		found := false
		for _, st := range stmts {
			m := typedefRE.FindStringSubmatch(st)
			if m == nil || m[2] != want {
				continue
			}
			tr := trampoline{name: m[2], ret: m[1], text: st}
			for i, f := range strings.Split(m[3], ",") {
				f = strings.TrimSpace(f)
				if f == "..." {
					break
				}
				tr.params = append(tr.params, param{name: fmt.Sprintf("a%d", i), base: strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(f, "*", ""), "const", "")), ptrs: strings.Count(f, "*")})
			}
			out = append(out, tr)
			found = true
			break
		}
		if !found {
			return nil, fmt.Errorf("no typedef of %s in mpi.h", want)
		}
	}
	return out, nil
}

// signature is the trampoline's C function: gorma_call_NAME(fn, parameters...).
func (t trampoline) signature() string {
	ps := []string{"void *fn"}
	for _, p := range t.params {
		ps = append(ps, p.cType()+p.name)
	}
	return fmt.Sprintf("%s gorma_call_%s(%s)", t.ret, t.name, strings.Join(ps, ", "))
}

func genH(tramps []trampoline) []byte {
	var b bytes.Buffer
	b.WriteString("//go:build cgo\n\n/* Code generated by mpigen from MPICH's mpi.h; DO NOT EDIT.\n * Regenerate: make abi-gen\n *\n")
	b.WriteString(" * The trampolines through which Go calls a C program's functions: a user's MPI_Op,\n * error handlers, attribute callbacks and a generalized request's functions. */\n\n")
	b.WriteString("#ifndef GORMA_ZCALLS_H\n#define GORMA_ZCALLS_H\n\n")
	for _, t := range tramps {
		fmt.Fprintf(&b, "/* %s */\n%s;\n\n", t.text, t.signature())
	}
	b.WriteString("#endif\n")
	return b.Bytes()
}

func genC(calls, absent []*proto, tramps []trampoline) []byte {
	var b bytes.Buffer
	b.WriteString("//go:build cgo\n\n/* Code generated by mpigen from MPICH's mpi.h and mpi_proto.h; DO NOT EDIT.\n * Regenerate: make abi-gen\n *\n")
	b.WriteString(" * Each PMPI_ name is a strong definition that enters Go; each MPI_ name is its\n * weak alias, so that a profiling library may define the MPI_ name and call PMPI_.\n * Handles cross as int, MPI_Aint as long and every pointer as void *: the calling\n * convention sees nothing else of mpi.h's types. */\n\n")
	b.WriteString("#include \"_cgo_export.h\"\n#include \"abi.h\"\n#include \"zcalls.h\"\n")
	for _, t := range tramps {
		var types, args []string
		for _, p := range t.params {
			types = append(types, strings.TrimSpace(p.cType()))
			args = append(args, p.name)
		}
		ret := "return "
		if t.ret == "void" {
			ret = ""
		}
		fmt.Fprintf(&b, "\n/* %s */\n%s\n{\n\t%s((%s (*)(%s))fn)(%s);\n}\n", t.text, t.signature(), ret, t.ret, strings.Join(types, ", "), strings.Join(args, ", "))
	}
	for _, p := range calls {
		var ps, args []string
		for _, pa := range p.params {
			ps = append(ps, pa.cType()+pa.name)
			if pa.cType() == "void *" {
				args = append(args, "(void *)"+pa.name)
			} else {
				args = append(args, pa.name)
			}
		}
		sig := strings.Join(ps, ", ")
		if sig == "" {
			sig = "void"
		}
		rt := cRet(p.ret)
		pname := "P" + p.name
		fmt.Fprintf(&b, "\n/* %s */\n%s %s(%s)\n{\n", p.text, rt, pname, sig)
		if rt == "int" {
			fmt.Fprintf(&b, "\tif (__builtin_expect(gorma_forked, 0))\n\t\treturn gorma_forked_call(%q);\n", p.name)
		}
		fmt.Fprintf(&b, "\treturn gorma_%s(%s);\n}\n", p.name, strings.Join(args, ", "))
		fmt.Fprintf(&b, "%s %s(%s) __attribute__((weak, alias(%q)));\n", rt, p.name, sig, pname)
	}
	b.WriteString("\n/* The functions of mpi.h and mpio.h that gorma does not cover. Each is defined, so a\n * program that names one loads and runs; a call fails with\n * MPI_ERR_UNSUPPORTED_OPERATION through the error handler of its communicator or\n * window, or of MPI_COMM_WORLD. */\n")
	for _, p := range absent {
		var ps []string
		for _, pa := range p.params {
			ps = append(ps, pa.cType()+pa.name)
		}
		sig := strings.Join(ps, ", ")
		if sig == "" {
			sig = "void"
		}
		kind, obj := 0, "0"
		if own := p.owner(); strings.HasPrefix(own, "MPI_Comm:") || strings.HasPrefix(own, "MPI_Win:") {
			kind = 1
			if strings.HasPrefix(own, "MPI_Win:") {
				kind = 2
			}
			obj = own[strings.Index(own, ":")+1:]
			obj = strings.TrimSuffix(obj, "_")
		}
		var unused []string
		for _, pa := range p.params {
			if pa.name != obj || kind == 0 {
				unused = append(unused, "(void)"+pa.name+";")
			}
		}
		pname := "P" + p.name
		fmt.Fprintf(&b, "\n/* %s */\nint %s(%s)\n{\n", p.text, pname, sig)
		if len(unused) > 0 {
			fmt.Fprintf(&b, "\t%s\n", strings.Join(unused, " "))
		}
		fmt.Fprintf(&b, "\tif (__builtin_expect(gorma_forked, 0))\n\t\treturn gorma_forked_call(%q);\n", p.name)
		fmt.Fprintf(&b, "\treturn gorma_absent(%q, %d, %s);\n}\n", p.name, kind, obj)
		fmt.Fprintf(&b, "int %s(%s) __attribute__((weak, alias(%q)));\n", p.name, sig, pname)
	}
	return b.Bytes()
}

const (
	docBegin  = "<!-- mpigen: functions -->\n"
	docAbsent = "<!-- mpigen: absent -->\n"
	docEnd    = "<!-- mpigen: end -->\n"
)

func genDoc(src []byte, calls, absent []*proto) ([]byte, error) {
	s := string(src)
	var b strings.Builder
	fmt.Fprintf(&b, "%d functions, each as `MPI_` and `PMPI_`:\n\n", len(calls))
	for _, p := range calls {
		fmt.Fprintf(&b, "- `%s`\n", p.text)
	}
	s, err := replaceBlock(s, docBegin, b.String())
	if err != nil {
		return nil, err
	}
	// The absent functions, grouped by the word after MPI_: MPI_File_open under File.
	b.Reset()
	fmt.Fprintf(&b, "%d functions:\n\n", len(absent))
	var group string
	var names []string
	flush := func() {
		if len(names) > 0 {
			fmt.Fprintf(&b, "- %s\n", strings.Join(names, ", "))
		}
		names = nil
	}
	for _, p := range absent {
		rest := strings.TrimPrefix(strings.TrimPrefix(p.name, "MPIX_"), "MPI_")
		g, _, _ := strings.Cut(rest, "_")
		if g != group {
			flush()
			group = g
		}
		names = append(names, "`"+p.name+"`")
	}
	flush()
	s, err = replaceBlock(s, docAbsent, b.String())
	return []byte(s), err
}

// replaceBlock replaces the text between begin and the next end marker.
func replaceBlock(s, begin, body string) (string, error) {
	i := strings.Index(s, begin)
	if i < 0 {
		return "", fmt.Errorf("no %q ... %q block", strings.TrimSpace(begin), strings.TrimSpace(docEnd))
	}
	j := strings.Index(s[i:], docEnd)
	if j < 0 {
		return "", fmt.Errorf("no %q after %q", strings.TrimSpace(docEnd), strings.TrimSpace(begin))
	}
	return s[:i+len(begin)] + body + s[i+j:], nil
}
