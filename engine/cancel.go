package engine

import "context"

// contextGroups names the contexts acquisitions wait under by their Done
// channel, one cancel group each, and follows each group's context once,
// while a machine has members in it: the core for the loop (runtime.go),
// the cohort machine for the cohorts (cohort.go). Who is in which group
// is the machine's (engine/internal/cancelgroup); following is this. Its
// owner guards it: the loop, or the cohorts' mutex.
type contextGroups struct {
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

// group names ctx's cancel group: 0 for a context that never ends.
func (g *contextGroups) group(ctx context.Context) uint64 {
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

// follow has ended told, once, when the context of group ends, unless
// drop comes first; afterDone is the runtime's context.AfterFunc.
func (g *contextGroups) follow(group uint64, afterDone func(context.Context, func()) func() bool, ended func(group uint64, cause error)) {
	f := g.groups[group]
	if f == nil || f.stop != nil {
		return
	}
	ctx := f.ctx
	f.stop = afterDone(ctx, func() { ended(group, context.Cause(ctx)) })
}

// drop stops following group and forgets it.
func (g *contextGroups) drop(group uint64) {
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

// forgetIdle forgets group if it was named but never followed (its
// acquisition went elsewhere).
func (g *contextGroups) forgetIdle(group uint64) {
	if f := g.groups[group]; f != nil && f.stop == nil {
		g.drop(group)
	}
}

// dropAll stops following every group: the engine is shutting down.
func (g *contextGroups) dropAll() {
	for id := range g.groups {
		g.drop(id)
	}
}
