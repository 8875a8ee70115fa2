package zkmodel

// fire delivers one triggered event to every session watching for it, and
// forgets those watches: they are one-shot. NodeCreated and NodeDataChanged
// go to the path's data watchers (exists and getData), NodeChildrenChanged
// to its child watchers (getChildren), NodeDeleted to both, once per session
// even when it held both kinds (the server's WatchManager suppresses the
// second). A session hears about its own writes too.
//
// Each session's events are queued on its own connection, so the order in
// which sessions are visited changes nothing a session can see.
func (m *Model) fire(ev Event) {
	for _, s := range m.live {
		var hit bool
		switch ev.Type {
		case EventNodeCreated, EventNodeDataChanged:
			hit = take(s.dataWatches, ev.Path)
		case EventNodeChildrenChanged:
			hit = take(s.childWatches, ev.Path)
		case EventNodeDeleted:
			data := take(s.dataWatches, ev.Path)
			child := take(s.childWatches, ev.Path)
			hit = data || child
		}
		if hit {
			m.deliver(s, Message{Kind: MsgEvent, Event: ev})
		}
	}
}

func take(set map[string]struct{}, p string) bool {
	_, ok := set[p]
	delete(set, p)
	return ok
}

// SetWatches is the setWatches request a client sends when it reconnects:
// the watches it holds and has not seen fire, and the last zxid it read in
// a reply. go-zookeeper sends it by itself after every reconnect that keeps
// the session (ClientWatches builds it the same way).
type SetWatches struct {
	RelativeZxid int64
	Data         []string // from getData, and exists on a node that existed
	Exist        []string // from exists on a node that did not exist
	Child        []string // from getChildren
}

// setWatches is DataTree.setWatches: a watch whose node changed after
// RelativeZxid fires at once instead of being set — a data watch fires
// NodeDeleted if the node is gone, NodeDataChanged if its mzxid is newer; an
// exist watch fires NodeCreated if the node exists now, however old it is; a
// child watch fires NodeDeleted if the node is gone, NodeChildrenChanged if
// its pzxid is newer. The others are set again. Events go out in the order
// of the lists (data, exist, child), as the server walks them; go-zookeeper
// fills the lists from a map, so a real client sees them in any order.
func (m *Model) setWatches(s *session, w SetWatches) {
	event := func(t EventType, p string) { s.push(Message{Kind: MsgEvent, Event: Event{Type: t, Path: p}}) }
	// rearm handles data and child watches alike: gone, changed after
	// RelativeZxid (by the node's zxid that the kind of watch looks at), or
	// set again.
	rearm := func(paths []string, changedAt func(*node) int64, changed EventType, set map[string]struct{}) {
		for _, p := range paths {
			switch n := m.nodes[p]; {
			case n == nil:
				event(EventNodeDeleted, p)
			case changedAt(n) > w.RelativeZxid:
				event(changed, p)
			default:
				set[p] = struct{}{}
			}
		}
	}
	rearm(w.Data, func(n *node) int64 { return n.mzxid }, EventNodeDataChanged, s.dataWatches)
	for _, p := range w.Exist {
		if m.nodes[p] != nil {
			event(EventNodeCreated, p)
		} else {
			s.dataWatches[p] = struct{}{}
		}
	}
	rearm(w.Child, func(n *node) int64 { return n.pzxid }, EventNodeChildrenChanged, s.childWatches)
}
