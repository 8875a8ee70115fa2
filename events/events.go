// Package events is what the engine tells its observers (Config.Observer):
// one Report per step of a contender's life, from Acquiring to the end of
// its lease.
package events

import "github.com/turnstile-go/turnstile/queue"

// ReportKind names something an observer is told about.
type ReportKind int

const (
	Granted ReportKind = iota
	Released
	Lost
	Suspended
	Resumed
	Cancelled
	Failed
	Revoked
	// Acquiring: the loop took an acquisition in, before any request for
	// it. Exactly one Granted, Failed or Cancelled with the same ID follows.
	Acquiring
)

var reportKinds = [...]string{"granted", "released", "lost", "suspended", "resumed", "cancelled", "failed", "revoked", "acquiring"}

// String is the kind's lower-case name, for logs.
func (k ReportKind) String() string {
	if k < 0 || int(k) >= len(reportKinds) {
		return "unknown"
	}
	return reportKinds[k]
}

// Report is what the engine tells observers about one contender.
type Report struct {
	Kind ReportKind
	// ID names the contender, uniquely within one engine: every report
	// about one acquisition, and about the lease it was granted, carries the
	// same ID, so an observer can pair an Acquiring with its Granted, and a
	// Granted with the Released or Lost that ends the lease.
	ID   uint64
	Path string // the lock path
	Node string // the contender's node name, when it has one
	// NodeKind, for Acquiring, is the kind of node the acquisition makes
	// (engine.Request.Kind): what its recipe asks for. It tells an
	// acquisition that may wait for good, such as an election candidate
	// (queue.KindLatch) or an election's observer (queue.KindObserver,
	// which is never granted), from a lock's waiter before it has a node.
	NodeKind queue.Kind
	// Token, for Granted, Released and Lost, is the zxid of the node's
	// grant: the lease's fencing token (engine.Lease.Token) is that zxid
	// shifted left by 12 bits, and a lease passed among one
	// engine's waiters (lock cohorting) adds its pass number, which no
	// report carries. Compare reports' tokens with each other only.
	Token int64
	Err   error // for Failed, Lost and Cancelled
	// Carrier: the contender is a node acquired for a cohort of the
	// engine's acquisitions (lock cohorting), passed among them; each of
	// them is reported as an acquisition of its own, with Member. An
	// observer that counts callers' acquisitions counts members and
	// skips carriers.
	Carrier bool
	// Member: the acquisition joined a cohort, and is granted a cohort's
	// node (its Granted names the node, and its Token is the node's),
	// whether the node was acquired for it or passed to it. Its reports
	// come from the loop too, in the order they happened, but not in
	// order with its carrier's.
	Member bool
}
