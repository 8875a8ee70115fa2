package engine

import (
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"
)

// childWakes run what waits for a lock path's children watch (a lingering
// cohort node's wake: cohort.go) from the client's event callback, on its
// receive goroutine, as the notification is read. A lingering node is
// given back because another client arrived and waits for its deletion;
// each goroutine hop between the notification and the delete is time that
// client waits. Run from the callback, the wake starts the delete with no
// hop before it, on a goroutine whose stack is in use (one parked
// on the watch's channel grows its stack to the wake's depth first: 15–20
// µs measured), and a lingering node costs a record, not a goroutine.
//
// The callback knows a notification's path, not the channel it fires, so
// a wake is registered by path, and must see every notification that
// fires its watch's channel. The client adds the channel when it reads the
// listing's reply, before the caller has it: a notification read after
// that and before the wake is armed would be missed. So the record is
// made before the listing is asked (ask), and a notification for its path
// that comes before it is armed marks it fired; arm then runs the wake at
// once. That may be a notification of an older watch of the same path,
// read before the listing's reply: a wake too many, which gives a
// lingering node back early and costs only the node.
type childWakes struct {
	mu     sync.Mutex
	byPath map[string][]*childWake
}

// childWake is one listing's record: pending until armed.
type childWake struct {
	path  string
	id    uint64 // whose: the cohort node's attempt
	fired bool   // a notification for path came while pending
	wake  func() // set once armed
}

// ask makes the record of a children watch about to be asked of path.
func (ws *childWakes) ask(path string, id uint64) *childWake {
	w := &childWake{path: path, id: id}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byPath == nil {
		ws.byPath = map[string][]*childWake{}
	}
	ws.byPath[path] = append(ws.byPath[path], w)
	return w
}

// arm runs wake once the watch w was asked for fires: at once, on the
// calling goroutine, if a notification for its path came since ask.
func (ws *childWakes) arm(w *childWake, wake func()) {
	ws.mu.Lock()
	if !w.fired {
		w.wake = wake
		ws.mu.Unlock()
		return
	}
	ws.remove(w)
	ws.mu.Unlock()
	wake()
}

// drop forgets w, whose watch was not set or is not waited for.
func (ws *childWakes) drop(w *childWake) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.remove(w)
}

func (ws *childWakes) remove(w *childWake) {
	list := slices.DeleteFunc(ws.byPath[w.path], func(o *childWake) bool { return o == w })
	if len(list) == 0 {
		delete(ws.byPath, w.path)
	} else {
		ws.byPath[w.path] = list
	}
}

// notified takes a notification the client read: one that fires a
// children watch (the path's children changed, the path was deleted, or
// the watch ended with the session) runs the wakes armed on its path, on
// the calling goroutine, and marks the pending ones fired. ran is how
// many wakes it ran.
func (ws *childWakes) notified(ev zk.Event) (ran int) {
	switch ev.Type {
	case zk.EventNodeChildrenChanged, zk.EventNodeDeleted, zk.EventNotWatching:
	default:
		return 0
	}
	var run []func()
	ws.mu.Lock()
	list := ws.byPath[ev.Path]
	pending := list[:0]
	for _, w := range list {
		if w.wake != nil {
			run = append(run, w.wake)
			continue
		}
		w.fired = true
		pending = append(pending, w)
	}
	clear(list[len(pending):])
	if len(pending) == 0 {
		delete(ws.byPath, ev.Path)
	} else {
		ws.byPath[ev.Path] = pending
	}
	ws.mu.Unlock()
	for _, wake := range run {
		wake()
	}
	return len(run)
}
