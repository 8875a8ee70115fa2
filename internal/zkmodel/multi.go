package zkmodel

// multi applies ops as one transaction with one zxid, all or nothing, the
// way the server does: it prepares the operations in order against the
// state the earlier ones leave (a multi may create a node and then a child
// of it), stops at the first that fails, and then applies either all of
// them or none. Watches fire only for a multi that succeeded, per operation
// in order, after the whole multi is applied.
//
// The results follow the server's MultiResponse: on success one result per
// operation (a create's path, a setData's stat); on failure error results
// only — OK for each operation before the failing one, the failing one's
// code, RuntimeInconsistency for each after it. code is the first code that
// is not OK, what go-zookeeper's Multi returns as its error.
//
// Inside a multi the server decides a create's kind by its mode alone
// (Op.Create takes its opcode from the flags): a Container mode makes a
// container, even sent as a plain create (go-zookeeper's Multi always sends
// plain creates; it then cannot decode the createContainer result and
// returns ErrAPIError, although the multi was applied), and any other mode
// a plain create, even sent as createContainer.
//
// An operation a multi cannot carry (anything but create, createContainer,
// delete, setData and check) fails the whole request with MarshallingError
// and no results, as the server fails to decode it; the zxid is spent all
// the same.
func (m *Model) multi(owner SessionID, ops []Request) (results []OpResult, code Code) {
	t := m.begin()
	t.by = owner
	for _, op := range ops {
		if !op.Op.write() || op.Op == OpMulti {
			return nil, MarshallingError
		}
	}
	results = make([]OpResult, len(ops))
	failed := -1
	for i, op := range ops {
		if op.Op == OpCreate || op.Op == OpCreateContainer {
			op.Op = OpCreate
			if op.Mode == Container {
				op.Op = OpCreateContainer
			}
		}
		if failed >= 0 {
			results[i] = OpResult{Op: op.Op, Err: RuntimeInconsistency}
			continue
		}
		results[i] = t.write(owner, op)
		if results[i].Err != OK {
			failed = i
		}
	}
	if failed < 0 {
		t.commit()
		return results, OK
	}
	t.rollback()
	for i := range failed {
		results[i] = OpResult{Op: results[i].Op, Err: OK}
	}
	results[failed] = OpResult{Op: results[failed].Op, Err: results[failed].Err}
	return results, results[failed].Err
}
