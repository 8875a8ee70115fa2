package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/tlsdial"
)

// Exit codes, for shell scripts.
const (
	exitOK    = 0
	exitError = 1 // the command failed: no session, refused, lost connection
	exitUsage = 2 // bad flags or arguments
	exitNone  = 3 // no such lock, nothing held, no such node
)

var (
	// errUsage marks errors in the command line.
	errUsage = errors.New("usage")
	// errNone marks "nothing there": no lock at a path, nothing held, no
	// such node. A script tells it from a failure by the exit code.
	errNone = errors.New("nothing there")
)

// usageError wraps errUsage with what was wrong.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// noneError wraps errNone with what was missing.
func noneError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNone, fmt.Sprintf(format, args...))
}

// options are the flags every command takes, and those of each command.
type options struct {
	servers string
	root    string
	auth    string
	tlsCA   string // PEM file of the CAs the servers' certificates chain to
	tlsCert string // PEM files of the client certificate and its key
	tlsKey  string
	timeout time.Duration
	// timeoutSet: -timeout was given. The commands that take a lock or an
	// election's lead read it as a bound on the whole wait, which has no
	// bound otherwise.
	timeoutSet bool

	json    bool          // locks, holders, watch, elect -observe
	watchOn time.Duration // watch, elect -observe: how long; 0 = until interrupted
	force   bool          // revoke: write the request even to a holder that did not opt in
	try     bool          // lock: fail at once if the lock is not free
	grace   time.Duration // lock, elect: SIGTERM to SIGKILL
	// session and lostMargin are the engine's SessionTimeout and
	// LostMargin (lock, elect); 0 for the engine's defaults.
	session    time.Duration
	lostMargin time.Duration
	owner      string // lock: the owner written into the lock node; elect: the candidate's value
	observe    bool   // elect: print each leader instead of running a command

	tls *tls.Config // from the -tls-* files, by check; nil without TLS
}

// holdFlags registers the flags of the commands that hold while CMD runs.
func holdFlags(fs *flag.FlagSet, o *options) {
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "how long CMD has to exit after SIGTERM before SIGKILL; once the lease is lost, at most the lost margin less a quarter of it")
	fs.DurationVar(&o.session, "session-timeout", 10*time.Second, "the session timeout asked of ZooKeeper")
	fs.DurationVar(&o.lostMargin, "lost-margin", 0, "how long before the server could expire the session the lease counts as lost (default a fifth of -session-timeout)")
}

// register adds the flags every command takes to fs.
func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.servers, "servers", o.servers, "ZooKeeper servers, `host:port,...` (default $ZK_SERVERS, else 127.0.0.1:2181)")
	fs.StringVar(&o.root, "root", o.root, "chroot-style namespace `prefix`: paths are under it and shown relative to it")
	fs.StringVar(&o.auth, "auth", o.auth, "`scheme:credentials` for the session, e.g. digest:user:password")
	fs.StringVar(&o.tlsCA, "tls-ca", o.tlsCA, "connect with TLS (the servers' secureClientPort), verifying the servers against the PEM certificates in `FILE`")
	fs.StringVar(&o.tlsCert, "tls-cert", o.tlsCert, "with -tls-key: present this PEM client certificate (`FILE`)")
	fs.StringVar(&o.tlsKey, "tls-key", o.tlsKey, "the client certificate's PEM private key (`FILE`)")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "how long to wait for a session (default 10s); lock, elect: for the lock or the lead, the session included (default: as long as it takes)")
}

// command is one subcommand: its flags, its arguments, and its body.
type command struct {
	name    string
	args    string // its arguments, for usage
	summary string // one line, for the command list
	about   string // what it does, for its help
	minArgs int
	maxArgs int  // -1: any number (a command to run)
	paths   int  // how many leading arguments are lock paths, checked before connecting
	treeOK  bool // a path argument may be "/"
	// flags registers the command's own flags.
	flags func(fs *flag.FlagSet, o *options)
	// run is the body of a command that reads and writes nodes over a
	// plain session; exec, of one that runs an engine (lock, elect) or
	// needs no server (version). One of them is set.
	run  func(ctx context.Context, s *session, o options, args []string, out io.Writer) error
	exec func(ctx context.Context, o options, args []string, stdout, stderr io.Writer) error
}

func jsonFlag(fs *flag.FlagSet, o *options) {
	fs.BoolVar(&o.json, "json", false, "JSON output")
}

var commands []command

func init() {
	// In init: help refers to commands.
	commands = []command{
		{name: "locks", args: "[PATH]", minArgs: 0, maxArgs: 1, paths: 1, treeOK: true, flags: jsonFlag, run: runLocks,
			summary: "the locks and elections under PATH (default /), their holders and waiters",
			about: `Lists every lock under PATH (default /): mutexes, read-write locks,
semaphores and elections of turnstile, Curator and kazoo, each with its
holders (an election: its leader), then its waiters in queue order (an
election: its other candidates), then an election's observers.`},
		{name: "holders", args: "PATH", minArgs: 1, maxArgs: 1, paths: 1, flags: jsonFlag, run: runHolders,
			summary: "who holds the lock at PATH (an election: its leader)",
			about: `Prints the holders of the lock at PATH: node, client, age, owner. For
an election, its leader. Exit status 3 when nothing is held.`},
		{name: "revoke", args: "PATH [NODE]", minArgs: 1, maxArgs: 2, paths: 1, run: runRevoke,
			flags: func(fs *flag.FlagSet, o *options) {
				fs.BoolVar(&o.force, "force", false, "write the request even into the node of a holder that did not opt in, overwriting its data")
			},
			summary: "ask PATH's holders, or its node NODE, to let go (Curator's revocation)",
			about: `Asks the holders of the lock at PATH (or its contender NODE, by name or
path) to let go, by writing Curator's revocation request (__REVOKE__) into
their nodes. Only a holder that opted in to revocation (turnstile's
lock.WithRevocation, Curator's makeRevocable, kazoo by Curator's
convention) watches its node and lets go; its session's watch on its own
node is how the tool tells (ZooKeeper's wchp four-letter word, asked of
every server of -servers: list them all; the servers' 4lw.commands.whitelist
must allow it, and on a server with very many watches it is a costly
request). A node
whose holder did not opt in, or where the servers do not answer wchp, is
left alone unless -force is given: the request then overwrites the node's
data (turnstile's owner record, Curator's and kazoo's identifiers), and
nobody may act on it.`},
		{name: "watch", args: "PATH", minArgs: 1, maxArgs: 1, paths: 1, run: runWatch,
			flags: func(fs *flag.FlagSet, o *options) {
				jsonFlag(fs, o)
				fs.DurationVar(&o.watchOn, "for", 0, "stop after this long (default: until interrupted)")
			},
			summary: "print every grant, release and departure at PATH as it happens",
			about: `Prints the lock at PATH as it is, then every change as it happens:
queued, granted, released, left; and the session's disconnections. It
runs until interrupted, or for -for.`},
		{name: "lock", args: "PATH [--] CMD [ARGS...]", minArgs: 2, maxArgs: -1, paths: 1, exec: runLock,
			flags: func(fs *flag.FlagSet, o *options) {
				fs.BoolVar(&o.try, "try", false, "fail at once (exit status 3) if the lock is held or waited for")
				holdFlags(fs, o)
				fs.StringVar(&o.owner, "owner", "", "the owner written into the lock node, next to host and pid")
			},
			summary: "run CMD while holding the lock at PATH",
			about: `Takes the mutex at PATH (turnstile's lock.Mutex, which Curator's
InterProcessMutex shares), runs CMD while it holds it, releases it when
CMD exits, and exits with CMD's status. CMD finds in its environment
TURNSTILE_PATH (the lock path), TURNSTILE_NODE (its lock node) and
TURNSTILE_TOKEN (the lease's fencing token, which grows with every grant of
the lock: hand it to what CMD writes to, so that a late write is refused).
The lease is lost a margin before the server could expire the session
(-lost-margin, a fifth of -session-timeout by default: 2s of 10s). The
moment it is, CMD's whole tree (its process group, and on Linux every
process it started) gets SIGTERM, then SIGKILL after -grace, cut to the
margin less a quarter of it (1.5s by default), so that it is gone before
another client can be granted the lock; a margin that leaves under 100ms
for SIGTERM is refused. The exit status is then CMD's, or 1 where CMD
exited 0. An interrupt or SIGTERM to turnstile stops CMD the same way,
after the whole -grace while the lock holds. If turnstile dies (SIGKILL,
the OOM killer), a supervisor process between it and CMD kills CMD's tree
at once; what CMD leaves running when it exits is killed too, before the
lock is released. Not promised: a turnstile stopped (SIGSTOP, a frozen
machine) does not see the loss; a process in uninterruptible sleep dies
only when its I/O ends; what CMD handed the kernel (a write in flight)
may land later. Against those, hand TURNSTILE_TOKEN to the store CMD
writes to, which then refuses a late write.
Exit status: CMD's; 1 the lock was not taken (no session, ...); 2 usage;
3 not taken within -timeout, or held elsewhere with -try.`},
		{name: "elect", args: "PATH [--] CMD [ARGS...] | -observe PATH", minArgs: 1, maxArgs: -1, paths: 1, exec: runElect,
			flags: func(fs *flag.FlagSet, o *options) {
				fs.BoolVar(&o.observe, "observe", false, "print each leader of the election at PATH instead of running a command")
				fs.BoolVar(&o.json, "json", false, "-observe: one JSON object per line")
				fs.DurationVar(&o.watchOn, "for", 0, "-observe: stop after this long (default: until interrupted)")
				holdFlags(fs, o)
				fs.StringVar(&o.owner, "id", defaultID(), "the candidate's value (Curator's participant id)")
			},
			summary: "run CMD while leading the election at PATH; -observe: print each leader",
			about: `Campaigns in the election at PATH (turnstile's election.Election, which
Curator's LeaderLatch shares) and, once elected, runs CMD while it leads,
as lock runs it while it holds a lock: TURNSTILE_PATH, TURNSTILE_NODE and
TURNSTILE_TOKEN in its environment, SIGTERM then SIGKILL the moment the
leadership is lost, CMD's exit status. With -observe, it runs no command:
it prints the leader, then each change of leader, until interrupted or
for -for.`},
		{name: "process", args: "URL", minArgs: 1, maxArgs: 1, flags: jsonFlag, exec: runProcess,
			summary: "what one process holds and queues, from the status handler it serves at URL",
			about: `Reads, from the handler a process serves with package status (as it
serves net/http/pprof), what its engine holds and queues: its session, the
nodes it holds with their tokens, the nodes it has queued on ZooKeeper,
and how many of its acquisitions wait in cohorts behind its own nodes,
which no listing of ZooKeeper shows. -timeout bounds the request.`},
		{name: "version", args: "", minArgs: 0, maxArgs: 0, exec: runVersion,
			summary: "print the tool's version",
			about:   `Prints the tool's version and the module versions it was built from.`},
		{name: "help", args: "[COMMAND]", minArgs: 0, maxArgs: 1, exec: runHelp,
			summary: "print the usage of the tool, or of COMMAND",
			about:   `Prints the usage of the tool, or of COMMAND with its own flags.`},
	}
}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// usage is the tool's usage: its commands and the flags every command
// takes.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: turnstile [flags] COMMAND [flags] ARGS\n\ncommands:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, c.args, c.summary)
	}
	tw.Flush()
	b.WriteString("\nflags of every command:\n")
	var o options
	fs := newFlagSet("turnstile")
	o.register(fs)
	b.WriteString(defaults(fs))
	b.WriteString("\n'turnstile help COMMAND' or 'turnstile COMMAND -h' shows a command's own flags.\n")
	b.WriteString("exit status: 0 ok, 1 error, 2 usage, 3 no such lock / nothing held / no such node\n")
	return b.String()
}

// commandUsage is one command's usage: what it does, its own flags, and
// those every command takes.
func commandUsage(c *command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: turnstile [flags] %s [flags] %s\n\n%s\n", c.name, c.args, c.about)
	if c.flags != nil {
		var o options
		fs := newFlagSet("turnstile " + c.name)
		c.flags(fs, &o)
		b.WriteString("\nflags:\n")
		b.WriteString(defaults(fs))
	}
	if c.run != nil || c.name == "lock" || c.name == "elect" || c.name == "process" {
		var o options
		fs := newFlagSet("turnstile")
		o.register(fs)
		b.WriteString("\nflags of every command:\n")
		b.WriteString(defaults(fs))
	}
	return b.String()
}

func defaults(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}

// run is the whole command: it parses args, runs the command against the
// ensemble, writes results to stdout and errors to stderr, and returns the
// exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := runCommand(ctx, args, stdout, stderr)
	var status exitStatus
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &status):
		if status.msg != "" {
			fmt.Fprintf(stderr, "turnstile: %s\n", status.msg)
		}
		return status.code
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		var u *usageErr
		text := usage()
		if errors.As(err, &u) && u.cmd != nil {
			text = commandUsage(u.cmd)
		}
		fmt.Fprintf(stderr, "turnstile: %v\n\n%s", err, text)
		return exitUsage
	case errors.Is(err, errNone):
		fmt.Fprintf(stderr, "turnstile: %v\n", err)
		return exitNone
	}
	fmt.Fprintf(stderr, "turnstile: %v\n", err)
	return exitError
}

// exitStatus ends the tool with a status of its own: a command's (lock,
// elect), with what to say on stderr, if anything.
type exitStatus struct {
	code int
	msg  string
}

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d: %s", e.code, e.msg) }

// usageErr is a usage error of one command, whose usage it shows.
type usageErr struct {
	cmd *command
	err error
}

func (u *usageErr) Error() string { return u.err.Error() }
func (u *usageErr) Unwrap() error { return u.err }

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := options{servers: os.Getenv("ZK_SERVERS"), timeout: 10 * time.Second}
	if o.servers == "" {
		o.servers = "127.0.0.1:2181"
	}
	global := newFlagSet("turnstile")
	o.register(global)
	if err := parseFlags(global, args, stdout, usage); err != nil {
		return err
	}
	if global.NArg() == 0 {
		return usageError("no command")
	}
	name := global.Arg(0)
	cmd := findCommand(name)
	if cmd == nil {
		return usageError("unknown command %q", name)
	}
	err := runNamed(ctx, cmd, &o, global, stdout, stderr)
	if errors.Is(err, errUsage) {
		var u *usageErr
		if !errors.As(err, &u) {
			err = &usageErr{cmd: cmd, err: err}
		}
	}
	return err
}

func runNamed(ctx context.Context, cmd *command, o *options, global *flag.FlagSet, stdout, stderr io.Writer) error {
	fs := newFlagSet("turnstile " + cmd.name)
	o.register(fs)
	if cmd.flags != nil {
		cmd.flags(fs, o)
	}
	rest := global.Args()[1:]
	// A command to run follows "--": none of it is the tool's.
	var tail []string
	if cmd.maxArgs < 0 {
		if i := slices.Index(rest, "--"); i >= 0 {
			rest, tail = rest[:i], rest[i+1:]
		}
	}
	pos, err := parseInterspersed(fs, rest, stdout, func() string { return commandUsage(cmd) })
	if err != nil {
		return err
	}
	pos = append(pos, tail...)
	for _, f := range []*flag.FlagSet{global, fs} {
		f.Visit(func(f *flag.Flag) {
			if f.Name == "timeout" {
				o.timeoutSet = true
			}
		})
	}
	if len(pos) < cmd.minArgs || cmd.maxArgs >= 0 && len(pos) > cmd.maxArgs {
		return usageError("%s takes %s; got %d argument(s)", cmd.name, cmd.args, len(pos))
	}
	if err := o.check(); err != nil {
		return err
	}
	// Paths are checked before any connection is made: a typo is a usage
	// error, not a wait for a session.
	for _, p := range pos[:min(cmd.paths, len(pos))] {
		if err := checkPath(p, cmd.treeOK); err != nil {
			return err
		}
	}
	if cmd.exec != nil {
		return cmd.exec(ctx, *o, pos, stdout, stderr)
	}
	s, err := dial(ctx, *o)
	if err != nil {
		return err
	}
	defer s.close()
	return cmd.run(ctx, s, *o, pos, stdout)
}

// newFlagSet returns a flag set that returns its errors instead of
// printing them and exiting: run reports them.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses fs's flags up to the first argument that is none. A
// flag error is a usage error; -h prints help() on stdout.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer, help func() string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, help())
		return err
	}
	return fmt.Errorf("%w: %v", errUsage, err)
}

// parseInterspersed parses fs's flags wherever they stand among the
// positional arguments ("holders /jobs/42 -json"), and returns the
// positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string, stdout io.Writer, help func() string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args, stdout, help); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// runHelp prints the tool's usage, or a command's.
func runHelp(_ context.Context, _ options, args []string, stdout, _ io.Writer) error {
	if len(args) == 0 {
		_, err := fmt.Fprint(stdout, usage())
		return err
	}
	c := findCommand(args[0])
	if c == nil {
		return usageError("help: unknown command %q", args[0])
	}
	_, err := fmt.Fprint(stdout, commandUsage(c))
	return err
}

// check validates the flags that need more than their type.
func (o *options) check() error {
	if strings.TrimSpace(o.servers) == "" {
		return usageError("-servers is empty")
	}
	if o.timeout <= 0 {
		return usageError("-timeout must be positive")
	}
	if o.watchOn < 0 {
		return usageError("-for must not be negative")
	}
	if o.grace < 0 {
		return usageError("-grace must not be negative")
	}
	if o.session < 0 || o.lostMargin < 0 {
		return usageError("-session-timeout and -lost-margin must not be negative")
	}
	if o.session > 0 {
		margin := o.lostMargin
		if margin == 0 {
			margin = o.session / 5
		}
		if margin >= o.session {
			return usageError("-lost-margin %v must be below -session-timeout %v", margin, o.session)
		}
		if err := checkMargin(margin); err != nil {
			return usageError("%v", err)
		}
	}
	if o.auth != "" {
		if scheme, cred, ok := strings.Cut(o.auth, ":"); !ok || scheme == "" || cred == "" {
			return usageError("-auth wants scheme:credentials, e.g. digest:user:password")
		}
	}
	if o.tlsCA != "" || o.tlsCert != "" || o.tlsKey != "" {
		// Read now: a file that is missing or wrong is the command line's
		// fault, found before any connection is tried.
		cfg, err := tlsdial.LoadConfig(o.tlsCA, o.tlsCert, o.tlsKey)
		if err != nil {
			return usageError("-tls-ca, -tls-cert, -tls-key: %v", err)
		}
		o.tls = cfg
	}
	switch {
	case o.root == "" || o.root == "/":
		o.root = ""
	default:
		if err := engine.ValidatePath(o.root); err != nil {
			return usageError("-root: %v", err)
		}
	}
	return nil
}

// checkPath validates a PATH argument: an absolute path that can name a
// lock, or, where a tree is walked, also "/".
func checkPath(p string, treeOK bool) error {
	if treeOK && p == "/" {
		return nil
	}
	if err := engine.ValidatePath(p); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}
