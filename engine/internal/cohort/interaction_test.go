package cohort

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/turnstile-go/turnstile/queue"
)

// Interaction tests of the cohort machine, in the style of the core's:
// each file under testdata is a script of inputs fed to one machine, each
// followed by the effects it decided. Waiters are numbered by the script
// (w1 is the script's waiter 1); cohorts (c) and node attempts (a) print
// with the ids the machine gave them; cancel groups by the script's names.
//
// Commands (one input each):
//
//	config [passes=N] [hold=D] [linger=D] [fail-on-expiry] [strict-fifo] [yield]   a new machine
//	admits [cohort] [try] [borrowed] [revocable]   (no input) may it join
//	join W [path=P] [kind=mutex|write] [data=D] [ctx=G] [checked] [expiry] [try]
//	granted A [now=D] [listed nodes=N] [lost=closed|expired|lost]
//	failed A [err=E]
//	release W [now=D] [untrusted] [carrier-lost] [fired]
//	watched A [children=(N, ...)] [self=N] [failed] [now=D] [untrusted]
//	lost A [cause=closed|expired|lost]
//	cancel ctx=G
//	seal [path=P]
//	clear [path=P]
//	wake A [now=D] [timer] [fired] [untrusted] [carrier-lost]
//	stats                      (no input) what the machine counted
//
// A waiter's release names the cohort the machine handed it (the last
// hand of that waiter). Paths default to /l, kinds to mutex, data to none.
//
// Use -rewrite to regenerate the expected output after a deliberate change
// (go test ./engine/internal/cohort -run TestCohortInteractions -rewrite),
// then read the diff.
func TestCohortInteractions(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := newScript(Config{})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.run(t, d)
		})
	})
}

// script is one machine and the names the script gave.
type script struct {
	m      *Machine
	groups map[string]uint64 // cancel group names → ids
	names  map[uint64]string // ids → names
	cohort map[uint64]uint64 // waiter → the cohort of its last hand
}

func newScript(cfg Config) *script {
	cfg.Closed, cfg.Expired, cfg.WouldBlock = errClosed, errExpired, errWouldBlock
	cfg, err := cfg.WithDefaults()
	if err != nil {
		panic(err)
	}
	return &script{m: New(cfg), groups: map[string]uint64{}, names: map[uint64]string{}, cohort: map[uint64]uint64{}}
}

var (
	errClosed     = errors.New("closed")
	errExpired    = errors.New("session expired")
	errLost       = errors.New("lost")
	errWouldBlock = errors.New("would block")
)

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	in := Input{}
	arg := func(key string) (string, bool) {
		for _, a := range d.CmdArgs {
			if a.Key == key {
				if len(a.Vals) == 0 {
					return "", true
				}
				return strings.Join(a.Vals, ","), true
			}
		}
		return "", false
	}
	num := func() uint64 {
		var n uint64
		if _, err := fmt.Sscan(d.CmdArgs[0].Key, &n); err != nil {
			t.Fatalf("%s: %s is not a number", d.Pos, d.CmdArgs[0].Key)
		}
		return n
	}
	dur := func(key string) time.Duration {
		v, ok := arg(key)
		if !ok {
			return 0
		}
		x, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %s=%s: %v", d.Pos, key, v, err)
		}
		return x
	}
	has := func(key string) bool { _, ok := arg(key); return ok }
	cause := func(key string) {
		v, ok := arg(key)
		if !ok {
			return
		}
		in.Lost = true
		switch v {
		case "closed":
			in.Err = fmt.Errorf("%w", errClosed)
		case "expired":
			in.Err = fmt.Errorf("%w", errExpired)
		default:
			in.Err = errLost
		}
	}
	switch d.Cmd {
	case "config":
		var passes int
		if v, ok := arg("passes"); ok {
			fmt.Sscan(v, &passes)
		}
		*s = *newScript(Config{MaxPasses: passes, MaxHold: dur("hold"), Linger: dur("linger"), FailOnExpiry: has("fail-on-expiry"),
			StrictFIFO: has("strict-fifo"), YieldToOthers: has("yield")})
		return "ok"
	case "admits":
		if s.m.Admits(Ask{Cohort: has("cohort"), TryOnly: has("try"), Borrowed: has("borrowed"), Revocable: has("revocable")}) {
			return "yes"
		}
		return "no"
	case "stats":
		st := s.m.Stats()
		return fmt.Sprintf("carriers %d, passes %d, yielded %d, bounded %d, renewed %d, waiting %d",
			st.Carriers, st.Passes, st.Yielded, st.Bounded, st.Renewed, st.Waiting)
	case "join":
		in.Kind, in.Waiter = Join, num()
		in.Key = Key{Path: "/l", Kind: queue.KindMutex, FailOnExpiry: has("expiry")}
		if v, ok := arg("path"); ok {
			in.Key.Path = v
		}
		if v, ok := arg("kind"); ok && v == "write" {
			in.Key.Kind = queue.KindWrite
		}
		if v, ok := arg("data"); ok {
			in.Key.Data = []byte(v)
		}
		if v, ok := arg("ctx"); ok {
			in.Group = s.group(v)
		}
		in.Validated, in.Try = has("checked"), has("try")
		if in.Validated {
			in.Req = "req " + in.Key.Path
		}
	case "granted":
		in.Kind, in.Carrier, in.Now = Granted, num(), dur("now")
		in.Seen.Listed = has("listed")
		if v, ok := arg("nodes"); ok {
			fmt.Sscan(v, &in.Seen.Nodes)
		}
		cause("lost")
	case "failed":
		in.Kind, in.Carrier, in.Err = Failed, num(), errors.New("failed")
		if v, ok := arg("err"); ok {
			in.Err = errors.New(v)
		}
	case "release":
		in.Kind, in.Waiter, in.Now = Release, num(), dur("now")
		in.CohortID = s.cohort[in.Waiter]
		in.Trusted, in.CarrierLost, in.Fired = !has("untrusted"), has("carrier-lost"), has("fired")
	case "watched":
		in.Kind, in.Carrier, in.Now = Watched, num(), dur("now")
		in.Trusted, in.Failed = !has("untrusted"), has("failed")
		if v, ok := arg("children"); ok && v != "" {
			in.Children = strings.Split(v, ",")
		}
		in.Self, _ = arg("self")
	case "lost":
		in.Kind, in.Carrier = Lost, num()
		cause("cause")
		if !in.Lost {
			in.Err = errLost
		}
	case "cancel":
		v, _ := arg("ctx")
		in.Kind, in.Group, in.Err = Cancel, s.group(v), errors.New("cancelled "+v)
	case "wake":
		in.Kind, in.Carrier, in.Now, in.Timer = Wake, num(), dur("now"), has("timer")
		in.Trusted, in.CarrierLost, in.Fired = !has("untrusted"), has("carrier-lost"), has("fired")
	case "seal":
		in.Kind, in.Path = Seal, "/l"
		if v, ok := arg("path"); ok {
			in.Path = v
		}
	case "clear":
		in.Kind, in.Path = Clear, "/l"
		if v, ok := arg("path"); ok {
			in.Path = v
		}
	default:
		t.Fatalf("%s: unknown command %s", d.Pos, d.Cmd)
	}
	s.m.Step(&in)
	var out []string
	for _, e := range s.m.Effects() {
		out = append(out, s.format(e))
	}
	if len(out) == 0 {
		return "ok"
	}
	return strings.Join(out, "\n")
}

func (s *script) group(name string) uint64 {
	if id, ok := s.groups[name]; ok {
		return id
	}
	id := uint64(len(s.groups) + 1)
	s.groups[name], s.names[id] = id, name
	return id
}

func (s *script) format(e Effect) string {
	switch e.Kind {
	case NotJoined:
		return fmt.Sprintf("not-joined w%d", e.Waiter)
	case Start:
		return fmt.Sprintf("start c%d a%d with %v", e.CohortID, e.Carrier, e.Req)
	case Abandon:
		return fmt.Sprintf("abandon a%d", e.Carrier)
	case Hand:
		s.cohort[e.Waiter] = e.CohortID
		return fmt.Sprintf("hand w%d node a%d pass %d", e.Waiter, e.Carrier, e.Pass)
	case Fail:
		return fmt.Sprintf("fail w%d: %v", e.Waiter, e.Err)
	case Ended:
		return fmt.Sprintf("ended w%d", e.Waiter)
	case NotHolder:
		return fmt.Sprintf("not-holder w%d", e.Waiter)
	case LoseHolder:
		return fmt.Sprintf("lose-holder w%d: %v", e.Waiter, e.Err)
	case GiveBack:
		if e.Waiter != 0 {
			return fmt.Sprintf("give-back a%d, then w%d's release", e.Carrier, e.Waiter)
		}
		if e.Yield {
			return fmt.Sprintf("give-back a%d at once", e.Carrier)
		}
		return fmt.Sprintf("give-back a%d", e.Carrier)
	case AskWatch:
		return fmt.Sprintf("ask-watch a%d", e.Carrier)
	case Linger:
		return fmt.Sprintf("linger a%d, wake in %v", e.Carrier, e.After)
	case Vouch:
		return fmt.Sprintf("vouch a%d", e.Carrier)
	case Mark:
		return fmt.Sprintf("mark a%d lingering", e.Carrier)
	case Unmark:
		return fmt.Sprintf("unmark a%d: held", e.Carrier)
	case Follow:
		return "follow ctx " + s.names[e.Group]
	case Unfollow:
		return "unfollow ctx " + s.names[e.Group]
	}
	return fmt.Sprintf("unknown effect %d", e.Kind)
}

// The bounds a Config is checked against.
func TestConfigBounds(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{MaxPasses: MaxPasses}, true},
		{Config{MaxPasses: MaxPasses + 1}, false},
		{Config{MaxPasses: -1}, false},
		{Config{MaxHold: -1}, false},
		{Config{Linger: -1}, false},
	} {
		got, err := c.cfg.WithDefaults()
		if (err == nil) != c.ok {
			t.Errorf("%+v: err %v, want ok %v", c.cfg, err, c.ok)
		}
		if err == nil && (got.MaxPasses == 0 || got.MaxHold == 0) {
			t.Errorf("%+v: defaults not given: %+v", c.cfg, got)
		}
	}
}

// Note records the listing that grants a node, and only that one.
func TestNote(t *testing.T) {
	var seen Seen
	holds := false
	decide := Note(func(*queue.Listing, string) queue.Decision { return queue.Decision{Holds: holds} }, &seen)
	l := queue.NewListing([]string{"lock-0000000001", "lock-0000000002"})
	decide(l, "lock-0000000002")
	if seen != (Seen{}) {
		t.Fatalf("a listing that does not grant noted: %+v", seen)
	}
	holds = true
	decide(l, "lock-0000000001")
	if seen != (Seen{Listed: true, Nodes: 2}) {
		t.Fatalf("the granting listing noted as %+v, want listed with 2 nodes", seen)
	}
}
