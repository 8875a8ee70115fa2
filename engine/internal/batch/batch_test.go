package batch

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/core"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/nodename"
)

// errLater is what the server answers the requests of a refused multi
// after the one refused (a runtime inconsistency, which go-zookeeper does
// not export).
var errLater = errors.New("zk: runtime inconsistency")

func create(id uint64, lockPath string, cold bool) core.Op {
	return core.Op{Kind: input.OpCreate, ID: id, Path: lockPath + "/x-", Cold: cold}
}

// Ops on lock paths the multi makes go after the others, each path's ops
// in their order: the replies go-zookeeper reads come first.
func TestArrangePutsMadePathsLast(t *testing.T) {
	ops := []sentOp{
		{Op: create(1, "/a", true), levels: 1},
		{Op: create(2, "/b", false)},
		{Op: create(3, "/a", false)},
		{Op: create(4, "/c", false)},
	}
	if got, want := arrange(ops), []int{1, 3, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("arrange = %v, want %v", got, want)
	}
}

// A create whose result was not read is named by its place among the
// children of the path the multi made; a container made below counts as
// one of them.
func TestAppliedNamesCreatesOnMadePaths(t *testing.T) {
	ops := []sentOp{
		{Op: create(1, "/b", false)},
		{Op: create(2, "/a", true), levels: 1},
		{Op: create(3, "/a", false)},
		{Op: create(4, "/a/d", true), levels: 1},
		{Op: create(5, "/a", false)},
	}
	s := New(testConfig(nil))
	order := arrange(ops)
	_, at := s.multiRequests(ops, order)
	// Read up to the first container create, as go-zookeeper does.
	res := []zk.MultiResponse{{String: "/b/x-0000000007"}}
	dones := applied(ops, at, res, 42)
	if len(dones) != len(ops) {
		t.Fatalf("%d results for %d ops", len(dones), len(ops))
	}
	want := []struct {
		name  string
		fresh bool
	}{{"x-0000000007", false}, {"x-0000000000", true}, {"x-0000000001", false}, {"x-0000000000", true}, {"x-0000000003", false}}
	for i, d := range dones {
		if d.Outcome != input.OK || d.Name != want[i].name || d.Fresh != want[i].fresh || d.Zxid != 42 {
			t.Errorf("op %d: %+v, want OK %s fresh %v zxid 42", i, d, want[i].name, want[i].fresh)
		}
	}
	if n := len(at); n != 7 {
		t.Fatalf("%d requests, want 7", n)
	}
}

// fix answers each refusal it can by changing the one op it names.
func TestFixChangesTheRefusedOp(t *testing.T) {
	s := New(testConfig(nil))
	ops := []sentOp{{Op: create(1, "/a/b", false)}}
	at := []reqRef{{0, levelOp}}
	if !s.fix(ops, at, []zk.MultiResponse{{Error: zk.ErrNoNode}}) || ops[0].levels != 1 {
		t.Fatalf("missing lock path: levels %d, want 1", ops[0].levels)
	}
	at = []reqRef{{0, 0}, {0, levelOp}}
	if !s.fix(ops, at, []zk.MultiResponse{{Error: zk.ErrNoNode}, {Error: errLater}}) || ops[0].levels != 2 {
		t.Fatalf("missing parent: levels %d, want 2", ops[0].levels)
	}
	at = []reqRef{{0, 0}, {0, 1}, {0, levelOp}}
	res := []zk.MultiResponse{{}, {Error: zk.ErrNodeExists}, {Error: errLater}}
	if !s.fix(ops, at, res) || ops[0].levels != 0 {
		t.Fatalf("lock path exists: levels %d, want 0", ops[0].levels)
	}
	fixed := []sentOp{{Op: core.Op{Kind: input.OpCreate, Path: "/a/b/x", Fixed: true}}}
	if s.fix(fixed, []reqRef{{0, levelOp}}, []zk.MultiResponse{{Error: zk.ErrNoNode}}) {
		t.Fatal("fixed a node with a borrowed number by making its path")
	}
	del := []sentOp{{Op: core.Op{Kind: input.OpDelete, Path: "/a/b/x-1", Prune: true}, prune: true}}
	at = []reqRef{{0, levelOp}, {0, levelPrune}}
	if !s.fix(del, at, []zk.MultiResponse{{}, {Error: zk.ErrNoAuth}}) || del[0].prune || !s.noPrune.Load() {
		t.Fatalf("prune refused for lack of rights: prune %v, noPrune %v", del[0].prune, s.noPrune.Load())
	}
}

// fakeConn refuses a multi whose first create's lock path is not in
// paths, and applies the others, answering a multi with a container
// create as go-zookeeper does (ErrAPIError, nothing read).
type fakeConn struct {
	paths map[string]bool
	sent  [][]any
}

func (c *fakeConn) SessionID() int64 { return 1 }

func (c *fakeConn) CreateContainer(string, []byte, int32, []zk.ACL) (string, error) {
	panic("not sent in this test")
}

func (c *fakeConn) Multi(reqs ...any) ([]zk.MultiResponse, error) {
	c.sent = append(c.sent, reqs)
	res := make([]zk.MultiResponse, len(reqs))
	for i, r := range reqs {
		cr := r.(*zk.CreateRequest)
		if cr.Flags == zk.FlagContainer {
			c.paths[cr.Path] = true
			continue
		}
		if !c.paths[cr.Path[:len(cr.Path)-len("/x-")]] {
			for j := range res {
				res[j].Error = errLater
			}
			res[i].Error = zk.ErrNoNode
			return res, zk.ErrNoNode
		}
	}
	return nil, zk.ErrAPIError
}

// A batch whose create finds its lock path missing costs one multi more,
// which makes the path with the node: Fresh, numbered 0.
func TestSendMakesAMissingPathInOneMoreMulti(t *testing.T) {
	conn := &fakeConn{paths: map[string]bool{"/": true}}
	cfg := testConfig(func(core.Op) input.OpDone { panic("sent alone") })
	s := New(cfg)
	dones := s.Send(conn, []core.Op{create(1, "/a", false), create(2, "/a", false)})
	if len(conn.sent) != 2 || len(conn.sent[1]) != 3 {
		t.Fatalf("sent %d multis (the last of %d requests), want 2 (of 3)", len(conn.sent), len(conn.sent[len(conn.sent)-1]))
	}
	for i, d := range dones {
		name := "x-000000000" + string(rune('0'+i))
		if d.Outcome != input.OK || d.Name != name || d.Fresh != (i == 0) {
			t.Errorf("op %d: %+v, want OK %s fresh %v", i, d, name, i == 0)
		}
	}
	if cfg.Multis.Load() != 2 || cfg.Containers.Load() != 1 {
		t.Errorf("counted %d multis, %d containers, want 2, 1", cfg.Multis.Load(), cfg.Containers.Load())
	}
}

func testConfig(exec func(core.Op) input.OpDone) Config {
	return Config{
		Exec: exec,
		ACL:  func(string) []zk.ACL { return zk.WorldACL(zk.PermAll) },
		Zxid: new(atomic.Int64), Ops: new([input.NumOpKinds]atomic.Uint64),
		Containers: new(atomic.Uint64), Multis: new(atomic.Uint64), Batched: new(atomic.Uint64),
	}
}

// serverConn applies a multi as the server does: in order, all or nothing,
// a refusal answered with the first failure (those before it OK, those
// after it a runtime inconsistency), and a multi with a container create
// read by go-zookeeper only up to that create (ErrAPIError).
type serverConn struct {
	nodes map[string]bool  // the znodes that exist
	seq   map[string]int64 // children ever made, by parent
}

func newServerConn(paths map[string]int64) *serverConn {
	c := &serverConn{nodes: map[string]bool{"/": true}, seq: map[string]int64{}}
	for p, n := range paths {
		c.nodes[p], c.seq[p] = true, n
	}
	return c
}

func (c *serverConn) SessionID() int64 { return 1 }

func (c *serverConn) CreateContainer(string, []byte, int32, []zk.ACL) (string, error) {
	panic("not sent in this test")
}

func (c *serverConn) Multi(reqs ...any) ([]zk.MultiResponse, error) {
	nodes, seq := maps.Clone(c.nodes), maps.Clone(c.seq)
	res := make([]zk.MultiResponse, len(reqs))
	unread := len(reqs)
	for i, r := range reqs {
		var err error
		switch r := r.(type) {
		case *zk.CreateRequest:
			parent, p := path.Dir(r.Path), r.Path
			if r.Flags == zk.FlagEphemeralSequential {
				p += nodename.FormatSeq(seq[parent])
			}
			switch {
			case !nodes[parent]:
				err = zk.ErrNoNode
			case nodes[p]:
				err = zk.ErrNodeExists
			default:
				nodes[p] = true
				seq[parent]++
				res[i].String = p
				if r.Flags == zk.FlagContainer {
					unread = min(unread, i)
				}
			}
		default:
			panic("a create only in this test")
		}
		if err != nil {
			for j := range res {
				res[j] = zk.MultiResponse{}
				if j > i {
					res[j].Error = errLater
				}
			}
			res[i].Error = err
			return res, err
		}
	}
	c.nodes, c.seq = nodes, seq
	if unread < len(reqs) {
		return res[:unread], zk.ErrAPIError
	}
	return res, nil
}

// A batch of warm creates (lock paths the engine used lately) whose paths
// the server reaped since costs one multi more, whatever their number: the
// first refusal for a missing path makes every unproven path with its
// create. Two creates on each path: only the first makes it.
func TestSendRemakesReapedPathsInOneMoreMulti(t *testing.T) {
	const k = 16
	conn := newServerConn(nil)
	cfg := testConfig(func(core.Op) input.OpDone { panic("sent alone") })
	var batch []core.Op
	for i := range k {
		p := fmt.Sprintf("/r%d", i)
		batch = append(batch, create(uint64(2*i), p, false), create(uint64(2*i+1), p, false))
	}
	dones := New(cfg).Send(conn, batch)
	if got := cfg.Multis.Load(); got > 2 {
		t.Errorf("%d multis for %d reaped lock paths, want at most 2", got, k)
	}
	for i, d := range dones {
		name := nodename.FormatSeq(int64(i % 2))
		if d.Outcome != input.OK || d.Name != "x-"+name || d.Fresh != (i%2 == 0) {
			t.Errorf("op %d: %+v, want OK x-%s fresh %v", i, d, name, i%2 == 0)
		}
	}
}

// A guess that paths were reaped, wrong for some (live paths between
// reaped ones), costs at most one multi more than mending one op a round
// trip, and grants nothing wrongly: a create on a live path is not Fresh.
func TestSendWrongReapGuessCostsOneMulti(t *testing.T) {
	const k = 8 // even ones reaped, odd ones live with 5 children made
	live := map[string]int64{}
	var batch []core.Op
	for i := range k {
		p := fmt.Sprintf("/m%d", i)
		if i%2 == 1 {
			live[p] = 5
		}
		batch = append(batch, create(uint64(i), p, false))
	}
	conn := newServerConn(live)
	cfg := testConfig(func(core.Op) input.OpDone { panic("sent alone") })
	dones := New(cfg).Send(conn, batch)
	if got, most := cfg.Multis.Load(), uint64(1+k/2+1); got > most {
		t.Errorf("%d multis for %d reaped of %d lock paths, want at most %d", got, k/2, k, most)
	}
	for i, d := range dones {
		name, fresh := "x-"+nodename.FormatSeq(0), true
		if i%2 == 1 {
			name, fresh = "x-"+nodename.FormatSeq(5), false
		}
		if d.Outcome != input.OK || d.Name != name || d.Fresh != fresh {
			t.Errorf("op %d: %+v, want OK %s fresh %v", i, d, name, fresh)
		}
	}
	for p := range live {
		if conn.seq[p] != 6 {
			t.Errorf("%s: %d children ever, want 6", p, conn.seq[p])
		}
	}
}

// The other kind: cold creates (paths the engine has no memory of) whose
// paths exist cost one multi more, whatever their number; mixed with new
// keys, a wrong guess costs one multi more than mending one op a round
// trip.
func TestSendFindsLivePathsInOneMoreMulti(t *testing.T) {
	for _, tc := range []struct {
		name string
		live func(i int) bool
		most func(k int) uint64
	}{
		{"all live", func(int) bool { return true }, func(int) uint64 { return 2 }},
		{"every other", func(i int) bool { return i%2 == 1 }, func(k int) uint64 { return uint64(1 + k/2 + 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const k = 16
			live := map[string]int64{}
			var batch []core.Op
			for i := range k {
				p := fmt.Sprintf("/c%d", i)
				if tc.live(i) {
					live[p] = 5
				}
				batch = append(batch, create(uint64(i), p, true))
			}
			conn := newServerConn(live)
			cfg := testConfig(func(core.Op) input.OpDone { panic("sent alone") })
			dones := New(cfg).Send(conn, batch)
			if got, most := cfg.Multis.Load(), tc.most(k); got > most {
				t.Errorf("%d multis, want at most %d", got, most)
			}
			for i, d := range dones {
				name, fresh := "x-"+nodename.FormatSeq(0), true
				if tc.live(i) {
					name, fresh = "x-"+nodename.FormatSeq(5), false
				}
				if d.Outcome != input.OK || d.Name != name || d.Fresh != fresh {
					t.Errorf("op %d: %+v, want OK %s fresh %v", i, d, name, fresh)
				}
			}
		})
	}
}
