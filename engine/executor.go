package engine

import (
	"errors"
	"io"
	"net"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-zookeeper/zk"
	"github.com/turnstile-go/turnstile/events"
)

// The executor is the one place that turns effects into ZooKeeper requests.
// Each request runs on a short-lived goroutine, at most MaxInFlight at once
// (the client pipelines them on the one session and matches replies by
// xid), and comes back to the loop as exactly one events.OpDone.

// op is one request to send.
type op struct {
	batch []op // creates and deletes sent as one multi request; nothing else set
	kind  events.OpKind
	id    uint64 // the contender; 0 for shared listings
	path  string
	data  []byte
	fixed bool // OpCreate: a non-sequential node
	write bool // counted in the engine's writes in flight
}

// createFlags: lock nodes are ephemeral and sequential, but for a node
// with a borrowed number.
func (o op) createFlags() int32 {
	if o.fixed {
		return zk.FlagEphemeral
	}
	return zk.FlagEphemeralSequential
}

// Stats counts the requests the engine sent to ZooKeeper, by kind.
type Stats struct {
	Creates       uint64 // ephemeral sequential creates
	ParentCreates uint64 // container creates for missing lock paths
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
}

// Requests is the total number of requests.
func (s Stats) Requests() uint64 {
	return s.Creates + s.ParentCreates + s.Lists + s.Watches + s.Deletes + s.RevokeWatches - s.Batched + s.Multis
}

type counters struct {
	n            [events.NumOpKinds]atomic.Uint64
	localWatches atomic.Uint64
	multis       atomic.Uint64 // multi requests sent
	batched      atomic.Uint64 // creates and deletes sent inside them
}

func (c *counters) snapshot() Stats {
	return Stats{
		Creates:       c.n[events.OpCreate].Load(),
		ParentCreates: c.n[events.OpCreateParents].Load(),
		Lists:         c.n[events.OpList].Load(),
		Watches:       c.n[events.OpWatch].Load() + c.n[events.OpWatchChildren].Load(),
		RevokeWatches: c.n[events.OpRevokeWatch].Load(),
		LocalWatches:  c.localWatches.Load(),
		Deletes:       c.n[events.OpDelete].Load(),
		Multis:        c.multis.Load(),
		Batched:       c.batched.Load(),
	}
}

var openACL = zk.WorldACL(zk.PermAll)

// submit sends o now if the in-flight bound allows, or queues it. Creates
// and deletes go out at most maxWrites requests at a time: those issued
// while the server is busy with earlier ones wait and then go together as
// one multi request, one proposal and one log write on the server instead
// of one each (group commit). An idle engine sends a write at once.
func (e *Engine) submit(o op) {
	if o.kind == events.OpCreate || o.kind == events.OpDelete {
		e.writes = append(e.writes, o)
		return
	}
	e.send(o)
}

const (
	maxBatch  = 64 // creates and deletes in one multi request
	maxWrites = 2  // write requests in flight at once
)

func (e *Engine) flushWrites() {
	for len(e.writes) > 0 && e.writing < maxWrites {
		n := min(len(e.writes), maxBatch)
		o := op{batch: slices.Clone(e.writes[:n])}
		if n == 1 {
			o = e.writes[0]
		}
		o.write = true
		e.send(o)
		e.writing++
		clear(e.writes[:n])
		e.writes = e.writes[n:]
	}
	if len(e.writes) == 0 {
		e.writes = nil
	}
}

func (e *Engine) send(o op) {
	if len(e.backlog) == 0 && e.sem.TryAcquire(1) {
		e.start(o)
		return
	}
	e.backlog = append(e.backlog, o)
}

// pump sends the turn's creates and deletes, then starts queued requests
// while the bound allows.
func (e *Engine) pump() {
	e.flushWrites()
	n := 0
	for n < len(e.backlog) && e.sem.TryAcquire(1) {
		e.start(e.backlog[n])
		n++
	}
	switch {
	case n == len(e.backlog):
		e.backlog = nil // let a burst's backing array go
	case n > 0:
		clear(e.backlog[:n])
		e.backlog = e.backlog[n:]
	}
}

func (e *Engine) start(o op) {
	e.wg.Add(1)
	e.gauges.inFlight.Add(1)
	go e.run(o)
}

// run carries out one request on its own goroutine and posts its outcome.
func (e *Engine) run(o op) {
	defer e.wg.Done()
	var dones []events.OpDone
	if o.batch != nil {
		dones = e.execBatch(o.batch)
	} else {
		dones = []events.OpDone{e.exec(o)}
	}
	e.sem.Release(1)
	e.gauges.inFlight.Add(-1)
	for _, d := range dones {
		e.inbox.Put(d)
	}
	if o.write {
		e.inbox.Put(events.Command{Payload: writeDone{}})
	}
}

// writeDone tells the loop that a write request came back.
type writeDone struct{}

// execBatch sends creates and deletes as one multi request and reports
// each as if sent alone. A multi is all or nothing: when one of them is
// refused (a lock path not created yet, a node already gone), the others
// were not applied either, and each is sent again on its own.
func (e *Engine) execBatch(batch []op) []events.OpDone {
	reqs := make([]any, len(batch))
	for i, o := range batch {
		e.count.n[o.kind].Add(1)
		switch o.kind {
		case events.OpCreate:
			reqs[i] = &zk.CreateRequest{Path: o.path, Data: o.data, Acl: openACL, Flags: o.createFlags()}
		case events.OpDelete:
			reqs[i] = &zk.DeleteRequest{Path: o.path, Version: -1}
		}
	}
	e.count.multis.Add(1)
	e.count.batched.Add(uint64(len(batch)))
	res, err := e.conn.Multi(reqs...)
	zxid := e.lastZxid.Load() // at least the multi's, read after its reply
	dones := make([]events.OpDone, len(batch))
	switch {
	case err == nil && len(res) == len(batch):
		for i, o := range batch {
			dones[i] = events.OpDone{Op: o.kind, Contender: o.id, Path: o.path, Err: res[i].Error}
			if o.kind == events.OpCreate {
				dones[i].Name = path.Base(res[i].String)
			} else {
				dones[i].Zxid = zxid
			}
		}
	case err != nil && classify(err) != outConnLoss && classify(err) != outClosing && len(res) == len(batch):
		// Refused as a whole: send each on its own, all at once.
		var wg sync.WaitGroup
		for i, o := range batch {
			wg.Go(func() { dones[i] = e.exec(o) })
		}
		wg.Wait()
	default:
		if err == nil {
			err = zk.ErrConnectionClosed // a reply that does not match the request
		}
		for i, o := range batch {
			dones[i] = events.OpDone{Op: o.kind, Contender: o.id, Path: o.path, Err: err}
		}
	}
	return dones
}

func (e *Engine) exec(o op) events.OpDone {
	done := events.OpDone{Op: o.kind, Contender: o.id, Path: o.path}
	e.count.n[o.kind].Add(1)
	switch o.kind {
	case events.OpCreate:
		created, err := e.conn.Create(o.path, o.data, o.createFlags(), openACL)
		done.Name, done.Err = path.Base(created), err
	case events.OpCreateParents:
		done.Err = e.ensurePath(o.path)
	case events.OpList:
		children, stat, err := e.conn.Children(o.path)
		done.Children, done.Err = children, err
		if err == nil && stat != nil {
			done.Pzxid = stat.Pzxid
		}
	case events.OpWatch:
		// A data watch, not an exists watch: on a node already gone it
		// fails with no-node and leaves no watch behind.
		_, _, _, done.Err = e.conn.GetW(o.path)
	case events.OpWatchChildren:
		children, stat, _, err := e.conn.ChildrenW(o.path)
		done.Children, done.Err = children, err
		if err == nil && stat != nil {
			done.Pzxid = stat.Pzxid
		}
	case events.OpRevokeWatch:
		done.Data, _, _, done.Err = e.conn.GetW(o.path)
	case events.OpDelete:
		done.Err = e.conn.Delete(o.path, -1)
		// Read after the reply: at least the deletion's zxid (see handOff).
		done.Zxid = e.lastZxid.Load()
	}
	return done
}

// ensurePath creates p and any missing ancestors as container nodes, which
// the server removes once they are empty. It works bottom-up, so an existing
// parent costs one request.
func (e *Engine) ensurePath(p string) error {
	_, err := e.conn.CreateContainer(p, nil, zk.FlagContainer, openACL)
	switch {
	case err == nil, errors.Is(err, zk.ErrNodeExists):
		return nil
	case errors.Is(err, zk.ErrNoNode):
		if parent := path.Dir(p); parent != "/" {
			if err := e.ensurePath(parent); err != nil {
				return err
			}
		}
		e.count.n[events.OpCreateParents].Add(1)
		_, err = e.conn.CreateContainer(p, nil, zk.FlagContainer, openACL)
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
	}
	return err
}

// classify maps the client's errors to what the state machine needs.
func classify(err error) outcome {
	switch {
	case err == nil:
		return outOK
	case errors.Is(err, zk.ErrNoNode):
		return outNoNode
	case errors.Is(err, zk.ErrNodeExists):
		return outNodeExists
	case errors.Is(err, zk.ErrClosing):
		return outClosing
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrSessionExpired),
		errors.Is(err, zk.ErrSessionMoved), errors.Is(err, zk.ErrNoServer):
		return outConnLoss
	case isNetworkError(err):
		// The client hands a request the raw error of the socket write that
		// failed; whether the server saw the request is unknown.
		return outConnLoss
	}
	return outFailed
}

func isNetworkError(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
