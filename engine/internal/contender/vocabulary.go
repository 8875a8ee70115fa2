package contender

import (
	"fmt"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/queue"
)

// The machine's vocabulary: the phases it goes through, the inputs the
// engine's core feeds it, the effects it asks the core to carry out, and
// the recipe's verdict it decides on.

// Phase is where a machine stands: which request of its own, if any, it
// awaits the reply to.
type Phase int

const (
	Unstarted Phase = iota // made; Start not yet stepped
	Creating               // create in flight
	Listing                // waiting for a listing of the lock path
	Watching               // watch on the predecessor in flight
	Waiting                // watch armed; nothing in flight
	Held                   // granted; nothing in flight
	Deleting               // delete of our node in flight
	Parked                 // a request failed on a connection loss; waiting to retry
	Done                   // terminal
)

// phaseNames are the phases as the engine's debug log and its scripted
// tests print them.
var phaseNames = [...]string{"new", "creating", "listing", "watching", "waiting", "held", "deleting", "parked", "done"}

func (p Phase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return "unknown"
	}
	return phaseNames[p]
}

// InputKind names what happened to a machine: the reply to its request, a
// user's command, or a change of the session.
type InputKind int

const (
	Start        InputKind = iota
	Created                // reply to create: Name, or Outcome
	Listed                 // a listing of the lock path
	WatchSet               // reply to the watch request
	WatchFired             // the watched predecessor changed or vanished
	Deleted                // reply to delete
	Release                // the holder releases
	Cancel                 // the caller gave up (context done) or the engine closes
	Disconnected           // connection dropped, session may live
	Reconnected            // connection back, same session
	Expired                // the session is gone, and with it our node
	Untrusted              // the server may already have expired us: no word from it for too long
	Retry                  // time to retry what a connection loss interrupted
	Handoff                // the node we wait for was released by our engine; Pzxid is the token
	Trusted                // the same session answers again, in time
	GrantRefused           // the grant just made was refused: the session stopped being trusted first
	Stopped                // the holder of a lease lost by a lapse has had its margin to stop (see AwaitStop)
)

var inputNames = [...]string{"start", "created", "listed", "watch-set", "watch-fired", "deleted", "release", "cancel", "disconnected", "reconnected", "expired", "untrusted", "retry", "handoff", "trusted", "refused", "stopped"}

func (k InputKind) String() string {
	if k < 0 || int(k) >= len(inputNames) {
		return "unknown"
	}
	return inputNames[k]
}

// Input is one thing that happened to a machine. Kind says which; the
// other fields are set as the kind needs them.
type Input struct {
	Kind     InputKind
	Outcome  input.Outcome // a reply's outcome, as the runtime classified it
	Err      error         // the reply's error, or the cancel's reason
	Name     string        // Created: the node created; Listed: ours, found by a recovery read
	Children []string      // Listed
	Pzxid    int64         // Listed, Handoff, a Fresh Created: the grant's token
	Closing  bool          // Cancel: the engine is closing, so a held lease goes too
	// ChildWatch, with WatchSet: the reply to a children watch, with
	// Children and Pzxid.
	ChildWatch bool
	// Version, with WatchSet of a data watch: the watched node's data
	// version; odd when its engine marked it lingering (Lingering).
	Version int32
	// Revoked, with Version: the node's data is a revocation request
	// (lock.Revoke, Curator's Revoker), whose write moved the version too:
	// the node is held, whatever the version's parity says.
	Revoked bool
	// Foreign, with Listed, the reply to a recovery read: a node carries
	// our id but another session owns it.
	Foreign bool
	// SessionEnded, with GrantRefused: the grant was refused because the
	// session that answered has ended, not because the current one is
	// untrusted.
	SessionEnded bool
	// Fresh, with Created: the request made the node with its lock path,
	// as the path's first child, so no other node was there (see the
	// core's cold.go); Pzxid is the grant's token then.
	Fresh bool
	// Predicted, with Listed: the engine answered from what it knows of
	// the lock path (its listing-free cycle), not from the server. Such a
	// listing misses no child, but may still show children deleted since
	// the engine last listed: it proves none of them is there now.
	Predicted bool
	// Listing is Children parsed and sorted once per reply and shared by
	// every machine the reply is handed to (Listed, and WatchSet of a
	// children watch); nil leaves the parsing to the machine.
	Listing *queue.Listing
}

// parsed is the reply's children as a listing: the engine parses a listing
// shared by many contenders once, and a reply for one contender alone is
// parsed here, when needed.
func (in *Input) parsed() *queue.Listing {
	if in.Listing == nil {
		in.Listing = queue.NewListing(in.Children)
	}
	return in.Listing
}

// EffectKind names what a machine asks the engine's core to do.
type EffectKind int

const (
	Create   EffectKind = iota // create an ephemeral sequential node: Path is the full prefix path; Cold: make the lock path too
	List                       // list the lock path's children
	Recover                    // recovery read: sync Path, list it, find the node carrying ID and its owner
	Watch                      // set a data watch on Path (its children's, with Children)
	Delete                     // delete Path
	Grant                      // resolve the acquisition with a lease
	Fail                       // resolve the acquisition with Err
	Released                   // resolve the release with Err (nil: released)
	Suspend                    // the lease's session is disconnected
	Resume                     // the lease's session is back
	Lost                       // the lease is lost, with Err
	Park                       // wait for Retry; Err: the unexpected refusal to retry, if any
	Forget                     // terminal: forget the contender; Err: why our node was left to the session's end, if it was
	// AwaitStop: a lapse of trust lost the lease while the session may
	// live. Its holder was promised the lost margin to stop before anyone
	// else can be granted (the server cannot expire the session sooner),
	// and the node is what keeps everyone else out should the session
	// survive: step Stopped once that margin has passed, not before.
	AwaitStop
)

var effectNames = [...]string{"create", "list", "recover", "watch", "delete", "grant", "fail", "released", "suspend", "resume", "lost", "park", "forget", "await-stop"}

func (k EffectKind) String() string {
	if k < 0 || int(k) >= len(effectNames) {
		return "unknown"
	}
	return effectNames[k]
}

// Effect is one thing a machine asks of the engine's core, in the order
// the step returned them.
type Effect struct {
	Kind      EffectKind
	Path      string
	ID        string // Recover: the protected id to look for
	Token     int64  // Grant: the lease's fencing token
	Err       error
	Children  bool // Watch: watch Path's children, not its data
	Suspended bool // Grant: the connection is down, so the lease starts suspended
	// Cold, with Create: the lock path is missing (the last create found
	// no such node), so the request that makes the node makes the path
	// and its missing ancestors first, as containers.
	Cold bool
}

func (e Effect) String() string {
	switch {
	case e.Path != "" && e.Cold:
		return e.Kind.String() + " " + e.Path + " cold"
	case e.Path != "":
		return e.Kind.String() + " " + e.Path
	case e.Err != nil:
		return e.Kind.String() + ": " + e.Err.Error()
	case e.Kind == Grant && e.Suspended:
		return fmt.Sprintf("grant token=%d suspended", e.Token)
	case e.Kind == Grant:
		return fmt.Sprintf("grant token=%d", e.Token)
	}
	return e.Kind.String()
}

// Decider is a recipe as the machine calls it: from one listing of the lock
// path, does self (the machine's node name) hold, and if not, what does it
// wait for.
type Decider func(l *queue.Listing, self string) queue.Decision

// Lingering reports whether a lock node whose data version is version is
// marked lingering: held by no one, kept by its engine until another
// client shows (the cohort machine's Mark). Each mark and unmark writes
// the node's data again, unchanged, moving the version by one; nothing
// else writes a lock node's data but a revocation request, to a revocable
// holder's node, which never lingers.
func Lingering(version int32) bool { return version%2 == 1 }
