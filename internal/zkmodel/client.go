package zkmodel

import (
	"maps"
	"slices"
)

// ClientWatches is the client's half of the watch protocol, kept the way
// go-zookeeper keeps it, for a simulator that plays the client: which
// watches the client believes it holds, and the last zxid it read in a
// reply. From it comes the SetWatches a reconnect sends.
//
// go-zookeeper files a watch by the kind of request that set it: exists on
// a missing node sets an "exist" watch, exists on a node that exists and
// getData set a "data" watch, getChildren a "child" watch. An event clears
// the kinds it answers: NodeCreated the exist watch, NodeDataChanged exist
// and data, NodeDeleted all three, NodeChildrenChanged the child watch. Only
// replies (not pings, not events) move the last zxid.
//
// The zero value is ready to use.
type ClientWatches struct {
	lastZxid int64
	data     map[string]struct{}
	exist    map[string]struct{}
	child    map[string]struct{}
}

// Replied records a reply the client received to req.
func (c *ClientWatches) Replied(req Request, rep Reply) {
	if rep.Zxid > 0 {
		c.lastZxid = rep.Zxid
	}
	if !req.Watch {
		return
	}
	switch {
	case req.Op == OpExists && rep.Err == NoNode:
		add(&c.exist, req.Path)
	case (req.Op == OpExists || req.Op == OpGetData) && rep.Err == OK:
		add(&c.data, req.Path)
	case req.Op == OpGetChildren && rep.Err == OK:
		add(&c.child, req.Path)
	}
}

// Fired records a watch event the client received.
func (c *ClientWatches) Fired(ev Event) {
	switch ev.Type {
	case EventNodeCreated:
		delete(c.exist, ev.Path)
	case EventNodeDataChanged:
		delete(c.exist, ev.Path)
		delete(c.data, ev.Path)
	case EventNodeDeleted:
		delete(c.exist, ev.Path)
		delete(c.data, ev.Path)
		delete(c.child, ev.Path)
	case EventNodeChildrenChanged:
		delete(c.child, ev.Path)
	}
}

// Expired forgets everything: go-zookeeper, told the session expired,
// ends every watch (EventNotWatching) and starts over from zxid 0.
func (c *ClientWatches) Expired() { *c = ClientWatches{} }

// LastZxid is the last zxid the client read in a reply.
func (c *ClientWatches) LastZxid() int64 { return c.lastZxid }

// SetWatches is the request a reconnect sends, each list sorted.
func (c *ClientWatches) SetWatches() SetWatches {
	return SetWatches{
		RelativeZxid: c.lastZxid,
		Data:         slices.Sorted(maps.Keys(c.data)),
		Exist:        slices.Sorted(maps.Keys(c.exist)),
		Child:        slices.Sorted(maps.Keys(c.child)),
	}
}

func add(set *map[string]struct{}, p string) {
	if *set == nil {
		*set = make(map[string]struct{})
	}
	(*set)[p] = struct{}{}
}
