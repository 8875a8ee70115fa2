package engine

import "github.com/turnstile-go/turnstile/engine/internal/serverconn"

// SimWire is the simulator's view of one connection (see serverconn).
type SimWire = serverconn.SimWire

// NewSimWire is a connection of e just dialed, feeding e's watchdog.
func (e *Engine) NewSimWire() *SimWire { return serverconn.NewSimWire(e.watchdog, &e.lastZxid) }

// The xids the connection tells apart.
const (
	PingXid         = serverconn.PingXid
	NotificationXid = serverconn.NotificationXid
	SyncXid         = serverconn.SyncXid
)
