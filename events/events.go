// Package events is what the engine tells its observers (Config.Observer):
// one Report per step of a contender's life, from Acquiring to the end of
// its lease.
package events

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
	// Token, for Granted, Released and Lost, is the zxid of the node's
	// grant: the lease's fencing token (engine.Lease.Token) is that zxid
	// shifted left by 12 bits, and a lease passed among one
	// engine's waiters (lock cohorting) adds its pass number, which no
	// report carries. Compare reports' tokens with each other only.
	Token int64
	Err   error // for Failed, Lost and Cancelled
}
