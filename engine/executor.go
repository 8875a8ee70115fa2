package engine

import (
	"errors"
	"io"
	"net"
	"path"
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
	kind  events.OpKind
	id    uint64 // the contender; 0 for shared listings
	path  string
	data  []byte
	fixed bool // OpCreate: a non-sequential node
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
}

// Requests is the total number of requests.
func (s Stats) Requests() uint64 {
	return s.Creates + s.ParentCreates + s.Lists + s.Watches + s.Deletes + s.RevokeWatches
}

type counters struct {
	n            [events.NumOpKinds]atomic.Uint64
	localWatches atomic.Uint64
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
	}
}

var openACL = zk.WorldACL(zk.PermAll)

// submit sends o now if the in-flight bound allows, or queues it.
func (e *Engine) submit(o op) {
	if len(e.backlog) == 0 && e.sem.TryAcquire(1) {
		e.start(o)
		return
	}
	e.backlog = append(e.backlog, o)
}

// pump starts queued requests while the bound allows.
func (e *Engine) pump() {
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
	go e.run(o)
}

// run carries out one request on its own goroutine and posts its outcome.
func (e *Engine) run(o op) {
	defer e.wg.Done()
	done := e.exec(o)
	e.sem.Release(1)
	e.inbox.Put(done)
}

func (e *Engine) exec(o op) events.OpDone {
	done := events.OpDone{Op: o.kind, Contender: o.id, Path: o.path}
	e.count.n[o.kind].Add(1)
	switch o.kind {
	case events.OpCreate:
		flags := int32(zk.FlagEphemeralSequential)
		if o.fixed {
			flags = zk.FlagEphemeral
		}
		created, err := e.conn.Create(o.path, o.data, flags, openACL)
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
