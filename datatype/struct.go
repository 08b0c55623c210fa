package datatype

import (
	"reflect"
	"sync"
)

// Field is one entry of Struct: Count copies of Type at byte offset Off.
type Field struct {
	Off   int
	Count int
	Type  Type
}

// Struct returns the layout of fields, packed in the order given (MPI_Type_create_struct).
// Its bounds are the fields' lowest lower bound and highest upper bound, with no padding
// added for alignment: Resized sets the extent of an array element (FromStruct does so).
func Struct(fields []Field) (Type, error) {
	const op = "struct"
	b := builder{op: op}
	for i, f := range fields {
		if f.Count < 0 {
			return Type{}, invalidf(op, "field %d: count %d is negative", i, f.Count)
		}
		b.add(f.Off, f.Count, f.Type)
	}
	return b.done()
}

// FromStruct returns the layout of the Go struct type S: every field, or only the named
// top-level fields when names are given, at its offset in S, in declaration order, with
// extent unsafe.Sizeof(S) so that count copies are a []S. Fields must be fixed-size
// numbers (Elem), arrays of them, or structs of them: a bool, int, uint, uintptr, pointer,
// slice, string, map, interface, channel or function field is an ErrInvalid error naming it.
func FromStruct[S any](names ...string) (Type, error) {
	const op = "from struct"
	rt := reflect.TypeFor[S]()
	if rt.Kind() != reflect.Struct {
		return Type{}, invalidf(op, "%v is not a struct type", rt)
	}
	want := map[string]bool{}
	for _, n := range names {
		f, ok := rt.FieldByName(n)
		if !ok || len(f.Index) != 1 {
			return Type{}, invalidf(op, "%v has no top-level field %q", rt, n)
		}
		want[n] = true
	}
	b := builder{op: op}
	for i := range rt.NumField() {
		f := rt.Field(i)
		if len(names) > 0 && !want[f.Name] {
			continue
		}
		ft, err := typeOf(op, f.Type, rt.Name()+"."+f.Name)
		if err != nil {
			return Type{}, err
		}
		b.add(int(f.Offset), 1, ft)
	}
	t, err := b.done()
	if err != nil {
		return Type{}, err
	}
	return t.Resized(0, int(rt.Size()))
}

// typeOf returns the layout of a value of Go type rt, named path in errors.
func typeOf(op string, rt reflect.Type, path string) (Type, error) {
	switch rt.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		n := int(rt.Size())
		return Type{blocks: []Block{{0, n}}, size: n, ub: n, tub: n}, nil
	case reflect.Array:
		et, err := typeOf(op, rt.Elem(), path+"[]")
		if err != nil {
			return Type{}, err
		}
		return et.Contiguous(rt.Len())
	case reflect.Struct:
		b := builder{op: op}
		for i := range rt.NumField() {
			f := rt.Field(i)
			ft, err := typeOf(op, f.Type, path+"."+f.Name)
			if err != nil {
				return Type{}, err
			}
			b.add(int(f.Offset), 1, ft)
		}
		t, err := b.done()
		if err != nil {
			return Type{}, err
		}
		return t.Resized(0, int(rt.Size()))
	}
	return Type{}, invalidf(op, "field %s has type %v: want fixed-size numbers, arrays or structs of them (int64 for int)", path, rt)
}

// plainTypes caches, per Go type, whether its values hold no pointers.
var plainTypes sync.Map // reflect.Type -> bool

// plain reports whether values of T hold no pointers, so that their memory may be read
// and written as bytes.
func plain[T any]() bool {
	// The numbers every typed call carries answer without reflect and the cache's map
	// (`golaunch -n 2 bin/halobench --sizes 256`, against its --manual, measures the fixed
	// cost of a typed call).
	switch any((*T)(nil)).(type) {
	case *float64, *float32, *int, *int8, *int16, *int32, *int64, *uint, *uint8, *uint16,
		*uint32, *uint64, *uintptr, *complex64, *complex128, *bool:
		return true
	}
	rt := reflect.TypeFor[T]()
	if v, ok := plainTypes.Load(rt); ok {
		return v.(bool)
	}
	p := noPointers(rt)
	plainTypes.Store(rt, p)
	return p
}

func noPointers(rt reflect.Type) bool {
	switch rt.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return rt.Len() == 0 || noPointers(rt.Elem())
	case reflect.Struct:
		for i := range rt.NumField() {
			if !noPointers(rt.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
