package zkmodel_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/internal/zkmodel"
)

var (
	firstSeed = flag.Int64("zkmodel.seed", 1, "the first seed TestDifferentialRandom runs")
	sequences = flag.Int("zkmodel.sequences", 40, "how many seeds TestDifferentialRandom runs, from -zkmodel.seed on")
	seqSteps  = flag.Int("zkmodel.steps", 40, "random steps per sequence of TestDifferentialRandom")
)

// TestDifferentialRandom runs random sequences of requests of three
// sessions on a few paths, each on the model and on the real server in
// lockstep, and compares them after every step as the scripts are. A seed
// makes one sequence: the requests are drawn from it and from replies that
// were just found equal on both sides, so a seed replays exactly.
//
// Not drawn here (the scripts cover them): disconnects and expiries, which
// cost seconds of real time each on a real server, and container reaping,
// which the shared server never does.
func TestDifferentialRandom(t *testing.T) {
	var passed, steps atomic.Int64
	seen := make(map[string]int) // what the sequences exercised, from the model's transcripts
	for i := range *sequences {
		seed := *firstSeed + int64(i)
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			d := newDifferential(t, realZK, modelConfig)
			g := &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), p: fmt.Sprintf("/rand-%d", seed)}
			g.run(d, *seqSteps)
			passed.Add(1)
			steps.Add(int64(d.steps))
			for _, lines := range d.model.transcript().render() {
				for _, l := range lines {
					for _, w := range exercised {
						if strings.Contains(l, w) {
							seen[w]++
						}
					}
				}
			}
		})
		if !ok {
			t.Logf("replay: go test -run 'TestDifferentialRandom/seed=%d$' ./internal/zkmodel -zkmodel.seed=%d -zkmodel.sequences=1 -zkmodel.trace",
				seed, seed)
		}
	}
	t.Logf("random sequences compared to the end: %d of %d (seeds %d to %d), %d steps",
		passed.Load(), *sequences, *firstSeed, *firstSeed+int64(*sequences)-1, steps.Load())
	t.Logf("lines with: %v", seen)
	// A generator that stopped producing some outcome would leave it
	// untested while the comparison still passes; a full run must show
	// every one.
	if *sequences >= 20 && passed.Load() == int64(*sequences) {
		for _, w := range exercised {
			if seen[w] == 0 {
				t.Errorf("no random sequence produced %q", w)
			}
		}
	}
}

// exercised are the outcomes a full random run must produce, as they
// appear in transcript lines.
var exercised = []string{
	"event NodeCreated", "event NodeDeleted", "event NodeDataChanged", "event NodeChildrenChanged",
	"-> OK", "NoNode", "NodeExists", "NotEmpty", "BadVersion", "NoChildrenForEphemerals",
	"RuntimeInconsistency", "owner s", `-0000000`,
}

// generator draws one random sequence under its path p. It draws paths
// from those it has seen created, mostly from those the model holds now
// (the model and the server agreed on everything so far), so that most
// requests act on something; the rest probe the errors.
type generator struct {
	rng   *rand.Rand
	p     string
	known []string // every path seen created, p first
	live  []int    // the sessions in use, by index
	next  int      // the next session's index
	has   func(p string) bool
}

func (g *generator) run(d *differential, steps int) {
	g.has = d.modelHas
	g.known = []string{g.p}
	for range 3 {
		g.connect(d)
	}
	d.do(0, mkCreate(g.p, zkmodel.Persistent, ""))
	for range steps {
		g.step(d)
	}
	// Compare the whole tree, then end every session.
	g.walk(d, g.p)
	for len(g.live) > 0 {
		d.close(g.live[0])
		g.live = g.live[1:]
	}
}

func (g *generator) connect(d *differential) {
	d.connect(20 * time.Second)
	g.live = append(g.live, g.next)
	g.next++
}

func (g *generator) step(d *differential) {
	k := g.live[g.rng.IntN(len(g.live))]
	switch r := g.rng.IntN(100); {
	case r < 25:
		g.learn(d.do(k, g.create(true)))
	case r < 35:
		d.do(k, mkDelete(g.path(), g.version()))
	case r < 45:
		d.do(k, mkSet(g.path(), g.data(), g.version()))
	case r < 72:
		read := []func(string, bool) zkmodel.Request{mkExists, mkGet, mkChildren}[g.rng.IntN(3)]
		p := g.path()
		if g.rng.IntN(4) == 0 {
			p = g.fresh()
		}
		d.do(k, read(p, g.rng.IntN(3) > 0))
	case r < 75:
		d.do(k, zkmodel.Request{Op: zkmodel.OpSync, Path: g.path()})
	case r < 97:
		ops := make([]zkmodel.Request, 1+g.rng.IntN(4))
		for i := range ops {
			switch g.rng.IntN(4) {
			case 0:
				ops[i] = g.create(false)
			case 1:
				ops[i] = mkDelete(g.path(), g.version())
			case 2:
				ops[i] = mkSet(g.path(), g.data(), g.version())
			case 3:
				ops[i] = mkCheck(g.path(), g.version())
			}
		}
		g.learn(d.do(k, mkMulti(ops...)))
	default:
		d.close(k)
		g.live = slices.DeleteFunc(g.live, func(x int) bool { return x == k })
		g.connect(d)
	}
}

// create draws a create under a node that exists, mostly. Inside a multi
// it never uses the container mode: go-zookeeper cannot read such a
// multi's reply.
func (g *generator) create(alone bool) zkmodel.Request {
	modes := []zkmodel.Mode{zkmodel.Persistent, zkmodel.Ephemeral, zkmodel.PersistentSequential, zkmodel.EphemeralSequential}
	if alone {
		modes = append(modes, zkmodel.Container)
	}
	mode := modes[g.rng.IntN(len(modes))]
	req := mkCreate(g.fresh(), mode, g.data())
	switch {
	case mode == zkmodel.PersistentSequential || mode == zkmodel.EphemeralSequential:
		req.Path = path.Dir(req.Path) + []string{"/s-", "/"}[g.rng.IntN(2)]
	case alone && g.rng.IntN(3) == 0:
		req = mkContainer(req.Path)
	}
	return req
}

// fresh draws a path under a known one, which may exist or not.
func (g *generator) fresh() string {
	return g.path() + "/" + []string{"a", "b", "c"}[g.rng.IntN(3)]
}

func (g *generator) learn(rep zkmodel.Reply) {
	paths := []string{rep.Path}
	for _, r := range rep.Results {
		paths = append(paths, r.Path)
	}
	for _, p := range paths {
		if p != "" && !slices.Contains(g.known, p) {
			g.known = append(g.known, p)
		}
	}
}

// path draws a known path, one the model holds four times in five.
func (g *generator) path() string {
	if g.rng.IntN(5) > 0 {
		var there []string
		for _, p := range g.known {
			if g.has(p) {
				there = append(there, p)
			}
		}
		if len(there) > 0 {
			return there[g.rng.IntN(len(there))]
		}
	}
	return g.known[g.rng.IntN(len(g.known))]
}

func (g *generator) version() int32 {
	if g.rng.IntN(5) < 3 {
		return -1
	}
	return int32(g.rng.IntN(3))
}

func (g *generator) data() string { return []string{"", "x", "yz"}[g.rng.IntN(3)] }

// walk lists and stats the tree under p, on the first live session.
func (g *generator) walk(d *differential, p string) {
	k := g.live[0]
	d.do(k, mkExists(p, false))
	rep := d.do(k, mkChildren(p, false))
	for _, child := range rep.Children {
		g.walk(d, p+"/"+child)
	}
}
