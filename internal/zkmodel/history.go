package zkmodel

import "slices"

// Life is one node's life on the server: from the transaction that created
// it to the one that deleted it. A checker holds what clients were told to
// it: a node a client's answer rests on must have lived at some instant of
// the call, whatever the client saw or missed.
type Life struct {
	Path string
	// Owner is the ephemeral's session, 0 for any other node.
	Owner SessionID
	// Created is the zxid of the create; Deleted the zxid of the delete, 0
	// while the node lives. The node existed in the states the server was
	// in after each zxid z with Created ≤ z < Deleted.
	Created, Deleted int64
	// DeletedBy is the session whose delete removed it; 0 for a deletion
	// of no client's request (its session's end, the container manager).
	DeletedBy SessionID
	// Ended: deleted by its session's close or expiry.
	Ended bool
}

// Alive reports whether the node existed in some state of the server
// between the one after zxid from and the one after zxid to, both
// included.
func (l Life) Alive(from, to int64) bool {
	// A node a multi created and deleted again never existed in any state.
	return l.Created <= to && (l.Deleted == 0 || l.Deleted > from && l.Deleted > l.Created)
}

// Lives returns the lives of every child parent ever had, in the order
// they were created, the living ones included; across every node that was
// ever at parent (a container reaped and made again keeps one history).
func (m *Model) Lives(parent string) []Life {
	return slices.Clone(m.lives[parent])
}

// lifeChange is a create or delete a transaction made, recorded in the
// history only once it commits.
type lifeChange struct {
	path   string
	owner  int64
	delete bool
}

// record enters a committed transaction's creates and deletes in the
// history.
func (t *txn) record() {
	m := t.m
	for _, ch := range t.lives {
		parent, _, _ := splitPath(ch.path)
		if !ch.delete {
			owner := SessionID(0)
			if ch.owner != containerOwner {
				owner = SessionID(ch.owner)
			}
			m.living[ch.path] = len(m.lives[parent])
			m.lives[parent] = append(m.lives[parent], Life{Path: ch.path, Owner: owner, Created: t.zxid})
			continue
		}
		i, ok := m.living[ch.path]
		if !ok {
			continue
		}
		delete(m.living, ch.path)
		l := &m.lives[parent][i]
		l.Deleted, l.DeletedBy, l.Ended = t.zxid, t.by, t.ending
	}
	t.lives = nil
}
