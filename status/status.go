// Package status serves, over HTTP, what one process's turnstile engine
// holds and queues: its session, the lock nodes it holds, the acquisitions
// it has queued on ZooKeeper, and those queued inside it, in cohorts,
// behind a node it holds or waits on (lock cohorting), which ZooKeeper
// never sees. An application mounts it beside net/http/pprof:
//
//	v := status.New()
//	eng, err := engine.Start(ctx, engine.Config{Servers: servers, Observer: v.Observe})
//	if err != nil {
//		return err
//	}
//	defer eng.Close()
//	v.Attach(eng)
//	http.Handle("/debug/turnstile", v)
//
// and `turnstile process http://host:port/debug/turnstile` prints it.
// (An engine has one Observer: to feed metrics too, call both from one
// function.)
//
// The answer is a JSON object:
//
//	session         id ("0x…"), state (connected, suspended, lapsed, expired, closed),
//	                and the counts of disconnects, reconnects, untrusted
//	                spells and expirations since Start
//	held            the leases of nodes the engine holds: id, path, node,
//	                token (Lease.Token of the grant of the node; a lease
//	                passed on in a cohort adds its pass number), since,
//	                held_seconds, suspended, revoked
//	queued          acquisitions of a node on ZooKeeper that the engine's
//	                loop took in and has not resolved: id, path, since,
//	                waited_seconds (with cohorting, a cohort's node: the
//	                callers waiting for it count in cohort_waiting)
//	cohort_waiting  callers' acquisitions waiting in cohorts, behind a node
//	                of the engine, held or queued, without one of their own
//	in_flight       ZooKeeper requests sent and not yet answered
//
// Paths are as the engine's observer reports them, on the server (under
// engine.Config.Root). A lease passed among a cohort's members is shown
// once, as the node that carries it; an election's observer
// (election.Observe) is an acquisition that is never granted, and shows
// among the queued for as long as it observes.
package status

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/statusjson"
)

// reportTokenShift is how far events.Report.Token, a grant's zxid, is
// shifted left in the lease's fencing token, as events.Report documents.
const reportTokenShift = 12

// View is one engine's view, fed by Observe and Attach, served by
// ServeHTTP. Its methods are safe for concurrent use. A zero View works as
// New's does; a nil View observes nothing and serves 500.
type View struct {
	mu   sync.Mutex
	eng  *engine.Engine
	byID map[uint64]*contender
	now  func() time.Time
}

type contender struct {
	id        uint64
	path      string
	node      string
	token     int64
	since     time.Time // taken in, then granted
	held      bool
	suspended bool
	revoked   bool
}

// New returns an empty View: give its Observe to engine.Config.Observer
// and the started engine to Attach.
func New() *View {
	return &View{byID: make(map[uint64]*contender), now: time.Now}
}

// Attach gives the view the engine whose session and counters it serves.
func (v *View) Attach(eng *engine.Engine) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.eng = eng
}

// Observe is the engine's observer (engine.Config.Observer): it follows
// every acquisition from its start to its grant and the lease to its end.
// It returns at once, as an observer must.
func (v *View) Observe(r events.Report) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byID == nil { // a zero View
		v.byID = make(map[uint64]*contender)
	}
	if r.Member {
		return // a cohort's caller: counted in cohort_waiting, and held as its node
	}
	now := v.clock()
	c := v.byID[r.ID]
	switch r.Kind {
	case events.Acquiring:
		v.byID[r.ID] = &contender{id: r.ID, path: r.Path, since: now}
	case events.Granted:
		if c == nil {
			c = &contender{id: r.ID, path: r.Path}
			v.byID[r.ID] = c
		}
		// The report carries the grant's zxid; the token of the lease
		// granted the node is that zxid shifted (pass 0).
		c.held, c.node, c.token, c.since = true, r.Node, r.Token<<reportTokenShift, now
	case events.Suspended, events.Resumed:
		if c != nil {
			c.suspended = r.Kind == events.Suspended
		}
	case events.Revoked:
		if c != nil {
			c.revoked = true
		}
	case events.Released, events.Lost, events.Cancelled, events.Failed:
		delete(v.byID, r.ID)
	}
}

// clock is the view's time source: time.Now in a zero View.
func (v *View) clock() time.Time {
	if v.now == nil {
		return time.Now()
	}
	return v.now()
}

func (v *View) snapshot() statusjson.Snapshot {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.clock()
	s := statusjson.Snapshot{Held: []statusjson.Held{}, Queued: []statusjson.Queued{}}
	for _, c := range v.byID {
		secs := now.Sub(c.since).Round(time.Millisecond).Seconds()
		if c.held {
			s.Held = append(s.Held, statusjson.Held{ID: c.id, Path: c.path, Node: c.node, Token: c.token, Since: c.since,
				HeldSeconds: secs, Suspended: c.suspended, Revoked: c.revoked})
		} else {
			s.Queued = append(s.Queued, statusjson.Queued{ID: c.id, Path: c.path, Since: c.since, WaitedSeconds: secs})
		}
	}
	// Oldest first, as a queue is served; the id breaks ties.
	slices.SortFunc(s.Held, func(a, b statusjson.Held) int { return compare(a.Since, b.Since, a.ID, b.ID) })
	slices.SortFunc(s.Queued, func(a, b statusjson.Queued) int { return compare(a.Since, b.Since, a.ID, b.ID) })
	if e := v.eng; e != nil {
		st := e.Sessions()
		s.Session = &statusjson.Session{ID: fmt.Sprintf("0x%x", uint64(e.SessionID())), State: e.State().String(),
			Disconnects: st.Disconnects, Reconnects: st.Reconnects, Untrusted: st.Untrusted, Expirations: st.Expirations}
		s.CohortWaiting = e.CohortStats().Waiting
		s.InFlight = e.InFlight()
	}
	return s
}

func compare(a, b time.Time, ida, idb uint64) int {
	if c := a.Compare(b); c != 0 {
		return c
	}
	switch {
	case ida < idb:
		return -1
	case ida > idb:
		return 1
	}
	return 0
}

// ServeHTTP answers GET and HEAD with the view as JSON.
// Without a writer there is no one to answer; without a request, or on a
// nil View, the answer is an error status rather than a panic.
func (v *View) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case w == nil:
		return
	case r == nil:
		http.Error(w, "no request", http.StatusBadRequest)
		return
	case v == nil:
		http.Error(w, "status: nil *status.View", http.StatusInternalServerError)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b, err := json.MarshalIndent(v.snapshot(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}
