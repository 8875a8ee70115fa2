// Command turnstile shows and steers the locks and elections that
// turnstile, Apache Curator and kazoo clients hold on a ZooKeeper
// ensemble: who holds a lock or leads an election, who waits and since
// when; it asks a holder that opted in to let go the way Curator's Revoker
// does; and it runs a command while holding a lock or leading an election.
//
// Usage:
//
//	turnstile [flags] locks [PATH]         the locks and elections under PATH (default /), their holders and waiters
//	turnstile [flags] holders PATH         who holds the lock at PATH (an election: its leader)
//	turnstile [flags] revoke PATH [NODE]   ask PATH's holders (or its node NODE) that opted in to let go; -force: any
//	turnstile [flags] watch PATH           print every grant, release and departure at PATH as it happens
//	turnstile [flags] lock PATH -- CMD     run CMD while holding the lock at PATH
//	turnstile [flags] elect PATH -- CMD    run CMD while leading the election at PATH
//	turnstile [flags] elect -observe PATH  print each leader of the election at PATH
//	turnstile version                      the tool's version
//	turnstile help [COMMAND]               the usage, or COMMAND's with its own flags (also: COMMAND -h)
//
// Flags of every command, before or after it:
//
//	-servers host:port,...  the ensemble (default $ZK_SERVERS, else 127.0.0.1:2181)
//	-root /prefix           a chroot-style namespace: PATH is under it, and paths are shown relative to it
//	-auth scheme:creds      credentials added to the session, e.g. digest:user:password
//	-tls-ca FILE            connect with TLS, to the servers' secureClientPort, verifying their
//	                        certificates against the PEM certificates in FILE
//	-tls-cert, -tls-key     TLS, presenting this PEM client certificate and key (ZooKeeper's
//	                        default ssl.clientAuth=need wants one; it is the session's x509 identity)
//	-timeout d              how long to wait for a session (default 10s); lock, elect: for the
//	                        lock or the lead, session included (default: as long as it takes)
//
// Each command's own flags: turnstile help COMMAND.
//
// Exit status: 0 done; 1 the command failed (no session, refused, ...);
// 2 bad usage; 3 no such lock, nothing held, or no such node to revoke
// (lock: not taken within -timeout, or held elsewhere with -try). lock and
// elect exit with their command's status. Errors go to standard error,
// results to standard output.
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
	superviseIfAsked()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
