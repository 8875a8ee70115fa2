package engine_test

import (
	"context"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/seam"
	"github.com/turnstile-go/turnstile/internal/zkmodel"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
)

// lock.Participants in the workload, and what the checker holds its
// answers to: the participants it lists, and whether each holds, must be
// those of one state the server was in during the call (less those whose
// node was gone by the time Participants read its data, which it skips).
//
// Participants reads through the engine's seams (internal/seam), which
// run a read on a goroutine of their own; the simulator has the seams of
// its engines read in place, on the coroutine of the caller, as an
// Election's reads do (simobserve_test.go).

// simInPlace holds the simulated engines, whose seam reads run in place.
var (
	simInPlace   sync.Map // *engine.Engine → struct{}
	simSeamsOnce sync.Once
)

// inPlaceSeams has seam.Children and seam.Data read in place for the
// simulated engines, and as before for every other.
func inPlaceSeams() {
	simSeamsOnce.Do(func() {
		children, data := seam.Children, seam.Data
		seam.Children = func(eng any, ctx context.Context, p string) ([]string, error) {
			if e, ok := eng.(*engine.Engine); ok {
				if _, sim := simInPlace.Load(e); sim {
					return e.ChildrenInPlace(ctx, p)
				}
			}
			return children(eng, ctx, p)
		}
		seam.Data = func(eng any, ctx context.Context, p string) ([]byte, error) {
			if e, ok := eng.(*engine.Engine); ok {
				if _, sim := simInPlace.Load(e); sim {
					return e.DataInPlace(ctx, p)
				}
			}
			return data(eng, ctx, p)
		}
	})
}

// readParticipants asks lock.Participants of a mutex path on c, on a
// coroutine of c's client.
func (w *world) readParticipants(c *client) {
	p := simPaths[w.rng.IntN(len(simPaths))]
	from, stale := w.model.Zxid(), c.stale
	w.tracef("%s: Participants %s", c.name, p)
	c.goroutine(func() {
		ps, err := lock.Participants(context.Background(), c.eng, p)
		w.check.participants(c, p, from, stale, ps, err)
	})
}

// participants judges an answer of Participants on lockPath, called when
// the model's last zxid was from: some state z of the server, from the
// one after from to the one now, had exactly these lock nodes under
// lockPath but for nodes deleted since z, and each listed node holds by
// its kind's rule in z's listing. An answer that rests on a read a cut
// follower served from its older tree (c.stale moved) is not judged: a
// follower's reads may lag, and ZooKeeper promises nothing else.
func (k *checker) participants(c *client, lockPath string, from int64, stale int, ps []lock.Participant, err error) {
	w := k.w
	if err != nil {
		w.tracef("%s: Participants %s: %v", c.name, lockPath, err)
		return
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = path.Base(p.Node)
	}
	w.tracef("%s: Participants %s answers %v", c.name, lockPath, names)
	if c.stale != stale {
		return
	}
	k.participantReads++
	to := w.model.Zxid()
	lives := w.model.Lives(lockPath)
	// Every state the nodes change in is after some create or delete:
	// from, and each of those between from and to.
	states := []int64{from}
	for _, l := range lives {
		for _, z := range []int64{l.Created, l.Deleted} {
			if z > from && z <= to {
				states = append(states, z)
			}
		}
	}
	for _, z := range states {
		if participantsOf(lives, z, to, ps) {
			return
		}
	}
	w.fail("outcome: %s's Participants of %s (zxids %d to %d) answered %v, which is no state of the server meanwhile: %s",
		c.name, lockPath, from, to, describeParticipants(ps), lifeNames(lives, from))
}

// participantsOf reports whether ps is what Participants lists of the
// state after zxid z: the lock nodes alive then, in queue order, but for
// those deleted by to, each holding as z's listing says.
func participantsOf(lives []zkmodel.Life, z, to int64, ps []lock.Participant) bool {
	var alive []string
	gone := make(map[string]bool)
	for _, l := range lives {
		name := path.Base(l.Path)
		if _, ok := queue.Parse(name); !ok || !l.Alive(z, z) {
			continue
		}
		alive = append(alive, name)
		gone[name] = l.Deleted != 0 && l.Deleted <= to
	}
	listing := queue.NewListing(alive)
	i := 0
	for _, n := range listing.Nodes() {
		if i < len(ps) && path.Base(ps[i].Node) == n.Name {
			var holds bool
			switch n.Kind {
			case queue.KindRead:
				holds = listing.Read(n.Name).Holds
			case queue.KindWrite:
				holds = listing.Write(n.Name).Holds
			case queue.KindMutex:
				holds = listing.Mutex(n.Name).Holds
			}
			if ps[i].Holds != holds || ps[i].Kind != n.Kind {
				return false
			}
			i++
			continue
		}
		if !gone[n.Name] {
			return false // alive throughout, yet left out
		}
	}
	return i == len(ps)
}

func describeParticipants(ps []lock.Participant) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = path.Base(p.Node)
		if p.Holds {
			s[i] += " (holds)"
		}
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// readsStale counts, on c, a read request that reaches a follower cut
// from its leader: the follower answers it from its older tree.
func (c *client) readsStale(req zkmodel.Request) {
	if c.w.ens == nil || !c.w.model.CutOff(c.member) {
		return
	}
	if slices.Contains([]zkmodel.OpKind{zkmodel.OpExists, zkmodel.OpGetData, zkmodel.OpGetChildren}, req.Op) {
		c.stale++
	}
}
