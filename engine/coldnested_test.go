package engine_test

import (
	"path"
	"slices"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/engine/internal/core"
	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// A multi that makes nested lock paths (a key and a key below it, both
// new) numbers each node by its place among its path's children. A
// container made below a lock path is one of that path's children too:
// the server counts it when it numbers the next node there, so a node
// made after it must not be named as if it were not there. go-zookeeper
// does not read the results after the multi's first container create,
// so the names come from that count alone.
func TestColdMultiNamesNodesAfterANestedContainer(t *testing.T) {
	root := testRoot(t)
	raw := rawConn(t)
	mkdirs(t, raw, root)
	eng := startEngine(t, engine.Config{})

	outer, inner := root+"/a", root+"/a/L"
	prefix := func(lockPath, id string) string {
		return lockPath + "/_c_" + id + "-lock-"
	}
	ops := []core.Op{
		{Kind: input.OpCreate, ID: 1, Path: prefix(outer, "11111111-1111-4111-8111-111111111111"), Cold: true},
		{Kind: input.OpCreate, ID: 2, Path: prefix(inner, "22222222-2222-4222-8222-222222222222"), Cold: true},
		{Kind: input.OpCreate, ID: 3, Path: prefix(outer, "33333333-3333-4333-8333-333333333333")},
	}
	dones := eng.ExecBatch(ops)

	onServer := map[string][]string{}
	for _, p := range []string{outer, inner} {
		children, _, err := raw.Children(p)
		if err != nil {
			t.Fatalf("children of %s: %v", p, err)
		}
		onServer[p] = children
	}
	t.Logf("on the server: %v", onServer)
	for i, d := range dones {
		lp := path.Dir(ops[i].Path)
		t.Logf("op %d on %s: outcome %v, name %q, fresh %v", d.Contender, lp, d.Outcome, d.Name, d.Fresh)
		if d.Outcome != input.OK {
			continue // recovery looks for it by its protected id: no wrong name
		}
		if !slices.Contains(onServer[lp], d.Name) {
			t.Errorf("op %d reported as %s/%s, which is not on the server (children %v)", d.Contender, lp, d.Name, onServer[lp])
		}
	}
}
