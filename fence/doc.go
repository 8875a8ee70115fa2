// Package fence is the resource's side of a lock's fencing token: it
// admits a write carrying the token of a grant only if no write with a
// greater token of the same lock was admitted before it, and makes the
// check and the write one atomic step in the store.
//
// A holder of a turnstile lock can stall (a GC pause, a stopped VM) past
// its session, lose the lock to another holder and then, waking, write
// what it read before the stall. ZooKeeper refuses such a write when it
// goes to ZooKeeper (Lease.Guarded); a write to another store is refused
// only if that store checks the token. Every grant of a lock path carries
// a greater token than the one before it (Lease.Token), so a store that
// remembers the greatest token it admitted can refuse the stalled holder:
// its token is below the one of the holder that wrote meanwhile.
//
// A Verifier is bound to one lock path when it is made, and checks the
// path a request names against it: tokens are ZooKeeper zxids, which rise
// across the whole ensemble, so a token of another lock, granted later,
// would be greater than every token of this one. The write runs inside
// the check (Verifier.Do), so that no caller can check, then write after
// another holder's check.
//
// The stores: Memory, for a process that owns its data; package sqlfence,
// which does the check inside the caller's database/sql transaction;
// package httpfence, which carries the token on HTTP requests and admits
// them by a Verifier at the service that owns the data.
//
// What fencing cannot do: it orders the writes that reach a store that
// checks; a store that cannot check and write atomically, or a side
// effect outside the store (an e-mail sent, a call to another service),
// is not fenced by it. And a token is a number any caller can send: a
// fence keeps honest holders that stalled from overwriting newer writes,
// it does not authenticate them (see Holds, and package httpfence).
package fence
