package zkmodel

import (
	"bytes"
	"maps"
	"slices"
)

// node is one znode. The tree is a flat map from path to node, as the
// server's DataTree is; each node also keeps its children's names.
type node struct {
	data    []byte
	czxid   int64
	mzxid   int64
	pzxid   int64
	version int32
	// cversion is the count the server stores (StatPersisted): children
	// ever created, never lowered by a delete. Sequential names, the
	// create guard and the container manager read it; clients see another
	// number (see stat).
	cversion int32
	// owner is the stored ephemeralOwner: a session id for an ephemeral,
	// containerOwner for a container, 0 for a persistent node.
	owner    int64
	children map[string]struct{}
}

// stat is the node's stat as a client receives it, which DataNode.copyStat
// derives from the stored one: the cversion is translated from a count of
// creates to a count of changes, 2×cversion − numChildren (every create
// but those of the children still present had its delete), in int32
// arithmetic; the ephemeralOwner of a container is 0.
func (n *node) stat() Stat {
	children := int32(len(n.children))
	st := Stat{
		Czxid: n.czxid, Mzxid: n.mzxid, Pzxid: n.pzxid,
		Version:     n.version,
		Cversion:    2*n.cversion - children,
		DataLength:  int32(len(n.data)),
		NumChildren: children,
	}
	if n.ephemeral() {
		st.EphemeralOwner = n.owner
	}
	return st
}

// ephemeral is the server's EphemeralType.NORMAL: an owner that is a session
// (TTL nodes, the other non-session owners, are not modelled).
func (n *node) ephemeral() bool { return n.owner != 0 && n.owner != containerOwner }

func (n *node) sortedChildren() []string {
	return slices.Sorted(maps.Keys(n.children))
}

// versionMatches is the server's checkAndIncVersion test.
func versionMatches(current, expected int32) bool { return expected == -1 || expected == current }

// txn is one transaction being applied: a write request, a multi, a
// closeSession or a container's deletion. It has one zxid, which the server
// assigns when it prepares the request, so a refused write consumes a zxid as
// well (the server logs it as an error transaction). Changes are applied to
// the tree at once and can be undone (a multi whose later operation fails);
// the watches they trigger fire only at commit, in the order the server
// triggers them.
type txn struct {
	m    *Model
	zxid int64
	// prepCversion is the parents' cversion as the server's
	// PrepRequestProcessor sees it while it prepares this transaction: it
	// names sequential nodes from these values and raises them by one per
	// create without the tree's guard (see createNode). Within a multi the
	// two can part after a cversion reaches math.MaxInt32: prep wraps to
	// math.MinInt32 and names the next node "-2147483648" while the tree's
	// cversion stays put. The server's outstanding changes carry the same
	// view across pipelined requests; the model applies each request before
	// it takes the next, so across requests the view is the tree's.
	prepCversion map[string]int32
	undo         []func()
	triggers     []Event
	// by is the session whose request this is, 0 for none; ending: the
	// close or expiry of a session. lives are the creates and deletes
	// made, entered in the model's history at commit.
	by     SessionID
	ending bool
	lives  []lifeChange
}

func (m *Model) begin() *txn {
	m.zxid++
	return &txn{m: m, zxid: m.zxid}
}

// commit fires the watches the transaction triggered.
func (t *txn) commit() {
	t.record()
	for _, ev := range t.triggers {
		t.m.fire(ev)
	}
	t.triggers = nil
}

// rollback undoes every change, newest first; nothing fires.
func (t *txn) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	t.undo, t.triggers, t.lives = nil, nil, nil
}

func (t *txn) cversion(path string, n *node) int32 {
	if v, ok := t.prepCversion[path]; ok {
		return v
	}
	return n.cversion
}

// create is the server's create and createContainer, checked in the order
// PrepRequestProcessor checks them: the mode, the path's shape, the parent,
// then (with the sequence suffix appended) the full path, an existing node,
// an ephemeral parent.
func (t *txn) create(owner SessionID, req Request) OpResult {
	res := OpResult{Op: req.Op}
	if res.Err = req.Mode.check(); res.Err != OK {
		return res
	}
	parentPath, _, ok := splitPath(req.Path)
	if !ok {
		res.Err = BadArguments
		return res
	}
	parent := t.m.nodes[parentPath]
	if parent == nil {
		res.Err = NoNode
		return res
	}
	cv := t.cversion(parentPath, parent)
	p := req.Path
	if req.Mode.sequential() {
		p += sequenceSuffix(cv)
	}
	switch {
	case !validPath(p):
		res.Err = BadArguments
	case t.m.nodes[p] != nil:
		res.Err = NodeExists
	case parent.ephemeral():
		res.Err = NoChildrenForEphemerals
	}
	if res.Err != OK {
		return res
	}
	var nodeOwner int64
	switch {
	case req.Op == OpCreateContainer:
		nodeOwner = containerOwner
	case req.Mode.ephemeral():
		nodeOwner = int64(owner)
	}
	if t.prepCversion == nil {
		t.prepCversion = make(map[string]int32)
	}
	t.prepCversion[parentPath] = cv + 1
	t.createNode(p, req.Data, nodeOwner, cv+1)
	res.Path = p
	if req.Op == OpCreateContainer {
		res.Stat = t.m.nodes[p].stat()
	}
	return res
}

// createNode is DataTree.createNode. The parent's cversion and pzxid move
// only when the new cversion is greater than the current one, a guard the
// server keeps for replaying its log; so once a cversion reaches
// math.MaxInt32 the parent's cversion and pzxid never change on a create
// again, and the next sequential name repeats "2147483647".
func (t *txn) createNode(p string, data []byte, owner int64, parentCversion int32) {
	m := t.m
	parentPath, name, _ := splitPath(p)
	parent := m.nodes[parentPath]
	oldCversion, oldPzxid := parent.cversion, parent.pzxid
	if parentCversion > parent.cversion {
		parent.cversion, parent.pzxid = parentCversion, t.zxid
	}
	if parent.children == nil {
		parent.children = make(map[string]struct{})
	}
	parent.children[name] = struct{}{}
	n := &node{data: bytes.Clone(data), czxid: t.zxid, mzxid: t.zxid, pzxid: t.zxid, owner: owner}
	m.nodes[p] = n
	m.own(p, owner)
	t.lives = append(t.lives, lifeChange{path: p, owner: owner})
	t.undo = append(t.undo, func() {
		parent.cversion, parent.pzxid = oldCversion, oldPzxid
		delete(parent.children, name)
		delete(m.nodes, p)
		m.disown(p, owner)
	})
	t.triggers = append(t.triggers,
		Event{Type: EventNodeCreated, Path: p},
		Event{Type: EventNodeChildrenChanged, Path: parentPath})
}

// delete is the server's delete, checked in PrepRequestProcessor's order:
// the path's shape and the special paths, the parent, the node, the
// version, the children.
func (t *txn) delete(req Request) OpResult {
	res := OpResult{Op: req.Op}
	parentPath, _, ok := splitPath(req.Path)
	n := t.m.nodes[req.Path]
	switch {
	case !ok || specialPaths[req.Path]:
		res.Err = BadArguments
	case t.m.nodes[parentPath] == nil, n == nil:
		res.Err = NoNode
	case !versionMatches(n.version, req.Version):
		res.Err = BadVersion
	case len(n.children) > 0:
		res.Err = NotEmpty
	default:
		t.deleteNode(req.Path)
	}
	return res
}

// deleteNode is DataTree.deleteNode: the parent's pzxid moves only up and
// its cversion not at all. One NodeDeleted goes to a session that watched
// the node for data, existence or children; then NodeChildrenChanged to the
// parent's child watchers.
func (t *txn) deleteNode(p string) {
	m := t.m
	parentPath, name, _ := splitPath(p)
	parent, n := m.nodes[parentPath], m.nodes[p]
	oldPzxid := parent.pzxid
	delete(parent.children, name)
	if t.zxid > parent.pzxid {
		parent.pzxid = t.zxid
	}
	delete(m.nodes, p)
	m.disown(p, n.owner)
	prep, hadPrep := t.prepCversion[p]
	delete(t.prepCversion, p) // a node created again at p starts from cversion 0
	t.lives = append(t.lives, lifeChange{path: p, owner: n.owner, delete: true})
	t.undo = append(t.undo, func() {
		parent.children[name] = struct{}{}
		parent.pzxid = oldPzxid
		m.nodes[p] = n
		m.own(p, n.owner)
		if hadPrep {
			t.prepCversion[p] = prep
		}
	})
	t.triggers = append(t.triggers,
		Event{Type: EventNodeDeleted, Path: p},
		Event{Type: EventNodeChildrenChanged, Path: parentPath})
}

// setData is the server's setData: check's checks, then new data,
// version+1 and mzxid, and NodeDataChanged.
func (t *txn) setData(req Request) OpResult {
	res := t.check(req)
	if res.Err != OK {
		return res
	}
	n := t.m.nodes[req.Path]
	oldData, oldVersion, oldMzxid := n.data, n.version, n.mzxid
	n.data, n.version, n.mzxid = bytes.Clone(req.Data), n.version+1, t.zxid
	t.undo = append(t.undo, func() { n.data, n.version, n.mzxid = oldData, oldVersion, oldMzxid })
	t.triggers = append(t.triggers, Event{Type: EventNodeDataChanged, Path: req.Path})
	res.Stat = n.stat()
	return res
}

// check is the server's check: a valid path, an existing node, the version.
func (t *txn) check(req Request) OpResult {
	res := OpResult{Op: req.Op}
	n := t.m.nodes[req.Path]
	switch {
	case !validPath(req.Path):
		res.Err = BadArguments
	case n == nil:
		res.Err = NoNode
	case !versionMatches(n.version, req.Version):
		res.Err = BadVersion
	}
	return res
}

// write applies one write operation within t.
func (t *txn) write(owner SessionID, req Request) OpResult {
	switch req.Op {
	case OpCreate, OpCreateContainer:
		return t.create(owner, req)
	case OpDelete:
		return t.delete(req)
	case OpSetData:
		return t.setData(req)
	case OpCheck:
		return t.check(req)
	}
	return OpResult{Op: req.Op, Err: MarshallingError}
}

// own records a new node with its owner: a container in the set the
// container manager scans, an ephemeral with its session.
func (m *Model) own(p string, owner int64) {
	switch {
	case owner == containerOwner:
		m.containers[p] = struct{}{}
	case owner != 0:
		if s := m.sessions[SessionID(owner)]; s != nil {
			s.ephemerals[p] = struct{}{}
		}
	}
}

func (m *Model) disown(p string, owner int64) {
	switch {
	case owner == containerOwner:
		delete(m.containers, p)
	case owner != 0:
		if s := m.sessions[SessionID(owner)]; s != nil {
			delete(s.ephemerals, p)
		}
	}
}
