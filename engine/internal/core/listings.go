package core

import (
	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/queue"
)

// listing coalesces getChildren requests per lock path: while one is in
// flight, contenders that need a fresher view wait for the next one, which
// is sent when the current one returns.
type listing struct {
	current []uint64
	next    []uint64
	// unordered: a create or delete of this engine on the path was in
	// flight or sent while the listing was, so whether the listing shows it
	// is unknown (see prediction.go).
	unordered bool
}

func (c *Core) requestListing(path string, id uint64) {
	if c.predictedListing(path, id) {
		return
	}
	l := c.listings[path]
	if l == nil {
		c.listings[path] = &listing{current: []uint64{id}, unordered: c.changing[path] > 0}
		c.commit.submit(&c.rd, Op{Kind: input.OpList, Path: path})
		return
	}
	l.next = append(l.next, id)
}

// listed hands one listing to every contender that waited for it, then
// sends the next listing if more contenders asked meanwhile. The listing is
// parsed and sorted here, once, for all of them.
func (c *Core) listed(d input.OpDone, in contender.Input) {
	l := c.listings[d.Path]
	if l == nil {
		return
	}
	in.Kind, in.Children, in.Pzxid = contender.Listed, d.Children, d.Pzxid
	in.Listing = c.parseListing(d.Path, d.Children)
	c.listingAnswered(d, l)
	waiting := l.current
	l.current, l.next = l.next, nil
	if len(l.current) > 0 {
		l.unordered = c.changing[d.Path] > 0
		c.commit.submit(&c.rd, Op{Kind: input.OpList, Path: d.Path})
	} else {
		delete(c.listings, d.Path)
	}
	for _, id := range waiting {
		if en := c.contenders[id]; en != nil {
			c.stepContender(en, in)
		}
	}
}

// parseListing parses one listing of path for every contender it is
// handed to, logs the children no recipe reads (see noteForeign), and
// logs, once per path, a listing whose sequence numbers wrapped: the
// contenders fail on it with ErrSequenceWrapped.
func (c *Core) parseListing(path string, children []string) *queue.Listing {
	l := queue.NewListing(children)
	c.noteForeign(path, l)
	if !l.Wrapped() {
		return l
	}
	if _, logged := c.wrapLogged[path]; !logged && len(c.wrapLogged) < maxWrapLogged {
		if c.wrapLogged == nil {
			c.wrapLogged = make(map[string]struct{})
		}
		c.wrapLogged[path] = struct{}{}
		nodes := l.Nodes()
		c.log(LevelError, "lock path's sequence numbers wrapped: nothing is granted on it until the nodes created before the wrap are gone",
			"path", path, "lowest", nodes[0].Name, "highest", nodes[len(nodes)-1].Name)
	}
	return l
}

// maxWrapLogged bounds the paths whose wrap the engine remembers having
// logged: a wrap takes 2^31 changes of one path, so a handful is already
// more than any deployment sees.
const maxWrapLogged = 1024
