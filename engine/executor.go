package engine

import (
	"errors"
	"path"
	"strings"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/batch"
	"github.com/turnstile-go/turnstile/engine/internal/core"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/engine/internal/zkerr"
	"github.com/turnstile-go/turnstile/queue"
)

// The executor is the runtime's one place that sends ZooKeeper requests:
// the requests the core decided (see internal/core/groupcommit.go). Each runs on a
// short-lived goroutine, at most MaxInFlight at once by the core's count
// (the client pipelines them on the one session and matches replies by
// xid), and comes back to the loop as exactly one input.OpDone per op,
// classified into the core's outcomes, then one input.RequestDone.

// Stats counts the requests the engine sent to ZooKeeper, by kind.
type Stats struct {
	Creates       uint64 // ephemeral sequential creates
	ParentCreates uint64 // container creates of lock paths and their missing ancestors, in multis with a node's create
	Lists         uint64 // getChildren
	Watches       uint64 // getData with a watch
	Deletes       uint64
	// Revocation watches of revocable holders: one per grant, one more per
	// change of the node's data.
	RevokeWatches uint64
	// LocalWatches counts waits on a node of this same engine, which need
	// no request: the node's owner reports its deletion. Not in Requests.
	LocalWatches uint64
	// Multis is the number of multi requests that carried creates and
	// deletes issued together; Batched is how many of the Creates and
	// Deletes went inside them.
	Multis, Batched uint64
	// Recoveries counts the reads that settle a create whose reply was
	// lost, each a sync and a getChildren of the lock path; OwnerChecks the
	// exists requests they sent for children carrying the protected id.
	Recoveries, OwnerChecks uint64
	// Pins counts the creates and deletes of the engine's pins on lock
	// paths it cycles on; Predicted the listings a create's own sequence
	// number made unnecessary: a number the pinned path's count predicted,
	// or 0 on a path made with the node (not in Requests: none was sent).
	Pins, Predicted uint64
	// Marks counts the writes of a cohort's node's data, unchanged, that
	// mark it lingering and held again, for other clients' tries.
	Marks uint64
}

// Requests is the total number of requests.
func (s Stats) Requests() uint64 {
	return s.Creates + s.ParentCreates + s.Lists + s.Watches + s.Deletes + s.RevokeWatches - s.Batched + s.Multis +
		2*s.Recoveries + s.OwnerChecks + s.Pins + s.Marks
}

type counters struct {
	n            [input.NumOpKinds]atomic.Uint64
	localWatches atomic.Uint64
	containers   atomic.Uint64 // container creates of lock paths, inside multis
	multis       atomic.Uint64 // multi requests sent
	batched      atomic.Uint64 // creates and deletes sent inside them
	ownerChecks  atomic.Uint64 // exists requests of recovery reads
	predicted    atomic.Uint64 // listings answered from a create's own number
}

func (c *counters) snapshot() Stats {
	return Stats{
		Creates:       c.n[input.OpCreate].Load(),
		ParentCreates: c.containers.Load(),
		Lists:         c.n[input.OpList].Load(),
		Watches:       c.n[input.OpWatch].Load() + c.n[input.OpWatchChildren].Load() + c.n[input.OpCohortWatch].Load(),
		RevokeWatches: c.n[input.OpRevokeWatch].Load(),
		LocalWatches:  c.localWatches.Load(),
		Deletes:       c.n[input.OpDelete].Load(),
		Multis:        c.multis.Load(),
		Batched:       c.batched.Load(),
		Recoveries:    c.n[input.OpRecover].Load(),
		OwnerChecks:   c.ownerChecks.Load(),
		Pins:          c.n[input.OpPin].Load() + c.n[input.OpUnpin].Load(),
		Predicted:     c.predicted.Load(),
		Marks:         c.n[input.OpMark].Load(),
	}
}

// openACL is the default Config.ACL: anyone may do anything.
var openACL = zk.WorldACL(zk.PermAll)

// aclSize is the encoded size of acl: its count, then per entry the
// permissions, the scheme and the id.
func aclSize(acl []zk.ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + 4 + len(a.Scheme) + 4 + len(a.ID)
	}
	return n
}

// start runs one request the core decided to send.
func (e *Engine) start(o core.Op) {
	e.gauges.inFlight.Add(1)
	e.rt.goroutine(func() { e.run(o) })
}

// run carries out one request on its own goroutine and posts its outcome.
func (e *Engine) run(o core.Op) {
	var dones []input.OpDone
	switch {
	case o.Batch != nil:
		dones = e.batch.Send(e.conn, o.Batch)
	case o.Cold || o.Prune:
		dones = e.batch.Send(e.conn, []core.Op{o}) // a multi of the node and its lock path
	default:
		dones = []input.OpDone{e.exec(o)}
	}
	e.gauges.inFlight.Add(-1)
	for _, d := range dones {
		e.inbox.Put(d)
	}
	done := input.RequestDone{Write: o.Write}
	if o.Write {
		done.Ops = max(len(o.Batch), 1)
	}
	e.inbox.Put(done)
}

// exec sends one request and waits for its reply.
func (e *Engine) exec(o core.Op) (done input.OpDone) {
	done = input.OpDone{Op: o.Kind, Contender: o.ID, Path: o.Path}
	defer func() { done.Outcome = zkerr.Classify(done.Err) }()
	e.count.n[o.Kind].Add(1)
	switch o.Kind {
	case input.OpCreate:
		created, err := e.conn.Create(o.Path, o.Data, batch.CreateFlags(o), e.cfg.aclOf(o.Path))
		done.Name, done.Err = path.Base(created), err
		// Read after the reply: at least the create's zxid (the token of a
		// grant made without a listing; see internal/core/prediction.go).
		done.Zxid = e.lastZxid.Load()
	case input.OpList:
		children, stat, err := e.conn.Children(o.Path)
		done.Children, done.Err = children, err
		if err == nil && stat != nil {
			done.Pzxid, done.Cversion = stat.Pzxid, stat.Cversion
		}
	case input.OpWatch:
		// A data watch, not an exists watch: on a node already gone it
		// fails with no-node and leaves no watch behind. Its version says
		// whether the node lingers (contender.Lingering).
		data, stat, _, err := e.conn.GetW(o.Path)
		done.Err = err
		if err == nil && stat != nil {
			done.Version, done.Data = stat.Version, data
		}
	case input.OpWatchChildren, input.OpCohortWatch:
		children, stat, _, err := e.conn.ChildrenW(o.Path)
		done.Children, done.Err = children, err
		if err == nil && stat != nil {
			done.Pzxid, done.Cversion = stat.Pzxid, stat.Cversion
		}
	case input.OpRevokeWatch:
		done.Data, _, _, done.Err = e.conn.GetW(o.Path)
	case input.OpMark:
		// The node's data again, unchanged: its version moves by one, and
		// an odd one tells other clients' tries that the node lingers, held
		// by no one (see the cohort machine's Mark).
		var stat *zk.Stat
		stat, done.Err = e.conn.Set(o.Path, o.Data, -1)
		if done.Err == nil && stat != nil {
			done.Version = stat.Version
		}
	case input.OpRecover:
		done.Children, done.Pzxid, done.Name, done.Foreign, done.Err = e.recoverNode(o.Path, o.Find)
	case input.OpPin:
		_, done.Err = e.conn.Create(o.Path, nil, zk.FlagEphemeral, e.cfg.aclOf(o.Path))
	case input.OpUnpin:
		done.Err = e.conn.Delete(o.Path, -1)
	case input.OpDelete:
		done.Err = e.conn.Delete(o.Path, -1)
		// Read after the reply: at least the deletion's zxid (see handOff).
		done.Zxid = e.lastZxid.Load()
	}
	return done
}

// recoverNode is the read that settles a create whose reply was lost. It
// syncs lockPath first, so that the server answering has applied every
// write the leader committed before the sync, the lost create among them
// if it was applied at all; then it lists lockPath, and checks the owner
// of each child carrying id: name is the one this session owns, if any;
// foreign reports that one is owned by another session.
func (e *Engine) recoverNode(lockPath, id string) (children []string, pzxid int64, name string, foreign bool, err error) {
	if _, err := e.conn.Sync(lockPath); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, 0, "", false, err
	}
	children, stat, err := e.conn.Children(lockPath)
	if err != nil {
		return nil, 0, "", false, err
	}
	if stat != nil {
		pzxid = stat.Pzxid
	}
	for _, child := range children {
		if !strings.Contains(child, id) {
			continue // cheap skip before parsing
		}
		if n, ok := queue.Parse(child); !ok || n.ID != id {
			continue
		}
		e.count.ownerChecks.Add(1)
		exists, stat, err := e.conn.Exists(lockPath + "/" + child)
		switch {
		case err != nil:
			return nil, 0, "", false, err
		case !exists:
			// Deleted since the listing, by someone else: not a node we
			// can hold, whoever made it.
		case stat.EphemeralOwner == e.conn.SessionID():
			return children, pzxid, child, false, nil
		default:
			foreign = true
		}
	}
	return children, pzxid, "", foreign, nil
}
