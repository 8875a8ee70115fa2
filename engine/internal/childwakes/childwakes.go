// Package childwakes runs what waits for a lock path's children watch (a
// lingering cohort node's wake) from the ZooKeeper client's event
// callback, on its receive goroutine, as the notification is read.
//
// A lingering node is given back because another client arrived and waits
// for its deletion; each goroutine hop between the notification and the
// delete is time that client waits. Run from the callback, the wake starts
// the delete with no hop before it, on a goroutine whose stack is in use
// (one parked on the watch's channel grows its stack to the wake's depth
// first: 15–20 µs measured), and a lingering node costs a record, not a
// goroutine.
//
// The callback knows a notification's path, not the channel it fires, so
// a wake is registered by path, and must see every notification that
// fires its watch's channel. The client adds the channel when it reads the
// listing's reply, before the caller has it: a notification read after
// that and before the wake is armed would be missed. So the record is
// made before the listing is asked (Ask), and a notification for its path
// that comes before it is armed marks it fired; Arm then runs the wake at
// once. That may be a notification of an older watch of the same path,
// read before the listing's reply: a wake too many, which gives a
// lingering node back early and costs only the node.
package childwakes

import (
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Registry is the records of children watches by path. The zero Registry
// is empty and ready; its methods are safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	byPath map[string][]*Record
}

// Record is one listing's: pending until armed.
type Record struct {
	path  string
	id    uint64 // whose: the cohort node's attempt
	fired bool   // a notification for path came while pending
	wake  func() // set once armed
}

// Ask makes the record of a children watch about to be asked of path; id
// is whose it is (a cohort node's attempt).
func (ws *Registry) Ask(path string, id uint64) *Record {
	w := &Record{path: path, id: id}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byPath == nil {
		ws.byPath = map[string][]*Record{}
	}
	ws.byPath[path] = append(ws.byPath[path], w)
	return w
}

// Arm runs wake once the watch w was asked for fires: at once, on the
// calling goroutine, if a notification for its path came since Ask.
func (ws *Registry) Arm(w *Record, wake func()) {
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

// Drop forgets w, whose watch was not set or is not waited for.
func (ws *Registry) Drop(w *Record) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.remove(w)
}

func (ws *Registry) remove(w *Record) {
	list := slices.DeleteFunc(ws.byPath[w.path], func(o *Record) bool { return o == w })
	if len(list) == 0 {
		delete(ws.byPath, w.path)
	} else {
		ws.byPath[w.path] = list
	}
}

// Notified takes a notification the client read: one that fires a
// children watch (the path's children changed, the path was deleted, or
// the watch ended with the session) runs the wakes armed on its path, on
// the calling goroutine, and marks the pending ones fired. ran is how
// many wakes it ran.
func (ws *Registry) Notified(ev zk.Event) (ran int) {
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

// Armed is the ids of the records armed on path, whose wakes a
// notification for path would run now.
func (ws *Registry) Armed(path string) []uint64 {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var ids []uint64
	for _, w := range ws.byPath[path] {
		if w.wake != nil {
			ids = append(ids, w.id)
		}
	}
	return ids
}
