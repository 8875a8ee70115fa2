package zkmodel

// SetCversion sets the cversion of the node at p, so that a test can reach
// the overflow of a cversion without two billion creates.
func (m *Model) SetCversion(p string, cversion int32) {
	m.nodes[p].cversion = cversion
}

var SequenceSuffix = sequenceSuffix
