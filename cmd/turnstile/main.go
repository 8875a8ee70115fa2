// Command turnstile shows and steers the locks that turnstile, Apache
// Curator and kazoo clients hold on a ZooKeeper ensemble: who holds a lock,
// who waits for it and since when, and it asks a holder to let go the way
// Curator's Revoker does.
//
// Usage:
//
//	turnstile [flags] locks [PATH]        the lock paths under PATH (default /), their holders and waiters
//	turnstile [flags] holders PATH        who holds the lock at PATH
//	turnstile [flags] revoke PATH [NODE]  ask PATH's holders (or its node NODE) to let go
//	turnstile [flags] watch PATH          print every grant, release and departure at PATH as it happens
//
// Flags, before or after the command:
//
//	-servers host:port,...  the ensemble (default $ZK_SERVERS, else 127.0.0.1:2181)
//	-root /prefix           a chroot-style namespace: PATH is under it, and paths are shown relative to it
//	-auth scheme:creds      credentials added to the session, e.g. digest:user:password
//	-tls-ca FILE            connect with TLS, to the servers' secureClientPort, verifying their
//	                        certificates against the PEM certificates in FILE
//	-tls-cert, -tls-key     TLS, presenting this PEM client certificate and key (ZooKeeper's
//	                        default ssl.clientAuth=need wants one; it is the session's x509 identity)
//	-timeout d              how long to wait for a session (default 10s)
//	-json                   locks, holders, watch: JSON instead of text (watch: one object per line)
//	-for d                  watch: stop after d (default: until interrupted)
//
// Exit status: 0 done; 1 the command failed (no session, refused, ...);
// 2 bad usage; 3 no such lock, nothing held, or no such node to revoke.
// Errors go to standard error, results to standard output.
//
// A lock node's age is counted from its creation (ZooKeeper's ctime): for
// a holder that queued first, it includes the wait before the grant, which
// ZooKeeper does not record.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
