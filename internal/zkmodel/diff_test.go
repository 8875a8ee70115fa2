package zkmodel_test

import (
	"flag"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/internal/zkmodel"
	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// The differential test drives the model and a real ZooKeeper through the
// same steps (requests of several sessions, closes, cuts, reconnects,
// expiries, reaps), one step at a time, and after every step compares what
// each session has seen on each side: every reply (code, created names,
// data, children, stats with owners named by session, the reply's zxid)
// and every watch event, in order. Zxids are compared by rank (see zxid).

var trace = flag.Bool("zkmodel.trace", false, "log every step of the differential tests")

// differential is one run: a model world and a real world in lockstep.
type differential struct {
	t           *testing.T
	model, real world
	steps       int
	sessions    int // opened so far
}

type stepOpts struct {
	quiet     bool // compare at the next step that is not quiet
	unordered bool // sort the events each session received in the step
	connect   bool // the step opens a session
}

func newDifferential(t *testing.T, srv *zkserver.Server, cfg zkmodel.Config) *differential {
	d := &differential{t: t, model: newModelWorld(t, cfg), real: newRealWorld(t, srv)}
	t.Cleanup(d.real.shutdown)
	if *trace {
		t.Cleanup(func() {
			for k, lines := range d.real.transcript().render() {
				t.Logf("ZooKeeper's transcript of s%d:\n  %s", k, strings.Join(lines, "\n  "))
			}
		})
	}
	return d
}

// step runs one step on both worlds, lets both settle, and compares. A
// quiet step is compared at the next step that is not: the real server's
// container manager reaps when it likes, so the steps from a container's
// last child's deletion to its reaping are compared once it is reaped.
//
// The events a session's close or expiry sends are compared as a set: the
// server deletes the session's ephemerals in the order of a Java hash set,
// the model in path order (or its Config.EndOrder's).
func (d *differential) step(what string, opts stepOpts, run func(w world) zkmodel.Reply) zkmodel.Reply {
	d.t.Helper()
	if *trace {
		d.t.Logf("step %d: %s", d.steps+1, what)
	}
	var rep zkmodel.Reply
	for i, w := range []world{d.model, d.real} {
		tr := w.transcript()
		before := make([]int, d.sessions)
		for k := range before {
			before[k] = tr.len(k)
		}
		r := run(w)
		w.settle()
		if opts.unordered {
			for k, from := range before {
				tr.sortFrom(k, from)
			}
		}
		if i == 0 {
			rep = r
		}
	}
	if opts.connect {
		d.sessions++
	}
	d.steps++
	if !opts.quiet {
		if diff := diffTranscripts(d.model.transcript(), d.real.transcript()); diff != "" {
			d.t.Fatalf("after step %d (%s), the model and ZooKeeper differ:\n%s", d.steps, what, diff)
		}
	}
	return rep
}

// modelHas reports whether the model holds a node at p now.
func (d *differential) modelHas(p string) bool {
	_, _, ok := d.model.(*modelWorld).m.Node(p)
	return ok
}

func (d *differential) connect(timeout time.Duration) {
	d.t.Helper()
	d.step(fmt.Sprintf("connect(%v)", timeout), stepOpts{connect: true}, func(w world) zkmodel.Reply { w.connect(timeout); return zkmodel.Reply{} })
}

func (d *differential) do(k int, req zkmodel.Request) zkmodel.Reply {
	d.t.Helper()
	return d.step(describe(k, req), stepOpts{}, func(w world) zkmodel.Reply { return w.do(k, req) })
}

func (d *differential) quietly(k int, req zkmodel.Request) {
	d.t.Helper()
	d.step(describe(k, req), stepOpts{quiet: true}, func(w world) zkmodel.Reply { return w.do(k, req) })
}

// unread sends req on session k without comparing its reply, for a reply
// go-zookeeper cannot read; later steps look at what it did.
func (d *differential) unread(k int, req zkmodel.Request) {
	d.t.Helper()
	d.step(describe(k, req)+" (reply unread)", stepOpts{}, func(w world) zkmodel.Reply { w.send(k, req); return zkmodel.Reply{} })
}

func (d *differential) close(k int) {
	d.t.Helper()
	d.step(fmt.Sprintf("close s%d", k), stepOpts{unordered: true}, func(w world) zkmodel.Reply { w.close(k); return zkmodel.Reply{} })
}

func (d *differential) disconnect(k int) {
	d.t.Helper()
	d.step(fmt.Sprintf("disconnect s%d", k), stepOpts{}, func(w world) zkmodel.Reply { w.disconnect(k); return zkmodel.Reply{} })
}

func (d *differential) reconnect(k int) {
	d.t.Helper()
	d.step(fmt.Sprintf("reconnect s%d", k), stepOpts{}, func(w world) zkmodel.Reply { w.reconnect(k); return zkmodel.Reply{} })
}

func (d *differential) expire(k int) {
	d.t.Helper()
	d.step(fmt.Sprintf("expire s%d", k), stepOpts{unordered: true}, func(w world) zkmodel.Reply { w.expire(k); return zkmodel.Reply{} })
}

func (d *differential) reap(p string, quiet bool) {
	d.t.Helper()
	d.step("reap "+p, stepOpts{quiet: quiet}, func(w world) zkmodel.Reply { w.reap(p); return zkmodel.Reply{} })
}

func describe(k int, req zkmodel.Request) string {
	s := fmt.Sprintf("s%d %v %s", k, req.Op, req.Path)
	for _, op := range req.Ops {
		s += fmt.Sprintf(" [%v %s]", op.Op, op.Path)
	}
	return s
}

// Requests, briefly.

func mkCreate(p string, mode zkmodel.Mode, data string) zkmodel.Request {
	return zkmodel.Request{Op: zkmodel.OpCreate, Path: p, Mode: mode, Data: []byte(data)}
}

func mkContainer(p string) zkmodel.Request {
	return zkmodel.Request{Op: zkmodel.OpCreateContainer, Path: p, Mode: zkmodel.Container}
}

func mkDelete(p string, version int32) zkmodel.Request {
	return zkmodel.Request{Op: zkmodel.OpDelete, Path: p, Version: version}
}

func mkSet(p, data string, version int32) zkmodel.Request {
	return zkmodel.Request{Op: zkmodel.OpSetData, Path: p, Data: []byte(data), Version: version}
}

func mkCheck(p string, version int32) zkmodel.Request {
	return zkmodel.Request{Op: zkmodel.OpCheck, Path: p, Version: version}
}

func mkExists(p string, watch bool) zkmodel.Request {
	return zkmodel.Request{Op: zkmodel.OpExists, Path: p, Watch: watch}
}

func mkGet(p string, watch bool) zkmodel.Request {
	return zkmodel.Request{Op: zkmodel.OpGetData, Path: p, Watch: watch}
}

func mkChildren(p string, watch bool) zkmodel.Request {
	return zkmodel.Request{Op: zkmodel.OpGetChildren, Path: p, Watch: watch}
}

func mkMulti(ops ...zkmodel.Request) zkmodel.Request {
	return zkmodel.Request{Op: zkmodel.OpMulti, Ops: ops}
}

// script is a scripted sequence run against both worlds, under its own
// top-level path p.
type script struct {
	name string
	run  func(d *differential, p string)
}

var scripts = []script{
	{"sequential-names", scriptSequentialNames},
	{"ephemerals", scriptEphemerals},
	{"containers", scriptContainers},
	{"multi", scriptMulti},
	{"watches", scriptWatches},
	{"deletes-and-versions", scriptDeletesAndVersions},
	{"session-timeouts", scriptSessionTimeouts},
	{"expiry", scriptExpiry},
	{"reconnect-set-watches", scriptReconnect},
}

func TestDifferentialScripts(t *testing.T) {
	var sequences, steps atomic.Int64
	t.Run("all", func(t *testing.T) {
		for _, sc := range scripts {
			t.Run(sc.name, func(t *testing.T) {
				d := newDifferential(t, realZK, modelConfig)
				sc.run(d, "/diff-"+sc.name)
				sequences.Add(1)
				steps.Add(int64(d.steps))
			})
		}
	})
	t.Logf("scripted sequences compared to the end: %d of %d, %d steps", sequences.Load(), len(scripts), steps.Load())
}

func scriptSequentialNames(d *differential, p string) {
	d.connect(20 * time.Second)
	d.connect(20 * time.Second)
	d.do(0, mkCreate(p, zkmodel.Persistent, ""))
	d.do(0, mkChildren(p, false))
	for i := range 3 {
		d.do(i%2, mkCreate(p+"/lock-", zkmodel.EphemeralSequential, "x"))
	}
	d.do(0, mkCreate(p+"/lock-", zkmodel.PersistentSequential, ""))
	d.do(1, mkChildren(p, false))
	// A delete leaves the parent's cversion: the next name is not reused.
	d.do(0, mkDelete(p+"/lock-0000000001", -1))
	d.do(1, mkChildren(p, false))
	// A plain create counts too; a sequential create whose name is taken
	// fails, and leaves the cversion where it was, so it fails again.
	d.do(0, mkCreate(p+"/lock-0000000005", zkmodel.Persistent, ""))
	d.do(1, mkCreate(p+"/lock-", zkmodel.EphemeralSequential, ""))
	d.do(1, mkCreate(p+"/lock-", zkmodel.EphemeralSequential, ""))
	d.do(0, mkChildren(p, false))
	// A sequential name right after the parent's slash.
	d.do(0, mkCreate(p+"/", zkmodel.PersistentSequential, ""))
	d.do(0, mkExists(p+"/lock-0000000000", false))
	d.do(1, mkExists(p+"/lock-0000000003", false))
	d.do(1, mkGet(p+"/lock-0000000002", false))
	d.do(0, mkChildren(p, false))
}

func scriptEphemerals(d *differential, p string) {
	d.connect(20 * time.Second)
	d.connect(20 * time.Second)
	d.do(0, mkCreate(p, zkmodel.Persistent, ""))
	d.do(0, mkCreate(p+"/e", zkmodel.Ephemeral, "hello"))
	d.do(1, mkExists(p+"/e", true))
	d.do(1, mkChildren(p, true))
	d.do(1, mkCreate(p+"/e/child", zkmodel.Persistent, ""))
	d.do(1, mkCreate(p+"/e/seq-", zkmodel.PersistentSequential, ""))
	d.do(0, mkCreate(p+"/e", zkmodel.Ephemeral, ""))
	d.do(1, mkGet(p+"/e", false))
	d.do(0, mkCreate(p+"/f-", zkmodel.EphemeralSequential, ""))
	d.do(0, mkChildren(p, false))
	d.close(0)
	d.do(1, mkChildren(p, false))
	d.do(1, mkExists(p+"/f-0000000001", false))
	d.connect(20 * time.Second)
	d.do(2, mkCreate(p+"/e", zkmodel.Ephemeral, ""))
	d.do(1, mkExists(p+"/e", false))
	d.do(1, mkChildren(p, false))
}

func scriptContainers(d *differential, p string) {
	d.connect(20 * time.Second)
	d.do(0, mkCreate(p, zkmodel.Persistent, ""))
	d.do(0, mkContainer(p+"/c"))
	d.do(0, mkExists(p+"/c", false))
	d.do(0, mkContainer(p+"/c"))
	d.do(0, mkContainer(p+"/missing/c"))
	d.do(0, mkCreate(p+"/c/lock-", zkmodel.EphemeralSequential, ""))
	d.do(0, mkCreate(p+"/c/lock-", zkmodel.EphemeralSequential, ""))
	d.do(0, mkChildren(p+"/c", false))
	// The container mode on a plain create makes a persistent node.
	d.do(0, mkCreate(p+"/plain", zkmodel.Container, ""))
	d.do(0, mkExists(p+"/plain", false))
	d.do(0, mkContainer(p+"/c/lock-0000000000/x"))
	d.do(0, mkContainer(p+"/c/nested"))
	d.do(0, mkCreate(p+"/c/nested/x", zkmodel.Persistent, ""))
	d.do(0, mkDelete(p+"/c/nested/x", -1))
	d.do(0, mkExists(p+"/c/nested", false))
	d.do(0, mkChildren(p+"/c", false))
}

func scriptMulti(d *differential, p string) {
	d.connect(20 * time.Second)
	d.connect(20 * time.Second)
	d.do(0, mkCreate(p, zkmodel.Persistent, ""))
	d.do(1, mkExists(p+"/a", true))
	d.do(1, mkChildren(p, true))
	d.do(0, mkMulti(
		mkCreate(p+"/a", zkmodel.Persistent, "v"),
		mkCreate(p+"/a/b-", zkmodel.PersistentSequential, ""),
		mkCreate(p+"/a/b-", zkmodel.EphemeralSequential, ""),
		mkSet(p+"/a", "w", 0),
		mkCheck(p+"/a", 1)))
	d.do(0, mkExists(p+"/a", false))
	d.do(0, mkChildren(p+"/a", false))
	d.do(0, mkExists(p+"/a/b-0000000001", false))
	d.do(1, mkGet(p+"/a", true))
	d.do(1, mkChildren(p+"/a", true))
	// Fails in the middle: nothing happens, nothing fires.
	d.do(0, mkMulti(
		mkDelete(p+"/a/b-0000000000", -1),
		mkSet(p+"/a", "x", 0),
		mkCreate(p+"/z", zkmodel.Persistent, "")))
	d.do(0, mkChildren(p+"/a", false))
	d.do(0, mkMulti(mkCreate(p+"/missing/x", zkmodel.Persistent, ""), mkDelete(p+"/a/b-0000000001", -1)))
	d.do(0, mkMulti(mkCreate(p+"/n", zkmodel.Persistent, ""), mkCreate(p+"/n", zkmodel.Persistent, "")))
	d.do(0, mkMulti(mkCheck(p+"/a", 9)))
	d.do(0, mkMulti())
	// Delete and create again in one multi.
	d.do(0, mkMulti(
		mkDelete(p+"/a/b-0000000001", -1),
		mkCreate(p+"/a/b-0000000001", zkmodel.Ephemeral, "")))
	d.do(0, mkExists(p+"/a/b-0000000001", false))
	d.do(0, mkMulti(mkDelete(p+"/a", -1)))
	d.do(1, mkChildren(p, false))
}

func scriptWatches(d *differential, p string) {
	d.connect(20 * time.Second)
	d.connect(20 * time.Second)
	d.do(0, mkCreate(p, zkmodel.Persistent, ""))
	d.do(0, mkCreate(p+"/n", zkmodel.Persistent, "a"))
	// getData and exists on one node: one data watch, one event.
	d.do(1, mkGet(p+"/n", true))
	d.do(1, mkExists(p+"/n", true))
	d.do(0, mkSet(p+"/n", "b", -1))
	d.do(0, mkSet(p+"/n", "c", -1)) // one-shot: nothing more
	d.do(1, mkExists(p+"/m", true))
	d.do(0, mkCreate(p+"/m", zkmodel.Persistent, ""))
	// getData and getChildren on a missing node leave no watch.
	d.do(1, mkGet(p+"/gone", true))
	d.do(1, mkChildren(p+"/gone", true))
	d.do(0, mkCreate(p+"/gone", zkmodel.Persistent, ""))
	// A data and a child watch on one node: one NodeDeleted.
	d.do(1, mkGet(p+"/m", true))
	d.do(1, mkChildren(p+"/m", true))
	d.do(1, mkChildren(p, true))
	d.do(0, mkDelete(p+"/m", -1))
	d.do(1, mkChildren(p, true))
	d.do(0, mkCreate(p+"/k", zkmodel.Ephemeral, ""))
	// A session's own write fires its own watch, before the reply.
	d.do(0, mkGet(p+"/n", true))
	d.do(0, mkSet(p+"/n", "d", -1))
	d.do(1, mkExists(p+"/n", true))
	d.do(1, mkChildren(p+"/n", true))
	d.do(0, mkCreate(p+"/n/kid", zkmodel.Persistent, ""))
	d.do(0, mkDelete(p+"/n/kid", -1))
	d.do(0, mkDelete(p+"/n", -1))
	d.do(1, mkChildren(p, false))
}

func scriptDeletesAndVersions(d *differential, p string) {
	d.connect(20 * time.Second)
	d.do(0, mkCreate(p, zkmodel.Persistent, ""))
	d.do(0, mkCreate(p+"/a", zkmodel.Persistent, ""))
	d.do(0, mkCreate(p+"/a/b", zkmodel.Persistent, "1"))
	d.do(0, mkDelete(p+"/a", -1))
	d.do(0, mkDelete(p+"/x", -1))
	d.do(0, mkDelete(p+"/a/b", 3))
	d.do(0, mkSet(p+"/a/b", "2", 0))
	d.do(0, mkSet(p+"/a/b", "3", 0))
	d.do(0, mkSet(p+"/a/b", "3", 1))
	d.do(0, mkSet(p+"/a/nope", "3", -1))
	d.do(0, mkGet(p+"/a/b", false))
	d.do(0, mkMulti(mkCheck(p+"/a/b", 2), mkSet(p+"/a/b", "4", 2)))
	d.do(0, mkMulti(mkCheck(p+"/a/nope", -1)))
	d.do(0, mkDelete(p+"/a/b", 2))
	d.do(0, mkDelete(p+"/a/b", 3))
	d.do(0, mkChildren(p+"/a", false))
	d.do(0, mkDelete(p+"/a", 0))
	d.do(0, mkExists(p+"/a", false))
	d.do(0, mkChildren(p, false))
}

// The server clamps a requested timeout to [2, 20] ticks by default;
// zkserver configures 2 ticks (500ms) to 60s.
func scriptSessionTimeouts(d *differential, p string) {
	d.connect(100 * time.Millisecond)
	d.close(0)
	d.connect(2 * time.Minute)
	d.connect(7777 * time.Millisecond)
	d.do(1, mkCreate(p, zkmodel.Ephemeral, ""))
	d.do(2, mkExists(p, false))
}

// The victim's timeout is long enough that a stalled machine does not
// expire it before the script does.
func scriptExpiry(d *differential, p string) {
	d.connect(4 * time.Second)
	d.connect(20 * time.Second)
	d.do(0, mkCreate(p, zkmodel.Persistent, ""))
	d.do(0, mkCreate(p+"/e0", zkmodel.Ephemeral, ""))
	d.do(0, mkCreate(p+"/e1-", zkmodel.EphemeralSequential, ""))
	d.do(0, mkCreate(p+"/kept", zkmodel.Persistent, ""))
	d.do(1, mkExists(p+"/e0", true))
	d.do(1, mkGet(p+"/e1-0000000001", true))
	d.do(1, mkChildren(p, true))
	d.do(0, mkChildren(p, false))
	d.expire(0)
	d.do(1, mkChildren(p, false))
	d.do(1, mkExists(p+"/e0", false))
	d.do(1, mkCreate(p+"/e0", zkmodel.Ephemeral, ""))
	d.do(1, mkExists(p+"/e0", false))
}

func scriptReconnect(d *differential, p string) {
	d.connect(20 * time.Second)
	d.connect(20 * time.Second)
	d.do(1, mkCreate(p, zkmodel.Persistent, ""))
	for _, n := range []string{"same", "changed", "deleted", "parent", "quiet-parent", "gone-parent"} {
		d.do(1, mkCreate(p+"/"+n, zkmodel.Persistent, ""))
	}
	d.do(0, mkGet(p+"/same", true))
	d.do(0, mkGet(p+"/changed", true))
	d.do(0, mkExists(p+"/deleted", true))
	d.do(0, mkExists(p+"/born", true))
	d.do(0, mkExists(p+"/unborn", true))
	d.do(0, mkChildren(p+"/parent", true))
	d.do(0, mkChildren(p+"/quiet-parent", true))
	d.do(0, mkChildren(p+"/gone-parent", true))
	d.disconnect(0)
	d.do(1, mkSet(p+"/changed", "x", -1))
	d.do(1, mkDelete(p+"/deleted", -1))
	d.do(1, mkCreate(p+"/born", zkmodel.Persistent, ""))
	d.do(1, mkCreate(p+"/parent/kid", zkmodel.Persistent, ""))
	d.do(1, mkDelete(p+"/gone-parent", -1))
	d.reconnect(0)
	// The watches that did not fire were set again.
	d.do(1, mkSet(p+"/same", "y", -1))
	d.do(1, mkCreate(p+"/unborn", zkmodel.Persistent, ""))
	d.do(1, mkCreate(p+"/quiet-parent/kid", zkmodel.Persistent, ""))
	d.do(0, mkChildren(p, false))
}

// TestDifferentialReaping runs on a server of its own whose container
// manager wakes every 100ms, and compares its reaping with the model's
// ReapContainer at the point where the script waited for the server's.
func TestDifferentialReaping(t *testing.T) {
	srv := zkserver.StartT(t, zkserver.Options{JVMFlags: []string{"-Dznode.container.checkIntervalMs=100"}})
	d := newDifferential(t, srv, modelConfig)
	p := "/diff-reaping"
	d.connect(20 * time.Second)
	d.connect(20 * time.Second)
	d.do(0, mkCreate(p, zkmodel.Persistent, ""))
	d.do(0, mkContainer(p+"/c"))
	d.do(0, mkContainer(p+"/unused"))
	// A container mode on a plain create makes a persistent node, which
	// the manager leaves alone once empty.
	d.do(0, mkCreate(p+"/plain", zkmodel.Container, ""))
	d.do(0, mkCreate(p+"/plain/x", zkmodel.Persistent, ""))
	d.do(0, mkDelete(p+"/plain/x", -1))
	d.do(0, mkCreate(p+"/c/lock-", zkmodel.EphemeralSequential, ""))
	d.do(1, mkExists(p+"/c", true))
	d.do(1, mkChildren(p, true))
	d.quietly(0, mkDelete(p+"/c/lock-0000000000", -1))
	d.reap(p+"/c", false)
	d.do(1, mkChildren(p, false))
	// Nested containers go one run of the manager after the other.
	d.do(0, mkContainer(p+"/o"))
	d.do(0, mkContainer(p+"/o/i"))
	d.do(0, mkCreate(p+"/o/i/x", zkmodel.Persistent, ""))
	d.do(1, mkChildren(p+"/o", true))
	d.do(1, mkExists(p+"/o", true))
	d.quietly(0, mkDelete(p+"/o/i/x", -1))
	d.reap(p+"/o/i", true)
	d.reap(p+"/o", false)
	// Inside a multi, a create with the container mode makes a container
	// (go-zookeeper cannot read that multi's reply).
	d.unread(0, mkMulti(mkCreate(p+"/mc", zkmodel.Container, ""), mkCreate(p+"/mc/x", zkmodel.Persistent, "")))
	d.do(1, mkChildren(p+"/mc", false))
	d.quietly(0, mkDelete(p+"/mc/x", -1))
	d.reap(p+"/mc", false)
	// A container that never had a child, and the persistent node, outlived
	// every run above.
	d.do(1, mkExists(p+"/unused", false))
	d.do(1, mkExists(p+"/plain", false))
	d.do(1, mkChildren(p, false))
	t.Logf("reaping sequence compared to the end: %d steps", d.steps)
}
