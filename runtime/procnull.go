package runtime

// ProcNull is the rank of no process (MPI_PROC_NULL). A send to it and a receive or probe
// from it complete at once; the receive's Status has Source ProcNull, Tag AnyTag, Count 0.
const ProcNull = -3

// nullStatus is the Status of a receive or probe from ProcNull.
func nullStatus() Status { return Status{Source: ProcNull, Tag: AnyTag} }

// nullCheck validates a call on ProcNull: the job is usable and tag is a tag (AnyTag
// allowed when recv).
func nullCheck(w *World, tag int, recv bool) error {
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nullArgsLocked(tag, recv)
}

func (e *engine) nullArgsLocked(tag int, recv bool) error {
	if err := e.checkLocked(); err != nil {
		return err
	}
	if (tag < 0 || tag > MaxTag) && !(recv && tag == AnyTag) {
		return invalidf("tag %d out of range [0, %d]", tag, MaxTag)
	}
	return nil
}

// nullRequestLocked starts r as an operation on ProcNull of kind (reqSend or reqRecv):
// it completes at once.
func (e *engine) nullRequestLocked(r *Request, kind reqKind, tag int) error {
	if err := e.nullArgsLocked(tag, kind == reqRecv); err != nil {
		return err
	}
	if err := r.resetLocked(e); err != nil {
		return err
	}
	r.kind, r.peer, r.tag = kind, ProcNull, tag
	if kind == reqRecv {
		r.status = nullStatus()
	}
	e.completeLocked(r, nil)
	return nil
}
