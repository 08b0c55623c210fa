package window

// Dynamic windows: the attachment directory in the metadata.
const (
	defaultDynSlots = 64
	dynEntryWords   = 8
)

func (w *Win[T]) freeDynamic() {}

// dynSpan resolves an access to a dynamic window.
func (w *Win[T]) dynSpan(op string, t *target[T], disp, n int) (span[T], error) {
	return span[T]{}, werrf(op, t.rank, disp, ErrFlavor, "dynamic windows are not built yet")
}
