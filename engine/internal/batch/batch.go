// Package batch sends the creates and deletes group commit gathers
// (engine/internal/core/groupcommit.go), and the create of a node on a lock
// path that may not exist yet (core.Op.Cold) with the container creates of
// its path, as ZooKeeper multi requests, and reports each op as if sent
// alone. DESIGN.md, "Cold keys", argues why a node so made holds without a
// listing. It is a package of its own because a multi is a concern of its
// own: the order of its requests, the attribution of its results by
// position, the change of one op after a refusal, the fallback op by op;
// the engine lends it the few calls (Conn, Config.Exec) and counters it
// needs, and knows nothing of how a batch is sent.
package batch

import (
	"errors"
	"fmt"
	"path"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/core"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/engine/internal/zkerr"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// Conn is what a batch asks of the ZooKeeper client.
type Conn interface {
	SessionID() int64
	Multi(ops ...any) ([]zk.MultiResponse, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
}

// Config is what the engine lends a Sender.
type Config struct {
	// Exec sends one op as a request of its own, as the engine's executor
	// does every op that is not in a batch.
	Exec func(core.Op) input.OpDone
	// ACL is the ACL of a node the engine creates at path, a server path.
	ACL func(path string) []zk.ACL
	// Zxid is the greatest zxid seen in a reply header.
	Zxid *atomic.Int64
	// The engine's counts of requests (its Stats): Ops by kind,
	// Containers the container creates of lock paths, Multis the multis
	// sent, Batched the creates and deletes sent inside them.
	Ops                         *[input.NumOpKinds]atomic.Uint64
	Containers, Multis, Batched *atomic.Uint64
}

// Sender sends batches, each on its caller's goroutine; safe for
// concurrent use.
type Sender struct {
	cfg Config
	// noPrune: the server refused a lock path's delete for lack of rights
	// (see fix).
	noPrune atomic.Bool
}

// New makes a Sender.
func New(cfg Config) *Sender { return &Sender{cfg: cfg} }

// CreateFlags: lock nodes are ephemeral and sequential, but for a node
// with a borrowed number.
func CreateFlags(o core.Op) int32 {
	if o.Fixed {
		return zk.FlagEphemeral
	}
	return zk.FlagEphemeralSequential
}

// sentOp is one op of a multi as it is sent: a create preceded,
// in the same multi, by container creates of its lock path and of
// levels-1 of the path's ancestors, the highest first; levels is 0 for an
// op sent alone. prune: a delete followed by the delete of its lock path.
type sentOp struct {
	core.Op
	levels int
	prune  bool
}

// Levels of a request of a multi that are not container creates: the op's
// own request, and the delete of its lock path after it.
const (
	levelOp    = -1
	levelPrune = -2
)

// lockPath is the path of the lock the op's node is a child of.
func (o *sentOp) lockPath() string { return path.Dir(o.Path) }

// container is the path of the container create at level j of the op's
// levels, 0 the highest.
func (o *sentOp) container(j int) string {
	p := o.lockPath()
	for range o.levels - 1 - j {
		p = path.Dir(p)
	}
	return p
}

// maxFixes bounds the multis one batch is sent as while the server refuses
// it for a lock path (or an ancestor) missing, or made meanwhile: each try
// makes one level more or fewer of one op, and clients that make and
// remove the same paths all the while could otherwise keep it going.
const maxFixes = 32

// Send sends creates and deletes as one multi request and reports
// each as if sent alone. A multi is all or nothing. The server refuses it
// whole when a create's lock path is missing (a key used for the first
// time, or a container the server reaped), or a container it was to make
// exists (made by another client, or by an earlier op of the batch): the
// sender then changes that one op (makes the path with it, or makes one
// level fewer) and sends the whole multi again, so that one key's first
// use costs the batch one round trip, never one per op. When it fails for
// any other reason but a lost connection (one op refused, such as a node
// already gone; or a request the client could not send), none of it was
// applied, and each op is sent again on its own so that one op's failure
// is not every op's. After a lost connection the multi's fate is unknown,
// and every op reports the loss: the contenders recover from it.
func (s *Sender) Send(conn Conn, batch []core.Op) []input.OpDone {
	ops := make([]sentOp, len(batch))
	for i, o := range batch {
		ops[i].Op = o
		if o.Cold {
			ops[i].levels = 1
		}
		ops[i].prune = o.Prune && !s.noPrune.Load()
	}
	session := conn.SessionID()
	dones, err := s.multi(conn, ops, session)
	if err == nil {
		return dones
	}
	// Refused as a whole: send each on its own, one after another on
	// this goroutine. It holds the multi's slot, so the requests stay
	// within MaxInFlight; and one at a time, the creates keep the order
	// they were issued in, which is their order in the queue of their lock
	// path. That costs a round trip per op, on a path that is rare (a node
	// gone, a refusal).
	dones = make([]input.OpDone, len(ops))
	for i, o := range ops {
		if conn.SessionID() != session {
			// Sent now, it would be under another session than the one
			// the batch was sent under, which the contender may have
			// heard expire before this reply comes: it recovers.
			dones[i] = input.OpDone{Op: o.Kind, Contender: o.ID, Path: o.Path, Outcome: input.ConnLoss, Err: errSessionChanged}
			continue
		}
		if o.levels == 0 && !o.prune {
			dones[i] = s.cfg.Exec(o.Op)
			continue
		}
		d, err := s.multi(conn, []sentOp{o}, session)
		if err != nil {
			d = []input.OpDone{{Op: o.Kind, Contender: o.ID, Path: o.Path, Outcome: zkerr.Classify(err), Err: err}}
		}
		dones[i] = d[0]
	}
	return dones
}

// multi sends ops as one multi request, again with one op changed while
// the server refuses it for a lock path that is missing or exists (see
// Send), and returns one OpDone per op, in the order of ops. err is
// the refusal of a multi that no such change answers: nothing of it was
// applied. It sends again only under session, the one the first was sent
// under (see Send).
func (s *Sender) multi(conn Conn, ops []sentOp, session int64) (dones []input.OpDone, err error) {
	var (
		lost error   // the multi's fate is unknown, or it was not sent
		g    guesses // lock paths guessed after a refusal (see guesses)
	)
	for try := 0; lost == nil; try++ {
		if try > 0 && conn.SessionID() != session {
			lost = errSessionChanged
			break
		}
		if len(ops) == 1 && ops[0].levels == 0 && !ops[0].prune {
			// A cold create whose path exists after all, or a delete whose
			// path is not to go: a request of its own.
			return []input.OpDone{s.cfg.Exec(ops[0].Op)}, nil
		}
		order := arrange(ops)
		if multiSize(ops) > maxColdMulti && containersIn(ops) {
			// (A prune adds a few bytes to a delete: never this large.)
			if len(ops) > 1 {
				return nil, errColdTooLarge // op by op
			}
			return []input.OpDone{s.execApart(conn, ops[0])}, nil
		}
		reqs, at := s.multiRequests(ops, order)
		res, err := conn.Multi(reqs...)
		zxid := s.cfg.Zxid.Load() // at least the multi's, read after its reply
		switch {
		case err == nil && len(res) == len(reqs):
			return applied(ops, at, res, zxid), nil
		case errors.Is(err, zk.ErrAPIError) && containersIn(ops):
			// go-zookeeper cannot read the result of a container create
			// inside a multi (ZooKeeper answers it as a createContainer,
			// which its Multi does not decode) and stops reading there,
			// though the server applied the multi: a refused multi is
			// answered with error results only, which it reads. The ops
			// before the first container create are read; arrange put
			// every op whose name is not among them after one.
			return applied(ops, at, res, zxid), nil
		case err != nil && zkerr.Classify(err) != input.ConnLoss && zkerr.Classify(err) != input.Closing:
			if try < maxFixes && s.fix(ops, at, res) {
				g.update(ops, at, res)
				continue
			}
			return nil, err
		case err == nil:
			lost = zk.ErrConnectionClosed // a reply that does not match the request
		default:
			lost = err
		}
	}
	dones = make([]input.OpDone, len(ops))
	for i, o := range ops {
		dones[i] = input.OpDone{Op: o.Kind, Contender: o.ID, Path: o.Path, Outcome: zkerr.Classify(lost), Err: lost}
	}
	return dones, nil
}

// errSessionChanged: a request of a batch was not sent, the session having
// changed since the batch's first; its contender recovers as from a lost
// connection (zkerr.Classify finds zk.ErrSessionExpired in it).
var errSessionChanged = fmt.Errorf("turnstile: session changed during a batch: %w", zk.ErrSessionExpired)

// arrange is the order ops are sent in: first, in their order, those on
// lock paths no op of the multi makes; then, in their order, those on the
// paths it makes. Each lock path's ops keep their order (creates on one
// path are its queue), and ops on different paths commute. So the replies
// go-zookeeper can read (see multi) come first, and every create after
// the first container create is on a path made in the multi, whose name
// its place there tells.
func arrange(ops []sentOp) []int {
	var made map[string]bool
	for i := range ops {
		if ops[i].levels > 0 {
			if made == nil {
				made = make(map[string]bool)
			}
			made[ops[i].lockPath()] = true
		}
	}
	order := make([]int, 0, len(ops))
	for i := range ops {
		if !made[ops[i].lockPath()] {
			order = append(order, i)
		}
	}
	for i := range ops {
		if made[ops[i].lockPath()] {
			order = append(order, i)
		}
	}
	return order
}

// containersIn reports whether any op makes its lock path.
func containersIn(ops []sentOp) bool {
	for i := range ops {
		if ops[i].levels > 0 {
			return true
		}
	}
	return false
}

// reqRef says what one request of a multi is: op's own (levelOp), the
// delete of its lock path (levelPrune), or the container create at that
// level of op's.
type reqRef struct{ op, level int }

// multiRequests encodes ops, in order, as a multi's requests, and counts
// them.
func (s *Sender) multiRequests(ops []sentOp, order []int) (reqs []any, at []reqRef) {
	for _, i := range order {
		o := &ops[i]
		for j := range o.levels {
			p := o.container(j)
			reqs = append(reqs, &zk.CreateRequest{Path: p, Acl: s.cfg.ACL(p), Flags: zk.FlagContainer})
			at = append(at, reqRef{i, j})
			s.cfg.Containers.Add(1)
		}
		switch o.Kind {
		case input.OpCreate:
			reqs = append(reqs, &zk.CreateRequest{Path: o.Path, Data: o.Data, Acl: s.cfg.ACL(o.Path), Flags: CreateFlags(o.Op)})
		case input.OpDelete:
			reqs = append(reqs, &zk.DeleteRequest{Path: o.Path, Version: -1})
		}
		at = append(at, reqRef{i, levelOp})
		s.cfg.Ops[o.Kind].Add(1)
		if o.prune {
			reqs = append(reqs, &zk.DeleteRequest{Path: o.lockPath(), Version: -1})
			at = append(at, reqRef{i, levelPrune})
			s.cfg.Ops[input.OpDelete].Add(1) // a delete, in Stats
		}
	}
	s.cfg.Multis.Add(1)
	s.cfg.Batched.Add(uint64(len(reqs)))
	return reqs, at
}

// applied reports each op of a multi the server applied. A create whose
// result was not read is on a lock path the multi made (see arrange): a
// new path's n-th child is numbered n, since its count of children ever
// made starts at 0, and no other request ran between the ops of one
// multi; the children counted are every create under it, containers
// included. The first child of a path the multi made is Fresh.
func applied(ops []sentOp, at []reqRef, res []zk.MultiResponse, zxid int64) []input.OpDone {
	dones := make([]input.OpDone, len(ops))
	made := make(map[string]bool)
	children := make(map[string]int64)
	for k, ref := range at {
		o := &ops[ref.op]
		lp := o.lockPath()
		switch {
		case ref.level >= 0:
			// A container is a child of its parent too: the server
			// counts it when it numbers the parent's next child (a lock
			// path below another, both made here).
			c := o.container(ref.level)
			made[c] = true
			children[path.Dir(c)]++
			continue
		case ref.level == levelPrune:
			// Gone: a create after it in the multi made it again.
			made[lp], children[lp] = false, 0
			dones[ref.op].Pruned = true
			continue
		}
		d := input.OpDone{Op: o.Kind, Contender: o.ID, Path: o.Path, Zxid: zxid}
		if o.Kind == input.OpCreate {
			n := children[lp]
			children[lp]++
			switch {
			case k < len(res) && res[k].Error == nil && res[k].String != "":
				d.Name = path.Base(res[k].String)
			case made[lp] && !o.Fixed:
				d.Name = path.Base(o.Path) + nodename.FormatSeq(n)
			default:
				// Not read, and not on a path the multi made: arrange
				// never sends one so. Made all the same; the recovery
				// read finds it by its protected id.
				d.Outcome, d.Err = input.ConnLoss, errUnreadName
				dones[ref.op] = d
				continue
			}
			d.Fresh = made[lp] && n == 0
		}
		dones[ref.op] = d
	}
	return dones
}

// errUnreadName: a multi made a node whose name its reply did not give.
var errUnreadName = errors.New("turnstile: multi applied, created node's name not in the reply")

// guesses spreads the lesson of one refusal over the whole multi. The
// server answers a refused multi with its first failure only, so fix mends
// one op a round trip: n creates whose lock paths the core guessed wrong
// would cost n round trips of an n-op multi, a cost group commit's cap on
// a batch would bound. Wrong guesses come in bursts of one kind: the
// server reaps every empty container in one pass, so warm creates (on
// paths the core saw lately) find their paths gone together; and creates
// the core guessed cold because its memory of paths (warmPaths) ran out
// find their paths there together. So on the first refusal of a kind,
// every create of that kind not proven yet is guessed the same way, and
// such a burst costs one round trip more, not one per path: a warm create
// refused for a missing lock path makes every other warm create's path
// with it (the first create of each path the multi does not prove), and a
// cold create whose path exists drops the container create of every other
// cold create. A guess never grants wrongly: the server still judges each
// request of the transaction (DESIGN.md, "Cold keys"). A guess found wrong
// (a guessed path refused the other way) is taken back for every op the
// refusal did not reach, and the multi goes on one op a round trip as
// before: a wrong guess costs one round trip. Once per kind and multi.
//
// No guessing bounds the round trips for every mix of missing and live
// paths: a refusal tells of one op past those it proves, and sending ops
// apart at once would pass the in-flight slot the batch holds.
type guesses struct {
	spread  [3]bool // by guess kind: spread once already
	guessed []guess // by op: the guess standing on it, if any
}

type guess int8

const (
	noGuess guess = iota
	reaped        // a warm create's path guessed missing: levels 0 to 1
	live          // a cold create's path guessed existing: levels 1 to 0
)

// update learns from the refusal fix answered, res of the multi at.
func (g *guesses) update(ops []sentOp, at []reqRef, res []zk.MultiResponse) {
	k := refused(res)
	if k < 0 || k >= len(at) {
		return
	}
	ref, err := at[k], res[k].Error
	o := &ops[ref.op]
	var was guess
	if g.guessed != nil {
		was = g.guessed[ref.op]
	}
	// What the refusal showed of the lock path, when fix mended the op
	// for its own lock path (not an ancestor's).
	var found guess
	switch {
	case ref.level == levelOp && errors.Is(err, zk.ErrNoNode) && o.levels == 1:
		found = reaped
	case ref.level >= 0 && errors.Is(err, zk.ErrNodeExists) && o.levels == 0:
		found = live
	default:
		return
	}
	reached := reachedOps(len(ops), at, k)
	switch {
	case was != noGuess && was != found:
		// Wrong: take back every guess of that kind the refusal did not
		// reach. Those it reached were right: their requests passed.
		for i := range ops {
			if g.guessed[i] == was && !reached[i] {
				ops[i].levels = 1 - ops[i].levels
				g.guessed[i] = noGuess
			}
		}
		g.guessed[ref.op] = noGuess // fix mended it
	case was == noGuess && !g.spread[found]:
		g.spread[found] = true
		made := make(map[string]bool) // reaped: lock paths proven, made, or with another op on them
		for i := range ops {
			q := &ops[i]
			if reached[i] || q.levels > 0 || q.Kind != input.OpCreate || q.Fixed {
				made[q.lockPath()] = true
			}
		}
		for i := range ops {
			q := &ops[i]
			if reached[i] || q.Kind != input.OpCreate || q.Fixed {
				continue
			}
			switch {
			case found == reaped && q.levels == 0 && !made[q.lockPath()]:
				made[q.lockPath()] = true // its later creates follow it in the multi
				q.levels = 1
			case found == live && q.levels == 1:
				q.levels = 0
			default:
				continue
			}
			if g.guessed == nil {
				g.guessed = make([]guess, len(ops))
			}
			g.guessed[i] = found
		}
	}
}

// reachedOps marks the ops with a request at or before the k-th of a
// multi: the server checked them before it refused the k-th.
func reachedOps(n int, at []reqRef, k int) []bool {
	reached := make([]bool, n)
	for _, r := range at[:k+1] {
		reached[r.op] = true
	}
	return reached
}

// refused is the index of the request a refused multi failed at: the
// first whose result carries an error (those before it report OK, those
// after it a runtime inconsistency); -1 if none does.
func refused(res []zk.MultiResponse) int {
	for i := range res {
		if res[i].Error != nil {
			return i
		}
	}
	return -1
}

// fix changes the one op of a refused multi that the refusal names, when
// making its lock path (or one level more or fewer of it) answers the
// refusal, and reports whether it did. The failed request is the first
// whose result carries an error: those before it report OK, those after
// it a runtime inconsistency.
func (s *Sender) fix(ops []sentOp, at []reqRef, res []zk.MultiResponse) bool {
	k := refused(res)
	if k < 0 || k >= len(at) {
		return false
	}
	ref, err := at[k], res[k].Error
	o := &ops[ref.op]
	switch {
	case ref.level == levelPrune:
		// Something else is on the path (another client's node), or it is
		// gone already: the node's delete goes alone. Refused for lack of
		// rights (the path's parent lets this engine create children but
		// not delete them), it would be refused every time: the server
		// reaps the engine's paths from then on.
		if zkerr.NoAuth(err) {
			s.noPrune.Store(true)
		}
		o.prune = false
		return true
	case ref.level >= 0 && errors.Is(err, zk.ErrNodeExists):
		// That container exists, and with it every level above: make only
		// those below it (none: a plain create).
		o.levels -= ref.level + 1
		return true
	case ref.level == 0 && errors.Is(err, zk.ErrNoNode) && path.Dir(o.container(0)) != "/":
		o.levels++ // its parent is missing too
		return true
	case ref.level == levelOp && o.Kind == input.OpCreate && !o.Fixed && o.levels == 0 && errors.Is(err, zk.ErrNoNode):
		// The lock path is missing (a key used for the first time, or
		// reaped since this engine used it): make it with the node. Never
		// for a node with a borrowed number, whose place is gone with the
		// path.
		o.levels = 1
		return true
	}
	return false
}

// maxColdMulti bounds the encoded size of a multi that makes lock paths.
// The server resets the connection on a request past its jute.maxbuffer
// (0xfffff bytes by default), and a node's data may take nearly all of
// that (MaxDataLen): the container creates of its path (up to MaxPathLen
// bytes each, and one per missing level) would push it over. Past this
// bound, the path is made by requests of its own (execApart).
const maxColdMulti = 512 << 10

// errColdTooLarge: a batch that makes lock paths grew past maxColdMulti
// (each missing level adds a container create); its ops go one by one.
var errColdTooLarge = errors.New("turnstile: multi that makes lock paths too large")

// multiSize is the encoded size of ops as one multi, near enough: each
// request's header, paths, data and the ACL of the path.
func multiSize(ops []sentOp) int {
	const header = 4 + 1 + 4
	n := 4 + 4 + header
	for i := range ops {
		o := &ops[i]
		for j := range o.levels {
			n += header + 4 + len(o.container(j)) + 4 + 4 + 4 + 64 // an ACL as large as the node's, roughly
		}
		n += header + 4 + len(o.Path) + 4 + len(o.Data) + 4 + 4 + 64
		if o.prune {
			n += header + 4 + len(o.lockPath()) + 4
		}
	}
	return n
}

// execApart makes a cold op's lock path and then its node by requests of
// their own, one after the other, on this goroutine: for a node whose data
// leaves no room for the containers in one request. The path is made
// bottom up, so an existing parent costs one request. The node was the
// path's only child when made if the container create of the lock path
// succeeded (the path did not exist, and a container that never had a
// child is not reaped, so it is the same znode at the create) and the
// node is numbered 0 (no child was made there before it): Fresh, as from
// a multi. Unlike a multi, a connection lost between the two requests
// leaves the path without a child if the acquisition then ends; nodes so
// large are rare.
func (s *Sender) execApart(conn Conn, o sentOp) input.OpDone {
	made, err := s.makePath(conn, o.lockPath())
	if err != nil {
		return input.OpDone{Op: o.Kind, Contender: o.ID, Path: o.Path, Outcome: zkerr.Classify(err), Err: err}
	}
	d := s.cfg.Exec(o.Op)
	if n, ok := queue.Parse(d.Name); ok && d.Outcome == input.OK && made && n.Seq == 0 {
		d.Fresh = true
	}
	return d
}

// makePath creates p, and any missing ancestor, as containers; made
// reports whether p itself was created by this call.
func (s *Sender) makePath(conn Conn, p string) (made bool, err error) {
	s.cfg.Containers.Add(1)
	_, err = conn.CreateContainer(p, nil, zk.FlagContainer, s.cfg.ACL(p))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrNodeExists):
		return false, nil
	case errors.Is(err, zk.ErrNoNode) && path.Dir(p) != "/":
		if _, err := s.makePath(conn, path.Dir(p)); err != nil {
			return false, err
		}
		return s.makePath(conn, p)
	}
	return false, err
}
