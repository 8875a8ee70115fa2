// Package ctxgroups names the contexts acquisitions wait under by their
// Done channel, one cancel group each, and follows each group's context
// once, while a machine has members in it: the core's for the loop, the
// cohort machine's for the cohorts. Who is in which group is the
// machine's (engine/internal/cancelgroup); following is this, outside
// the machines, which know no context.
package ctxgroups

import "context"

// Groups is the named groups. Its owner guards it (the loop, or the
// cohorts' mutex). The zero Groups is empty and ready.
type Groups struct {
	byDone map[<-chan struct{}]uint64
	groups map[uint64]*followed
	last   uint64
}

// followed is the context of a cancel group, and while it is followed,
// how to stop.
type followed struct {
	ctx  context.Context
	stop func() bool
}

// Group names ctx's cancel group: 0 for a context that never ends.
func (g *Groups) Group(ctx context.Context) uint64 {
	done := ctx.Done()
	if done == nil {
		return 0
	}
	if id, ok := g.byDone[done]; ok {
		return id
	}
	if g.byDone == nil {
		g.byDone, g.groups = map[<-chan struct{}]uint64{}, map[uint64]*followed{}
	}
	g.last++
	g.byDone[done], g.groups[g.last] = g.last, &followed{ctx: ctx}
	return g.last
}

// Follow has ended told, once, when the context of group ends, unless
// Drop comes first; afterDone is the runtime's context.AfterFunc.
func (g *Groups) Follow(group uint64, afterDone func(context.Context, func()) func() bool, ended func(group uint64, cause error)) {
	f := g.groups[group]
	if f == nil || f.stop != nil {
		return
	}
	ctx := f.ctx
	f.stop = afterDone(ctx, func() { ended(group, context.Cause(ctx)) })
}

// Drop stops following group and forgets it.
func (g *Groups) Drop(group uint64) {
	f := g.groups[group]
	if f == nil {
		return
	}
	if f.stop != nil {
		f.stop()
	}
	delete(g.byDone, f.ctx.Done())
	delete(g.groups, group)
}

// ForgetIdle forgets group if it was named but never followed (its
// acquisition went elsewhere).
func (g *Groups) ForgetIdle(group uint64) {
	if f := g.groups[group]; f != nil && f.stop == nil {
		g.Drop(group)
	}
}

// DropAll stops following every group: the engine is shutting down.
func (g *Groups) DropAll() {
	for id := range g.groups {
		g.Drop(id)
	}
}
