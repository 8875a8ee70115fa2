package childwakes

import (
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// A wake runs once, for the first notification that fires its path's
// children watch after it is armed, and its record goes with it; a
// notification before it is armed runs it when it is armed; other paths,
// and notifications that fire no children watch, leave it alone.
func TestChildWakes(t *testing.T) {
	var ws Registry
	var ran []string
	wake := func(name string) func() { return func() { ran = append(ran, name) } }
	step := func(what string, f func(), want ...string) {
		t.Helper()
		ran = nil
		f()
		if !slices.Equal(ran, want) {
			t.Fatalf("%s: ran %q, want %q", what, ran, want)
		}
	}
	ev := func(typ zk.EventType, path string) func() {
		return func() { ws.Notified(zk.Event{Type: typ, Path: path}) }
	}

	a, b := ws.Ask("/p", 1), ws.Ask("/p", 2)
	early := ws.Ask("/q", 3)
	dropped := ws.Ask("/q", 4)
	step("a armed", func() { ws.Arm(a, wake("a")) })
	step("children of /q changed, both pending", ev(zk.EventNodeChildrenChanged, "/q"))
	step("a data change of /p", ev(zk.EventNodeDataChanged, "/p"))
	step("a node created at /p", ev(zk.EventNodeCreated, "/p"))
	step("children of /p changed", ev(zk.EventNodeChildrenChanged, "/p"), "a")
	step("b armed after that notification", func() { ws.Arm(b, wake("b")) }, "b")
	step("children of /p changed again", ev(zk.EventNodeChildrenChanged, "/p"))
	step("the early one armed", func() { ws.Arm(early, wake("early")) }, "early")
	ws.Drop(dropped)
	if len(ws.byPath) != 0 {
		t.Fatalf("records left: %v", ws.byPath)
	}

	c, d := ws.Ask("/r", 5), ws.Ask("/r", 6)
	ws.Arm(c, wake("c"))
	ws.Arm(d, wake("d"))
	step("the session's end", func() {
		ws.Notified(zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: "/r", Err: zk.ErrSessionExpired})
	}, "c", "d")
	e := ws.Ask("/s", 7)
	ws.Arm(e, wake("e"))
	step("/s deleted", ev(zk.EventNodeDeleted, "/s"), "e")
	if len(ws.byPath) != 0 {
		t.Fatalf("records left: %v", ws.byPath)
	}
}
