package engine_test

import (
	"fmt"
	"path"
	"strings"

	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
)

// checker holds the world to what the locks promise, after every step and
// at every grant (as the engine reports it, before anything else runs).
type checker struct {
	w         *world
	grants    int              // simulated acquisitions granted
	lastToken map[string]int64 // path → token of its latest exclusive grant
	onLine    func(string)     // sees every trace line (the determinism test)
}

func (k *checker) report(c *client, r events.Report) {
	w := k.w
	w.tracef("%s: %v %s %s token %d %v", c.name, r.Kind, r.Path, r.Node, r.Token, r.Err)
	if r.Kind != events.Granted {
		return
	}
	k.grants++
	if !isRead(r.Node) {
		if last, ok := k.lastToken[r.Path]; ok && r.Token <= last {
			w.fail("fencing: %s granted %s on %s with token %d, not above the previous exclusive grant's %d",
				c.name, r.Node, r.Path, r.Token, last)
		}
		k.lastToken[r.Path] = r.Token
	}
	k.all()
}

func isRead(node string) bool { return strings.Contains(node, "__READ__") }

// holder is a lease held now: granted, its Lost not closed, its release
// not begun.
type holder struct {
	a *acq
	l *lock.Lease
}

// all checks exclusion on every path: at most one exclusive holder, and no
// reader beside it but the read lease its own holder took by downgrading.
func (k *checker) all() {
	w := k.w
	byPath := make(map[string][]holder)
	seen := make(map[*lock.Lease]bool)
	for _, a := range w.open {
		l := a.lease()
		if l == nil || seen[l] || !l.Held() || a.released && a.kind != kindReentrant {
			continue
		}
		seen[l] = true
		byPath[a.path] = append(byPath[a.path], holder{a, l})
	}
	for _, p := range simPaths {
		hs := byPath[p]
		var excl []holder
		for _, h := range hs {
			if !isRead(h.l.Node()) {
				excl = append(excl, h)
			}
		}
		if len(excl) > 1 {
			w.fail("exclusion: %d exclusive holders of %s: %s", len(excl), p, names(excl))
			return
		}
		if len(excl) == 1 {
			for _, h := range hs {
				if isRead(h.l.Node()) && !downgradeOf(h.l, excl[0].l) {
					w.fail("exclusion: reader %s beside writer %s on %s", h.l.Node(), excl[0].l.Node(), p)
					return
				}
			}
		}
	}
}

// downgradeOf: r is the read lease that w's holder took in w's place
// (same engine, same sequence number).
func downgradeOf(r, w *lock.Lease) bool {
	rn, ok1 := queue.Parse(path.Base(r.Node()))
	wn, ok2 := queue.Parse(path.Base(w.Node()))
	return ok1 && ok2 && r.Engine() == w.Engine() && rn.Seq == wn.Seq
}

func names(hs []holder) string {
	s := make([]string, len(hs))
	for i, h := range hs {
		s[i] = fmt.Sprintf("%v (%s, token %d)", h.a, h.l.Node(), h.l.Token())
	}
	return strings.Join(s, ", ")
}

// noNodesLeft: once everything is released, no lock node of any session
// remains, and no session owns an ephemeral.
func (k *checker) noNodesLeft() {
	w := k.w
	for _, p := range simPaths {
		if children, ok := w.model.Children(p); ok && len(children) > 0 {
			w.fail("leak: %s still has %v after every release", p, children)
			return
		}
	}
	for _, c := range w.clients {
		if eph := w.model.Ephemerals(c.session); len(eph) > 0 {
			w.fail("leak: session %d of %s still owns %v", c.session, c.name, eph)
			return
		}
	}
}

// allResolved: after Close, every future has resolved, once.
func (k *checker) allResolved() {
	w := k.w
	for _, a := range w.acqs {
		if _, ok, _ := a.fut.Result(); !ok {
			w.fail("%v: its future never resolved", a)
			return
		}
		if a.relFut != nil {
			if _, ok, _ := a.relFut.Result(); !ok {
				w.fail("%v: its release's future never resolved", a)
				return
			}
		}
		if a.callbacks > 1 || (a.kind == kindMutex || a.kind == kindWrite) && a.callbacks != 1 {
			w.fail("%v: its future's callback ran %d times", a, a.callbacks)
			return
		}
	}
}
