package datatype

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// must returns ty, failing the test on err.
func must(t *testing.T) func(Type, error) Type {
	return func(ty Type, err error) Type {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ty
	}
}

func TestLayouts(t *testing.T) {
	tests := []struct {
		name            string
		ty              Type
		err             error
		size, lb, ext   int
		blocks          []Block
		contig1, contig bool // Contig(1), Contig(3)
	}{
		{name: "float64", ty: Of[float64](), size: 8, ext: 8, blocks: []Block{{0, 8}}, contig1: true, contig: true},
		{name: "contiguous merges", ty: must(t)(Contiguous[int32](5)), size: 20, ext: 20, blocks: []Block{{0, 20}}, contig1: true, contig: true},
		{name: "column of 4x3", ty: must(t)(Vector[float64](4, 1, 3)), size: 32, ext: 80,
			blocks: []Block{{0, 8}, {24, 8}, {48, 8}, {72, 8}}},
		{name: "vector stride = blocklen merges", ty: must(t)(Vector[int16](3, 2, 2)), size: 12, ext: 12, blocks: []Block{{0, 12}}, contig1: true, contig: true},
		{name: "hvector", ty: must(t)(Hvector[int32](2, 1, 16)), size: 8, ext: 20, blocks: []Block{{0, 4}, {16, 4}}},
		{name: "indexed keeps order", ty: must(t)(Indexed[uint8]([]int{1, 2}, []int{5, 0})), size: 3, ext: 6,
			blocks: []Block{{5, 1}, {0, 2}}},
		{name: "indexed block", ty: must(t)(IndexedBlock[int64](1, []int{0, 2})), size: 16, ext: 24, blocks: []Block{{0, 8}, {16, 8}}},
		{name: "hindexed block", ty: must(t)(HindexedBlock[int64](1, []int{8, 0})), size: 16, ext: 16, blocks: []Block{{8, 8}, {0, 8}}},
		{name: "subarray C 2x2 of 4x4 at (1,1)", ty: must(t)(Subarray[uint8]([]int{4, 4}, []int{2, 2}, []int{1, 1}, OrderC)),
			size: 4, ext: 16, blocks: []Block{{5, 2}, {9, 2}}, contig1: false},
		{name: "subarray Fortran 2x1 of 3x2 at (1,1)", ty: must(t)(Subarray[uint8]([]int{3, 2}, []int{2, 1}, []int{1, 1}, OrderFortran)),
			size: 2, ext: 6, blocks: []Block{{4, 2}}, contig1: true},
		{name: "resized column", ty: must(t)(must(t)(Vector[float64](2, 1, 3)).Resized(0, 8)), size: 16, ext: 8,
			blocks: []Block{{0, 8}, {24, 8}}},
		{name: "empty vector", ty: must(t)(Vector[float64](0, 1, 3)), contig1: true, contig: true},
		{name: "negative count", ty: Type{}, err: must2(Vector[float64](-1, 1, 3))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err != nil {
				if !errors.Is(tt.err, ErrInvalid) || !strings.Contains(tt.err.Error(), "count -1 is negative") {
					t.Fatalf("error %v, want ErrInvalid naming the count", tt.err)
				}
				return
			}
			ty := tt.ty
			if ty.Size() != tt.size || ty.LB() != tt.lb || ty.Extent() != tt.ext {
				t.Fatalf("%v: want size %d lb %d extent %d", ty, tt.size, tt.lb, tt.ext)
			}
			if !reflect.DeepEqual(ty.Blocks(), tt.blocks) && !(len(tt.blocks) == 0 && ty.NumBlocks() == 0) {
				t.Fatalf("blocks %v, want %v", ty.Blocks(), tt.blocks)
			}
			if _, _, ok := ty.Contig(1); ok != tt.contig1 {
				t.Errorf("Contig(1) = %v, want %v", ok, tt.contig1)
			}
			if _, _, ok := ty.Contig(3); ok != tt.contig {
				t.Errorf("Contig(3) = %v, want %v", ok, tt.contig)
			}
		})
	}
}

func must2(_ Type, err error) error { return err }

func TestErrors(t *testing.T) {
	f64 := Of[float64]()
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"negative block length", must2(f64.Vector(2, -1, 3)), "block length -1 is negative"},
		{"indexed lengths", must2(f64.Indexed([]int{1}, []int{0, 1})), "1 block lengths but 2 displacements"},
		{"indexed negative block", must2(f64.Indexed([]int{1, -2}, []int{0, 1})), "block 1: length -2"},
		{"subarray start", must2(f64.Subarray([]int{4}, []int{2}, []int{3}, OrderC)), "dimension 0: size 4, subsize 2, start 3"},
		{"subarray dims", must2(f64.Subarray([]int{4, 4}, []int{2}, []int{0, 0}, OrderC)), "2 sizes, 1 subsizes and 2 starts"},
		{"subarray order", must2(f64.Subarray([]int{4}, []int{2}, []int{0}, Order(7))), "order 7"},
		{"resized", must2(f64.Resized(1<<49, 1<<49+1)), "beyond ±2^50"},
		{"struct count", must2(Struct([]Field{{0, -1, f64}})), "field 0: count -1"},
		{"huge", must2(f64.Contiguous(1 << 49)), "exceed 2^50"},
		{"too many blocks", must2(Vector[uint8](MaxBlocks+1, 1, 2)), "MaxBlocks"},
	}
	for _, c := range cases {
		if !errors.Is(c.err, ErrInvalid) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalid containing %q", c.name, c.err, c.want)
		}
	}
}

func TestPackErrors(t *testing.T) {
	col := must(t)(Vector[float64](3, 1, 4)) // reaches element 8
	m := make([]float64, 12)
	packed := make([]byte, 24)
	if _, err := Pack(packed, m[:8], 1, col); !errors.Is(err, ErrRange) || !strings.Contains(err.Error(), "reach byte 72, but the buffer holds 64 bytes") {
		t.Errorf("short source: %v", err)
	}
	if _, err := Pack(packed[:23], m, 1, col); !errors.Is(err, ErrRange) || !strings.Contains(err.Error(), "packed buffer holds 23") {
		t.Errorf("short destination: %v", err)
	}
	if _, err := Pack(packed, m, -1, col); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative count: %v", err)
	}
	back := must(t)(Hindexed[float64]([]int{1}, []int{-8}))
	if _, err := Unpack(m, packed, 1, back); !errors.Is(err, ErrRange) || !strings.Contains(err.Error(), "before the buffer's start") {
		t.Errorf("negative offset: %v", err)
	}
	if _, err := Pack(packed, []*int{nil}, 1, Of[uint8]()); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "holds pointers") {
		t.Errorf("pointer element: %v", err)
	}
	if m[0] != 0 {
		t.Error("a failed unpack wrote its destination")
	}
}

type particle struct {
	ID   int32
	Pos  [3]float64
	Mass float32
	Tag  uint8
}

func TestFromStruct(t *testing.T) {
	ty := must(t)(FromStruct[particle]())
	var p particle
	want := []Block{{0, 4}, {int(unsafe.Offsetof(p.Pos)), 24 + 4 + 1}}
	if !reflect.DeepEqual(ty.Blocks(), want) || ty.Size() != 33 || ty.Extent() != int(unsafe.Sizeof(p)) {
		t.Fatalf("%v blocks %v, want %v, size 33, extent %d", ty, ty.Blocks(), want, unsafe.Sizeof(p))
	}
	ps := []particle{{1, [3]float64{1, 2, 3}, 4, 5}, {6, [3]float64{7, 8, 9}, 10, 11}}
	buf := make([]byte, 2*ty.Size())
	if _, err := Pack(buf, ps, 2, ty); err != nil {
		t.Fatal(err)
	}
	out := make([]particle, 2)
	if _, err := Unpack(out, buf, 2, ty); err != nil || !reflect.DeepEqual(out, ps) {
		t.Fatalf("round trip %v, %v; want %v", out, err, ps)
	}
	pos := must(t)(FromStruct[particle]("Pos"))
	if pos.Size() != 24 || pos.Extent() != int(unsafe.Sizeof(p)) {
		t.Fatalf("Pos only: %v", pos)
	}
	if _, err := FromStruct[particle]("Nope"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `no top-level field "Nope"`) {
		t.Errorf("unknown field: %v", err)
	}
	type bad struct {
		A float64
		B []int64
	}
	if _, err := FromStruct[bad](); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "field bad.B has type []int64") {
		t.Errorf("slice field: %v", err)
	}
	if _, err := FromStruct[int64](); !errors.Is(err, ErrInvalid) {
		t.Errorf("non-struct: %v", err)
	}
}

// TestPackAllocs pins that Pack and Unpack of a strided layout allocate nothing.
func TestPackAllocs(t *testing.T) {
	col := must(t)(Vector[float64](64, 1, 64))
	m := make([]float64, 64*64)
	buf := make([]byte, col.Size())
	n := testing.AllocsPerRun(100, func() {
		if _, err := Pack(buf, m, 1, col); err != nil {
			t.Fatal(err)
		}
		if _, err := Unpack(m, buf, 1, col); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("Pack+Unpack allocate %v times, want 0", n)
	}
}

// TestHugeEmpty builds layouts of a huge count but no data, or huge repetitions of a
// contiguous run: each must come back without walking its count.
func TestHugeEmpty(t *testing.T) {
	empty := must(t)(Of[float64]().Resized(0, 8))
	empty.blocks, empty.size, empty.tub = nil, 0, 0 // an extent of 8 with no data
	for name, ty := range map[string]Type{
		"vector of empty blocks": must(t)(Vector[float64](1<<40, 0, 3)),
		"contiguous of no data":  must(t)(empty.Contiguous(1 << 40)),
		"vector of no data":      must(t)(empty.Vector(1<<40, 2, 3)),
		"subarray of no data":    must(t)(empty.Subarray([]int{1 << 20, 1 << 20}, []int{1 << 20, 1 << 20}, []int{0, 0}, OrderC)),
		"contiguous bytes":       must(t)(Contiguous[uint8](1 << 40)),
		"subarray of whole rows": must(t)(Subarray[uint8]([]int{4, 1 << 20, 1 << 20}, []int{1, 1 << 20, 1 << 20}, []int{2, 0, 0}, OrderC)),
	} {
		if ty.NumBlocks() > 1 {
			t.Errorf("%s: %v", name, ty)
		}
	}
	v := must(t)(empty.Vector(1<<20, 2, 3)) // bounds: copies at 0 .. (2^20-1)*24, each 2 extents long
	if v.LB() != 0 || v.UB() != (1<<20-1)*24+16 || v.Size() != 0 {
		t.Errorf("vector of no data: %v, want lb 0, ub %d", v, (1<<20-1)*24+16)
	}
}

// TestNegativeExtent checks the bounds of types built over a negative extent against
// MPICH's datatype/lbub.c (4 bytes resized to lb 6, extent -9) and moves count copies of
// one: the copies run backwards, each extent bytes below the one before.
func TestNegativeExtent(t *testing.T) {
	four := must(t)(Contiguous[uint8](4))
	neg := must(t)(four.Resized(6, -9))
	cases := []struct {
		name                    string
		ty                      Type
		size, lb, ext, tlb, tex int
	}{
		{"resized", neg, 4, 6, -9, 0, 4},
		{"contiguous(3)", must(t)(neg.Contiguous(3)), 12, -12, 9, -18, 22},
		{"vector(3,4,5)", must(t)(neg.Vector(3, 4, 5)), 48, -111, 108, -117, 121},
		{"vector(3,4,-5)", must(t)(neg.Vector(3, 4, -5)), 48, -21, 108, -27, 121},
		{"hvector(2,2,100)", must(t)(neg.Hvector(2, 2, 100)), 16, -3, 100, -9, 113},
		{"indexed([2],[1])", must(t)(neg.Indexed([]int{2}, []int{1})), 8, -12, 0, -18, 13},
		{"struct of 3 at 40", must(t)(Struct([]Field{{40, 3, neg}})), 12, 28, 9, 22, 22},
	}
	for _, c := range cases {
		ty := c.ty
		if ty.Size() != c.size || ty.LB() != c.lb || ty.Extent() != c.ext || ty.TrueLB() != c.tlb || ty.TrueExtent() != c.tex {
			t.Errorf("%s: size %d lb %d extent %d true lb %d true extent %d; want %d %d %d %d %d", c.name,
				ty.Size(), ty.LB(), ty.Extent(), ty.TrueLB(), ty.TrueExtent(), c.size, c.lb, c.ext, c.tlb, c.tex)
		}
	}
	// Three copies of neg lie at 18, 9 and 0 when placed at 18: Span covers [0, 22).
	at18 := must(t)(Struct([]Field{{18, 1, neg}}))
	if lo, hi, err := at18.Span(3); err != nil || lo != 0 || hi != 22 {
		t.Fatalf("span of 3 copies: [%d, %d) %v, want [0, 22)", lo, hi, err)
	}
	src := make([]byte, 22)
	for i := range src {
		src[i] = byte(i)
	}
	packed := make([]byte, 12)
	if n, err := Pack(packed, src, 3, at18); err != nil || n != 12 {
		t.Fatalf("pack: %d %v", n, err)
	}
	want := []byte{18, 19, 20, 21, 9, 10, 11, 12, 0, 1, 2, 3}
	if !bytes.Equal(packed, want) {
		t.Fatalf("pack of 3 copies: %v, want %v", packed, want)
	}
	if _, err := Pack(make([]byte, 16), src, 4, at18); !errors.Is(err, ErrRange) || !strings.Contains(err.Error(), "byte offset -9") {
		t.Fatalf("pack of 4 copies, the last before the buffer: %v, want ErrRange at -9", err)
	}
	dst := make([]byte, 22)
	if _, err := UnpackPrefix(dst, want[:6], 3, at18); err != nil {
		t.Fatal(err)
	}
	wantDst := make([]byte, 22)
	copy(wantDst[18:], want[:4])
	copy(wantDst[9:], want[4:6])
	if !bytes.Equal(dst, wantDst) {
		t.Fatalf("unpack prefix: %v, want %v", dst, wantDst)
	}
}

// TestLaid checks Over's errors against Check's, and that a Laid packs and unpacks as the
// package's Pack and UnpackPrefix do, refusing a short packed buffer or a long message.
func TestLaid(t *testing.T) {
	col := must(t)(Vector[float64](3, 1, 4)) // reaches element 8
	m := make([]float64, 12)
	for i := range m {
		m[i] = float64(i)
	}
	b := noErr[[]byte](t)(AsBytes(m))
	if _, err := col.Over("layout over buf", b[:64], 1); err == nil || err.Error() != col.Check("layout over buf", 1, 64).Error() {
		t.Fatalf("over a short buffer: %v, want Check's error", err)
	}
	if _, err := col.Over("layout over buf", b, -1); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "count -1 is negative") {
		t.Fatalf("over -1 copies: %v", err)
	}
	l := noErr[Laid](t)(col.Over("layout over buf", b, 1))
	if _, ok := l.Contig(); ok || l.Size() != 24 {
		t.Fatalf("a column: contiguous %v, size %d", ok, l.Size())
	}
	got, want := make([]byte, 24), make([]byte, 24)
	noErr[int](t)(Pack(want, m, 1, col))
	if n, err := l.Pack(got); err != nil || n != 24 || !bytes.Equal(got, want) {
		t.Fatalf("laid pack: %d %v %v, want %v", n, err, got, want)
	}
	if _, err := l.Pack(got[:23]); !errors.Is(err, ErrRange) || !strings.Contains(err.Error(), "packed buffer holds 23") {
		t.Fatalf("laid pack into 23 bytes: %v", err)
	}
	if _, err := l.UnpackPrefix(make([]byte, 25)); !errors.Is(err, ErrRange) || !strings.Contains(err.Error(), "25 packed bytes") {
		t.Fatalf("laid unpack of 25 bytes: %v", err)
	}
	clear(m)
	if n, err := l.UnpackPrefix(want[:16]); err != nil || n != 16 || m[0] != 0 || m[4] != 4 || m[8] != 0 {
		t.Fatalf("laid unpack of 2 elements: %d %v %v", n, err, m)
	}
	row := must(t)(Contiguous[float64](4))
	if run, ok := noErr[Laid](t)(row.Over("row", b, 2)).Contig(); !ok || len(run) != 64 || &run[0] != &b[0] {
		t.Fatalf("2 rows: contiguous %v, %d bytes", ok, len(run))
	}
	if allocs := testing.AllocsPerRun(100, func() {
		l, _ := col.Over("layout over buf", b, 1)
		_, _ = l.Pack(got)
		_, _ = l.UnpackPrefix(got)
	}); allocs != 0 {
		t.Fatalf("over, pack and unpack: %v allocations, want 0", allocs)
	}
}

func noErr[V any](t *testing.T) func(V, error) V {
	return func(v V, err error) V {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestRuns checks the runs of common layouts: a column is one run, count columns of a
// matrix continue it, and irregular blocks stay apart.
func TestRuns(t *testing.T) {
	m := make([]byte, 1<<12)
	col := must(t)(Vector[float64](8, 1, 6)) // 8 rows of 6
	rowPair := must(t)(Indexed[uint8]([]int{2, 3}, []int{0, 10}))
	cases := []struct {
		name  string
		ty    Type
		count int
		want  []Run
	}{
		{"column", col, 1, []Run{{0, 8, 8, 48}}},
		{"3 columns resized to one element", must(t)(col.Resized(0, 8)), 3, []Run{{0, 8, 8, 48}, {8, 8, 8, 48}, {16, 8, 8, 48}}},
		{"2 whole column blocks", must(t)(Vector[float64](2, 1, 6)), 2, []Run{{0, 8, 2, 48}, {56, 8, 2, 48}}},
		{"irregular", rowPair, 2, []Run{{0, 2, 1, 0}, {10, 3, 1, 0}, {13, 2, 1, 0}, {23, 3, 1, 0}}},
		{"one element at a time", Of[int32](), 3, []Run{{0, 12, 1, 0}}},
		{"elements one apart", must(t)(Of[int32]().Resized(0, 8)), 3, []Run{{0, 4, 3, 8}}},
		{"empty", Type{}, 3, nil},
	}
	for _, c := range cases {
		l := noErr[Laid](t)(c.ty.Over("runs", m, c.count))
		got, ok := l.Runs(nil, 100)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: runs %v (ok %v), want %v", c.name, got, ok, c.want)
		}
	}
}
