package window

// Dynamic windows: the attachment directory in the metadata.
const (
	defaultDynSlots = 64
	dynEntryWords   = 8
)

func (w *Win[T]) freeDynamic() {}
