package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// What a watch prints. ZooKeeper tells a watcher that a node went, never
// why: a holder's release and the end of its session (a lost lease) both
// read "released"; a waiter that gave up, timed out or lost its session
// reads "left".
const (
	evHolding      = "holding"  // held when the watch began
	evWaiting      = "waiting"  // waiting when the watch began
	evQueued       = "queued"   // a new contender
	evGranted      = "granted"  // a waiter now holds
	evReleased     = "released" // a holder's node went: released, or its session ended
	evLeft         = "left"     // a waiter's node went before its grant
	evDisconnected = "disconnected"
	evReconnected  = "reconnected"
	evExpired      = "expired"
)

// watchEvent is one line of a watch.
type watchEvent struct {
	Time  time.Time `json:"time"`
	Event string    `json:"event"`
	Path  string    `json:"path"` // the lock path, relative to -root
	Node  *nodeView `json:"node,omitempty"`
	// WaitedSeconds: granted, left: since the node was created.
	WaitedSeconds float64 `json:"waited_seconds,omitempty"`
	// HeldSeconds: released: since the watch saw the grant. A node that
	// held when the watch began has none: ZooKeeper keeps no grant time,
	// and its age counts its wait too.
	HeldSeconds float64 `json:"held_seconds,omitempty"`
	heldKnown   bool    // HeldSeconds is set, for the text line
}

// seenNode is what a watch remembers of a contender between listings.
type seenNode struct {
	view      nodeView
	held      bool
	heldSince time.Time // when the watch saw the grant; zero if it held as the watch began
}

// watcher follows one lock path.
type watcher struct {
	s        *session
	r        *reader
	lockPath string
	asJSON   bool
	out      io.Writer
	seen     map[string]*seenNode // by node path
	started  bool                 // the first listing has been reported
}

// runWatch prints the lock at PATH as it is, then every change, until ctx
// ends (interrupted) or -for has passed; both end it without error.
func runWatch(ctx context.Context, s *session, o options, args []string, out io.Writer) error {
	if o.watchOn > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.watchOn)
		defer cancel()
	}
	w := &watcher{s: s, r: newReader(s, true), lockPath: args[0], asJSON: o.json, out: out,
		seen: make(map[string]*seenNode)}
	full := s.full(w.lockPath)
	for {
		v, _, _, err := w.r.read(ctx, full)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !connectionLost(err):
			return err
		case err == nil:
			if err := w.report(v); err != nil {
				return err
			}
		}
		// On a lost connection, the next session event says what
		// happened; the listing is made again after it.
		if err := w.wait(ctx, w.r.watches(), err != nil); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// connectionLost reports an error after which listing again, once the
// client has reconnected, may succeed.
func connectionLost(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}

// relistAfterLoss is how long a watch whose listing failed on a lost
// connection waits for the session to come back before it tries again.
const relistAfterLoss = time.Second

// wait blocks until one of the watches fires, the session changes, or ctx
// ends. It prints the session's changes. untilSession: wait for a session
// change even when no watch is armed.
func (w *watcher) wait(ctx context.Context, watches []<-chan zk.Event, untilSession bool) error {
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.s.changed)},
	}
	var retry <-chan time.Time
	if untilSession {
		// Should the reconnection have been reported before the failed
		// listing, no session change is coming: list again anyway.
		t := time.NewTimer(relistAfterLoss)
		defer t.Stop()
		retry = t.C
	}
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(retry)})
	for _, ch := range watches {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	for {
		chosen, _, _ := reflect.Select(cases)
		switch chosen {
		case 0, 2:
			return nil
		case 1:
			relist := false
			for _, st := range w.s.drainStates() {
				var ev string
				switch st {
				case zk.StateDisconnected:
					ev = evDisconnected
				case zk.StateExpired:
					ev, relist = evExpired, true
				case zk.StateHasSession:
					ev, relist = evReconnected, true
				default:
					continue
				}
				if err := w.emit(watchEvent{Time: time.Now(), Event: ev, Path: w.lockPath}); err != nil {
					return err
				}
			}
			if relist || !untilSession && len(watches) == 0 {
				return nil
			}
		default:
			return nil // a watch fired: list again
		}
	}
}

// report compares a listing with the last one and prints the differences:
// departures first, then grants, then newcomers, each in queue order.
func (w *watcher) report(v lockView) error {
	now := time.Now()
	first := !w.started
	w.started = true
	current := make(map[string]bool)
	var departures, grants, arrivals []watchEvent
	for _, n := range v.Holders {
		current[n.Node] = true
		prev := w.seen[n.Node]
		switch {
		case prev == nil && first:
			w.seen[n.Node] = &seenNode{view: n, held: true}
			grants = append(grants, w.event(now, evHolding, n))
		case prev == nil:
			w.seen[n.Node] = &seenNode{view: n, held: true, heldSince: now}
			ev := w.event(now, evGranted, n)
			ev.WaitedSeconds = seconds(now.Sub(n.Since))
			grants = append(grants, ev)
		case !prev.held:
			prev.held, prev.heldSince = true, now
			ev := w.event(now, evGranted, n)
			ev.WaitedSeconds = seconds(now.Sub(n.Since))
			grants = append(grants, ev)
		}
	}
	for _, n := range v.Waiters {
		current[n.Node] = true
		if w.seen[n.Node] != nil {
			continue
		}
		w.seen[n.Node] = &seenNode{view: n}
		kind := evQueued
		if first {
			kind = evWaiting
		}
		arrivals = append(arrivals, w.event(now, kind, n))
	}
	for node, prev := range w.seen {
		if current[node] {
			continue
		}
		delete(w.seen, node)
		ev := w.event(now, evLeft, prev.view)
		if prev.held {
			ev.Event = evReleased
			if !prev.heldSince.IsZero() {
				ev.HeldSeconds, ev.heldKnown = seconds(now.Sub(prev.heldSince)), true
			}
		} else {
			ev.WaitedSeconds = seconds(now.Sub(prev.view.Since))
		}
		departures = append(departures, ev)
	}
	sortByQueue(departures)
	w.r.forget(current)
	for _, list := range [][]watchEvent{departures, grants, arrivals} {
		for _, ev := range list {
			if err := w.emit(ev); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *watcher) event(now time.Time, kind string, n nodeView) watchEvent {
	n.AgeSeconds = seconds(now.Sub(n.Since))
	return watchEvent{Time: now, Event: kind, Path: w.lockPath, Node: &n}
}

// sortByQueue orders events by their nodes' creation, which is queue order
// within a lock path.
func sortByQueue(evs []watchEvent) {
	slices.SortFunc(evs, func(a, b watchEvent) int { return cmp.Compare(a.Node.Czxid, b.Node.Czxid) })
}

// emit prints one event: a JSON object per line, or a line of text.
func (w *watcher) emit(ev watchEvent) error {
	if w.asJSON {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		_, err = w.out.Write(append(b, '\n'))
		return err
	}
	stamp := ev.Time.Format("2006-01-02T15:04:05.000Z07:00")
	if ev.Node == nil {
		_, err := fmt.Fprintf(w.out, "%s  %-12s  %s\n", stamp, ev.Event, ev.Path)
		return err
	}
	n := ev.Node
	var took string
	switch {
	case ev.Event == evReleased && ev.heldKnown:
		took = "held " + age(ev.HeldSeconds)
	case ev.Event == evReleased:
		took = "held since before the watch, " + queued(n.AgeSeconds)
	case ev.Event == evGranted || ev.Event == evLeft:
		took = "waited " + age(ev.WaitedSeconds)
	default:
		took = queued(n.AgeSeconds)
	}
	_, err := fmt.Fprintf(w.out, "%s  %-12s  %s  %s  %s  %s\n", stamp, ev.Event, n.Node, n.Client, took, who(*n))
	return err
}
