package zkmodel

// SetCversion sets the stored cversion (the count of creates) of the node
// at p, so that a test can reach its overflow without two billion creates.
func (m *Model) SetCversion(p string, cversion int32) {
	m.nodes[p].cversion = cversion
}

// StoredCversion is the stored cversion of the node at p.
func (m *Model) StoredCversion(p string) int32 { return m.nodes[p].cversion }

// IsContainer reports whether the node at p is a container.
func (m *Model) IsContainer(p string) bool { return m.nodes[p].owner == containerOwner }

var SequenceSuffix = sequenceSuffix
