package engine

import "context"

// cancelContexts names the contexts acquisitions wait under by their Done
// channel, one cancel group each, and follows each group's context once,
// while the core has members in it (core.ContextAction). Who is in which
// group is the core's (engine/internal/cancelgroup); following a context
// is the runtime's, for the core knows no context. The loop alone uses
// it; the zero value is empty and ready.
type cancelContexts struct {
	byDone map[<-chan struct{}]uint64
	groups map[uint64]*followedContext
	last   uint64
}

// followedContext is the context of a cancel group, and while it is
// followed, how to stop.
type followedContext struct {
	ctx  context.Context
	stop func() bool
}

// Group names ctx's cancel group: 0 for a context that never ends.
func (g *cancelContexts) Group(ctx context.Context) uint64 {
	done := ctx.Done()
	if done == nil {
		return 0
	}
	if id, ok := g.byDone[done]; ok {
		return id
	}
	if g.byDone == nil {
		g.byDone, g.groups = map[<-chan struct{}]uint64{}, map[uint64]*followedContext{}
	}
	g.last++
	g.byDone[done], g.groups[g.last] = g.last, &followedContext{ctx: ctx}
	return g.last
}

// Follow has ended told, once, when the context of group ends, unless
// Drop comes first; afterDone is the runtime's context.AfterFunc.
func (g *cancelContexts) Follow(group uint64, afterDone func(context.Context, func()) func() bool, ended func(group uint64, cause error)) {
	f := g.groups[group]
	if f == nil || f.stop != nil {
		return
	}
	ctx := f.ctx
	f.stop = afterDone(ctx, func() { ended(group, context.Cause(ctx)) })
}

// Drop stops following group and forgets it.
func (g *cancelContexts) Drop(group uint64) {
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

// DropAll stops following every group: the engine is shutting down.
func (g *cancelContexts) DropAll() {
	for id := range g.groups {
		g.Drop(id)
	}
}
