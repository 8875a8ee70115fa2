package core

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// Interaction tests of the core, in the style of etcd raft's: each file
// under testdata is a script of events fed to one core, each followed
// by what the core decided. Contenders are named in the scripts; their
// protected ids print as <name>, so a node reads _c_<a>-lock-0000000001.
//
// Commands (one event each, then the end of the turn):
//
//	connect session=N          the session is up (the same one, or a new one)
//	disconnect | expire        the connection dropped | the session expired
//	lapse | trust              the watchdog's verdict changed
//	acquire NAME [path=P] [recipe=mutex|read|write] [try] [revocable] [cohort] [ctx=G]
//	                           cohort: it may join a lock cohort; a cohort's
//	                           node is named by its first member's name in
//	                           capitals (A for a), and its nodes read <a>
//	created NAME seq=N [zxid=Z] [outcome=O] [fresh]
//	                           fresh: the request made the lock path too
//	listed [path=P] children=(NAME|x:N|w:N|pin, ...) [outcome=O] [pzxid=Z] [cversion=V]
//	                           x:N a mutex node of another client, w:N a writer,
//	                           pin the engine's pin
//	pinned | unpinned [path=P] [outcome=O]   the pin's create or delete answered
//	watch-set NAME [outcome=O] [children=(...)] [version=V]
//	fired NAME|x:N [path=P] [type=deleted|data-changed|children-changed]
//	deleted NAME [zxid=Z] [outcome=O] [pruned]
//	                           pruned: the lock path was deleted too
//	revoke-read NAME [data=D] [outcome=O]
//	release NAME | cancel ctx=G | close | timer ID
//	contenders                 (no event) the live contenders: name, phase, node
//
// A reply to the last op of a request sent is followed, in the same turn,
// by the request's RequestDone, as the runtime posts it.
//
// Use -rewrite to regenerate the expected output after a deliberate change
// (go test ./engine/internal/core -run TestCoreInteractions -rewrite), then read the diff.
func TestCoreInteractions(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := newCoreScript()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.run(t, d)
		})
	})
}

// coreScript is one core and the names the script gave its contenders.
type coreScript struct {
	c        *Core
	watchdog *coreScriptWatchdog
	ids      []string          // protected ids handed out, in order
	names    map[string]string // protected id → contender name
	en       map[string]uint64 // contender name → its entry's id
	who      map[uint64]string // entry id → contender name
	// groups are the cancel groups the script named, and their ids.
	groups map[string]uint64
	// leased are the contenders granted, by name.
	leased map[string]bool
	nextID uint64 // the last contender id given
	// pending is the name the next acquisition takes.
	pending string
	// pins are the names of the pins the core made, printed as ~pin.
	pins []string
	// sent are the requests sent and not all answered: a reply answers one
	// op of one, and the request's last reply is followed by its
	// RequestDone, as the runtime does.
	sent []sentRequest
}

type sentRequest struct {
	ops    []Op
	write  bool
	writes int // the creates and deletes a write request carried
}

// coreScriptWatchdog is the watchdog as a script tells it.
type coreScriptWatchdog struct {
	lapsed  bool
	session int64
}

func (t *coreScriptWatchdog) Admit(_ Grant, session int64) bool {
	return !t.lapsed && session == t.session
}
func (t *coreScriptWatchdog) Forget(uint64)                        {}
func (t *coreScriptWatchdog) Follows(session int64) bool           { return session == t.session }
func (t *coreScriptWatchdog) Vouches(uint64) (bool, time.Duration) { return !t.lapsed, 0 }

func newCoreScript() *coreScript { return newCoreScriptWith(func(*Config) {}, nil) }

// newCoreScriptWith is a script whose core's configuration set changes,
// and whose watchdog, if watchdog is not nil, is watchdog's wrapping of
// the script's.
func newCoreScriptWith(set func(*Config), watchdog func(*coreScriptWatchdog) Admitter) *coreScript {
	s := &coreScript{watchdog: &coreScriptWatchdog{lapsed: true}, names: map[string]string{}, en: map[string]uint64{},
		who: map[uint64]string{}, groups: map[string]uint64{}, leased: map[string]bool{}}
	cfg := Config{MaxInFlight: 8, CloseTimeout: 5 * time.Second, Observe: true, Prune: true,
		CancelErrs: []error{context.Canceled, context.DeadlineExceeded}}
	cfg.NewID = func() string {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", len(s.ids)+1)
		s.ids = append(s.ids, id)
		s.names[id] = s.pending
		return id
	}
	set(&cfg)
	var admitter Admitter = s.watchdog
	if watchdog != nil {
		admitter = watchdog(s.watchdog)
	}
	s.c = New(cfg, admitter)
	return s
}

func (s *coreScript) run(t *testing.T, d *datadriven.TestData) string {
	var ev input.Event
	switch d.Cmd {
	case "connect":
		var id int64
		d.ScanArgs(t, "session", &id)
		s.watchdog.session = id
		ev = input.SessionChanged{State: input.Connected, SessionID: id}
	case "disconnect":
		ev = input.SessionChanged{State: input.Disconnected}
	case "expire":
		s.watchdog.session = 0
		ev = input.SessionChanged{State: input.Expired}
	case "lapse", "trust":
		s.watchdog.lapsed = d.Cmd == "lapse"
		// A lapse carries the margin of a 2s session (its default fifth).
		ev = input.TrustChanged{Lapsed: s.watchdog.lapsed, Expired: d.HasArg("expired")}
		if s.watchdog.lapsed {
			ev = input.TrustChanged{Lapsed: true, Expired: d.HasArg("expired"), Margin: 400 * time.Millisecond}
		}
	case "acquire":
		ev = s.acquire(t, d)
	case "created":
		name := d.CmdArgs[0].Key
		var seq int64
		d.ScanArgs(t, "seq", &seq)
		en := s.entry(t, name)
		node := strings.TrimPrefix(en.c.CreatePath(), en.c.LockPath()+"/") + nodename.FormatSeq(seq)
		if en.c.Borrowed() {
			node = strings.TrimPrefix(en.c.CreatePath(), en.c.LockPath()+"/")
		}
		ev = input.OpDone{Op: input.OpCreate, Contender: en.id, Path: en.c.CreatePath(), Name: node, Outcome: outcomeArg(t, d),
			Zxid: int64Arg(t, d, "zxid"), Fresh: d.HasArg("fresh")}
	case "listed":
		path := pathArg(t, d)
		ev = input.OpDone{Op: input.OpList, Path: path, Children: s.children(t, d), Pzxid: int64Arg(t, d, "pzxid"),
			Cversion: int32(int64Arg(t, d, "cversion")), Outcome: outcomeArg(t, d)}
	case "pinned", "unpinned":
		op := input.OpPin
		if d.Cmd == "unpinned" {
			op = input.OpUnpin
		}
		ev = input.OpDone{Op: op, Path: pathArg(t, d) + "/" + s.pinOf(t, pathArg(t, d)), Outcome: outcomeArg(t, d)}
	case "watch-set":
		en := s.entry(t, d.CmdArgs[0].Key)
		done := input.OpDone{Op: input.OpWatch, Contender: en.id, Path: en.watching, Outcome: outcomeArg(t, d)}
		if d.HasArg("children") {
			done.Op, done.Children = input.OpWatchChildren, s.children(t, d)
		}
		if d.HasArg("version") {
			var v int
			d.ScanArgs(t, "version", &v)
			done.Version = int32(v)
		}
		ev = done
	case "fired":
		typ := input.NodeDeleted
		if d.HasArg("type") {
			var v string
			d.ScanArgs(t, "type", &v)
			typ = map[string]input.WatchType{"deleted": input.NodeDeleted, "data-changed": input.NodeDataChanged,
				"children-changed": input.NodeChildrenChanged}[v]
		}
		target := d.CmdArgs[0].Key
		path := pathArg(t, d) + "/" + s.nodeName(t, target)
		if typ == input.NodeChildrenChanged {
			path = pathArg(t, d)
		}
		ev = input.WatchFired{Type: typ, Path: path}
	case "deleted":
		en := s.entry(t, d.CmdArgs[0].Key)
		ev = input.OpDone{Op: input.OpDelete, Contender: en.id, Path: en.c.NodePath(), Zxid: int64Arg(t, d, "zxid"), Outcome: outcomeArg(t, d),
			Pruned: d.HasArg("pruned")}
	case "revoke-read":
		en := s.entry(t, d.CmdArgs[0].Key)
		var data string
		if d.HasArg("data") {
			d.ScanArgs(t, "data", &data)
		}
		ev = input.OpDone{Op: input.OpRevokeWatch, Contender: en.id, Path: en.c.NodePath(), Data: []byte(data), Outcome: outcomeArg(t, d)}
	case "release":
		name := d.CmdArgs[0].Key
		if !s.leased[name] {
			t.Fatalf("%s: %s holds no lease", d.Pos, name)
		}
		ev = input.Command{Payload: &Release{ID: s.en[name]}}
	case "cancel":
		var g string
		d.ScanArgs(t, "ctx", &g)
		ev = input.Command{Payload: &Cancel{Group: s.groups[g], Cause: context.Canceled}}
	case "close":
		ev = input.Command{Payload: &Close{}}
	case "contenders":
		return s.contenders()
	case "timer":
		id, err := strconv.ParseUint(d.CmdArgs[0].Key, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", d.Pos, err)
		}
		ev = input.TimerFired{ID: id}
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	s.c.Step(ev)
	if d, ok := ev.(input.OpDone); ok {
		if done, answered := s.answer(d); answered {
			s.c.Step(done)
		}
	}
	s.c.EndTurn()
	s.nameCarriers()
	rd := s.c.Ready()
	out := s.print(rd)
	// A listing answered from what the core knows is its own event, which
	// the runtime queues at once: the script hands it over too.
	for _, ev := range slices.Clone(rd.Loopback) { // Ready reuses its lists
		if d, ok := ev.(input.OpDone); ok && d.Op == input.OpList {
			s.c.Step(ev)
			s.c.EndTurn()
			out = strings.TrimSuffix(out, "ok") + s.print(s.c.Ready())
		}
	}
	return strings.TrimSuffix(out, "\n")
}

// nameCarriers names the cohorts' nodes the core made: by their first
// member's name, in capitals (their protected ids were made in its name).
func (s *coreScript) nameCarriers() {
	for id := range s.c.coh.carriers {
		if s.who[id] == "" {
			name := strings.ToUpper(s.pending)
			s.who[id], s.en[name], s.leased[name] = name, id, false
		}
	}
}

// answer strikes the op that d answers off the requests sent; when it was
// the request's last, the request is done.
func (s *coreScript) answer(d input.OpDone) (input.RequestDone, bool) {
	for i, r := range s.sent {
		for j, o := range r.ops {
			if o.Kind == d.Op && o.ID == d.Contender && o.Path == d.Path {
				r.ops = slices.Delete(r.ops, j, j+1)
				s.sent[i] = r
				if len(r.ops) > 0 {
					return input.RequestDone{}, false
				}
				s.sent = slices.Delete(s.sent, i, i+1)
				return input.RequestDone{Write: r.write, Ops: r.writes}, true
			}
		}
	}
	return input.RequestDone{}, false
}

func (s *coreScript) acquire(t *testing.T, d *datadriven.TestData) input.Event {
	name := d.CmdArgs[0].Key
	s.pending = name
	req := Acquire{Path: pathArg(t, d), Kind: queue.KindMutex, Decide: coreScriptDecide(queue.KindMutex)}
	if d.HasArg("recipe") {
		var r string
		d.ScanArgs(t, "recipe", &r)
		switch r {
		case "read":
			req.Kind, req.Decide = queue.KindRead, coreScriptDecide(queue.KindRead)
		case "write":
			req.Kind, req.Decide = queue.KindWrite, coreScriptDecide(queue.KindWrite)
		}
	}
	if d.HasArg("seq") {
		var seq int64
		d.ScanArgs(t, "seq", &seq)
		req.Seq = nodename.FormatSeq(seq)
	}
	req.TryOnly, req.Revocable, req.Cohort = d.HasArg("try"), d.HasArg("revocable"), d.HasArg("cohort")
	if d.HasArg("ctx") {
		var g string
		d.ScanArgs(t, "ctx", &g)
		if s.groups[g] == 0 {
			s.groups[g] = uint64(len(s.groups) + 1)
		}
		req.Cancel = s.groups[g]
	}
	// After every id the core gave too (a cohort's attempts take theirs).
	s.nextID = max(s.nextID, s.c.lastID) + 1
	req.ID = s.nextID
	s.en[name] = req.ID
	s.who[req.ID] = name
	return input.Command{Payload: &req}
}

// coreScriptDecide is the recipe of kind k, as package lock makes it.
func coreScriptDecide(k queue.Kind) contender.Decider {
	return func(l *queue.Listing, self string) queue.Decision {
		var d queue.Decision
		switch k {
		case queue.KindRead:
			d = l.Read(self)
		case queue.KindWrite:
			d = l.Write(self)
		default:
			d = l.Mutex(self)
		}
		return queue.Decision{Holds: d.Holds, Watch: d.Watch, Missing: d.Missing, Next: d.Next}
	}
}

func (s *coreScript) entry(t *testing.T, name string) *entry {
	en := s.c.contenders[s.en[name]]
	if en == nil {
		t.Fatalf("no live contender %s", name)
	}
	return en
}

func pathArg(t *testing.T, d *datadriven.TestData) string {
	if d.HasArg("path") {
		var p string
		d.ScanArgs(t, "path", &p)
		return p
	}
	return "/l"
}

// nodeName is the node a script's token names: a contender's own node, or
// another client's node x:N (a mutex) or w:N (a writer) with number N.
func (s *coreScript) nodeName(t *testing.T, token string) string {
	if token == "pin" {
		return s.pinOf(t, "/l")
	}
	if kind, num, ok := strings.Cut(token, ":"); ok {
		seq, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			t.Fatalf("bad node %q: %v", token, err)
		}
		k := queue.KindMutex
		if kind == "w" {
			k = queue.KindWrite
		}
		return nodename.Protected("ffffffff-ffff-4fff-8fff-ffffffffffff", k) + nodename.FormatSeq(seq)
	}
	en := s.entry(t, token)
	if en.c.Node() == "" {
		t.Fatalf("%s has no node", token)
	}
	return en.c.Node()
}

func (s *coreScript) children(t *testing.T, d *datadriven.TestData) []string {
	var out []string
	for _, a := range d.CmdArgs {
		if a.Key == "children" {
			for _, v := range a.Vals {
				out = append(out, s.nodeName(t, v))
			}
		}
	}
	return out
}

func outcomeArg(t *testing.T, d *datadriven.TestData) input.Outcome {
	if !d.HasArg("outcome") {
		return input.OK
	}
	var v string
	d.ScanArgs(t, "outcome", &v)
	for o := input.OK; o.String() != "unknown"; o++ {
		if o.String() == v {
			return o
		}
	}
	t.Fatalf("%s: unknown outcome %q", d.Pos, v)
	return 0
}

func int64Arg(t *testing.T, d *datadriven.TestData, key string) int64 {
	var v int64
	if d.HasArg(key) {
		d.ScanArgs(t, key, &v)
	}
	return v
}

// pinOf is the name of the pin the core made on path, the latest.
func (s *coreScript) pinOf(t *testing.T, path string) string {
	for i := len(s.pins) - 1; i >= 0; i-- {
		if dir, name, _ := strings.Cut(s.pins[i], "/~"); dir == path {
			return "~" + name
		}
	}
	t.Fatalf("no pin made on %s", path)
	return ""
}

// contenders lists the live contenders: name, phase, node.
func (s *coreScript) contenders() string {
	var b strings.Builder
	for _, en := range s.c.byID() {
		fmt.Fprintf(&b, "%s %v %s\n", s.who[en.id], en.c.Phase(), en.c.Node())
	}
	for _, p := range slices.Sorted(maps.Keys(s.c.listings)) {
		l := s.c.listings[p]
		fmt.Fprintf(&b, "listing %s: %d waiting, %d for the next\n", p, len(l.current), len(l.next))
	}
	if g := s.c.commit; g.inFlight+len(g.writes)+len(g.backlog) > 0 {
		fmt.Fprintf(&b, "requests: %d in flight (%d writes), %d writes queued, %d held back\n",
			g.inFlight, g.writing, len(g.writes), len(g.backlog))
	}
	if b.Len() == 0 {
		return "none"
	}
	return s.readable(b.String())
}

// print writes what the core decided, one action a line, with contenders'
// names for their ids.
func (s *coreScript) print(rd Ready) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	for _, o := range rd.Requests {
		if o.Kind == input.OpPin {
			s.pins = append(s.pins, o.Path)
		}
		line("send %s", s.op(o))
		ops := []Op{o}
		if o.Batch != nil {
			ops = slices.Clone(o.Batch)
		}
		r := sentRequest{ops: ops, write: o.Write}
		if o.Write {
			r.writes = len(ops)
		}
		s.sent = append(s.sent, r)
	}
	for _, t := range rd.Timers {
		line("%v", t)
	}
	for _, a := range rd.Contexts {
		g := "?"
		for name, group := range s.groups {
			if group == a.Group {
				g = name
			}
		}
		if a.Stop {
			line("let go of ctx %s", g)
		} else {
			line("follow ctx %s", g)
		}
	}
	for _, n := range rd.Notices {
		if n.Kind == NoteDropped {
			continue // the runtime's bookkeeping, which users never see
		}
		line("%s", s.notice(n))
	}
	for _, ev := range rd.Loopback {
		if d, ok := ev.(input.OpDone); ok {
			line("loopback %v reply to %s", d.Op, s.who[d.Contender])
			if d.Op == input.OpList {
				line("  children %s token=%d", strings.Join(d.Children, " "), d.Pzxid)
			}
		}
	}
	if rd.StateChanged {
		line("state %v", rd.State)
	}
	if rd.Exit {
		line("exit")
	}
	if b.Len() == 0 {
		return "ok"
	}
	return s.readable(b.String())
}

func (s *coreScript) op(o Op) string {
	if o.Batch != nil {
		parts := make([]string, len(o.Batch))
		for i, b := range o.Batch {
			parts[i] = s.op(b)
		}
		return "multi [" + strings.Join(parts, ", ") + "]"
	}
	str := o.Kind.String() + " " + o.Path
	if o.Cold {
		str += " cold"
	}
	if o.Prune {
		str += " prune"
	}
	if who := s.who[o.ID]; who != "" {
		str += " (" + who + ")"
	}
	return str
}

func (s *coreScript) notice(n Notice) string {
	who := s.who[n.ID]
	if n.Kind == NoteAcquired && n.Err == nil {
		s.leased[who] = true
	}
	text := n.String()
	if n.Kind == NoteReleased && n.FromLease {
		text += " (with the lease's end)"
	}
	kind, rest, _ := strings.Cut(text, " ")
	if rest != "" {
		rest = " " + rest
	}
	return kind + " " + who + rest
}

// readable replaces the protected ids in out by their contenders' names.
func (s *coreScript) readable(out string) string {
	for _, p := range s.pins {
		out = strings.ReplaceAll(out, p[strings.LastIndexByte(p, '/')+1:], "~pin")
	}
	ids := slices.Clone(s.ids)
	for _, id := range ids {
		out = strings.ReplaceAll(out, id, "<"+s.names[id]+">")
	}
	return strings.ReplaceAll(out, "ffffffff-ffff-4fff-8fff-ffffffffffff", "<x>")
}
