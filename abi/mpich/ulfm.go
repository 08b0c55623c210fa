//go:build cgo

package mpich

// The ULFM calls of MPICH's mpi.h (MPIX_Comm_*), on the runtime's fault tolerance. They
// recover only in a job started with golaunch --ft; elsewhere a failed rank ends the job.

// doXCommRevoke is MPIX_Comm_revoke.
func doXCommRevoke(c Comm) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	return w.Revoke()
}

// doXCommShrink is MPIX_Comm_shrink: a communicator of c's ranks that have not failed.
func doXCommShrink(c Comm, out *Comm) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	w, err := co.w.Shrink(bg)
	if err != nil {
		return err
	}
	newComm(w, co, out)
	return nil
}

// doXCommFailureAck is MPIX_Comm_failure_ack: every failure this rank knows of is
// acknowledged.
func doXCommFailureAck(c Comm) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	w.AckFailed(w.GetFailed().Size())
	return nil
}

// doXCommFailureGetAcked is MPIX_Comm_failure_get_acked: the group of the acknowledged
// failures.
func doXCommFailureGetAcked(c Comm, out *Group) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	n := w.AckFailed(0)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	g, err := w.GetFailed().Incl(idx)
	if err != nil {
		return err
	}
	if g.Size() == 0 {
		*out = mpi_GROUP_EMPTY
		return nil
	}
	*out = Group(groups.add(g))
	return nil
}

// doXCommAgree is MPIX_Comm_agree: the bitwise AND of flag over the ranks that have not
// failed. A failure not every rank acknowledged gives MPIX_ERR_PROC_FAILED, with the
// value still agreed.
func doXCommAgree(c Comm, flag *int32) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	v, err := w.Agree(bg, int(*flag))
	*flag = int32(v)
	return err
}
