package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
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

const usageText = `usage: turnstile [flags] COMMAND [flags] ARGS

commands:
  locks [PATH]         the lock paths under PATH (default /), their holders and waiters
  holders PATH         who holds the lock at PATH
  revoke PATH [NODE]   ask PATH's holders, or its node NODE, to let go (Curator's revocation)
  watch PATH           print every grant, release and departure at PATH as it happens

flags:
  -servers host:port,...  the ensemble (default $ZK_SERVERS, else 127.0.0.1:2181)
  -root /prefix           chroot-style namespace; paths are under it and shown relative to it
  -auth scheme:creds      credentials for the session, e.g. digest:user:password
  -tls-ca FILE            connect with TLS (the servers' secureClientPort), verifying
                          the servers against the PEM certificates in FILE
  -tls-cert FILE          with -tls-key: TLS, presenting this PEM client certificate
  -tls-key FILE           the client certificate's PEM private key
  -timeout d              how long to wait for a session (default 10s)
  -json                   locks, holders, watch: JSON output
  -for d                  watch: stop after d (default: until interrupted)

exit status: 0 ok, 1 error, 2 usage, 3 no such lock / nothing held / no such node
`

// options are the flags every command takes.
type options struct {
	servers string
	root    string
	auth    string
	tlsCA   string // PEM file of the CAs the servers' certificates chain to
	tlsCert string // PEM files of the client certificate and its key
	tlsKey  string
	timeout time.Duration
	json    bool          // locks, holders, watch
	watchOn time.Duration // watch: how long; 0 = until interrupted

	tls *tls.Config // from the -tls-* files, by check; nil without TLS
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.servers, "servers", o.servers, "ZooKeeper servers, host:port,...")
	fs.StringVar(&o.root, "root", o.root, "chroot-style namespace prefix")
	fs.StringVar(&o.auth, "auth", o.auth, "scheme:credentials, e.g. digest:user:password")
	fs.StringVar(&o.tlsCA, "tls-ca", o.tlsCA, "TLS: PEM file of the CA certificates to verify the servers with")
	fs.StringVar(&o.tlsCert, "tls-cert", o.tlsCert, "TLS: PEM file of the client certificate")
	fs.StringVar(&o.tlsKey, "tls-key", o.tlsKey, "TLS: PEM file of the client certificate's key")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "how long to wait for a session")
}

// command is one subcommand: its extra flags, its arguments, and its body.
type command struct {
	name    string
	args    string // its arguments, for a usage error
	minArgs int
	maxArgs int
	json    bool // takes -json
	watch   bool // takes -for
	run     func(ctx context.Context, s *session, o options, args []string, out io.Writer) error
}

var commands = []command{
	{name: "locks", args: "[PATH]", minArgs: 0, maxArgs: 1, json: true, run: runLocks},
	{name: "holders", args: "PATH", minArgs: 1, maxArgs: 1, json: true, run: runHolders},
	{name: "revoke", args: "PATH [NODE]", minArgs: 1, maxArgs: 2, run: runRevoke},
	{name: "watch", args: "PATH", minArgs: 1, maxArgs: 1, json: true, watch: true, run: runWatch},
}

// run is the whole command: it parses args, runs the command against the
// ensemble, writes results to stdout and errors to stderr, and returns the
// exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := runCommand(ctx, args, stdout)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "turnstile: %v\n\n%s", err, usageText)
		return exitUsage
	case errors.Is(err, errNone):
		fmt.Fprintf(stderr, "turnstile: %v\n", err)
		return exitNone
	}
	fmt.Fprintf(stderr, "turnstile: %v\n", err)
	return exitError
}

func runCommand(ctx context.Context, args []string, stdout io.Writer) error {
	o := options{servers: os.Getenv("ZK_SERVERS"), timeout: 10 * time.Second}
	if o.servers == "" {
		o.servers = "127.0.0.1:2181"
	}
	global := newFlagSet("turnstile")
	o.register(global)
	if err := parseFlags(global, args, stdout); err != nil {
		return err
	}
	if global.NArg() == 0 {
		return usageError("no command")
	}
	name := global.Arg(0)
	var cmd *command
	for i := range commands {
		if commands[i].name == name {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		return usageError("unknown command %q", name)
	}
	fs := newFlagSet("turnstile " + name)
	o.register(fs)
	if cmd.json {
		fs.BoolVar(&o.json, "json", false, "JSON output")
	}
	if cmd.watch {
		fs.DurationVar(&o.watchOn, "for", 0, "stop after this long (default: until interrupted)")
	}
	pos, err := parseInterspersed(fs, global.Args()[1:], stdout)
	if err != nil {
		return err
	}
	if len(pos) < cmd.minArgs || len(pos) > cmd.maxArgs {
		return usageError("%s takes %s; got %d argument(s)", name, cmd.args, len(pos))
	}
	if err := o.check(); err != nil {
		return err
	}
	// Paths are checked before any connection is made: a typo is a usage
	// error, not a wait for a session.
	for i, p := range pos {
		if i == 1 && name == "revoke" {
			break // NODE: a name or a path, checked against the lock's nodes
		}
		if err := checkPath(p, name == "locks"); err != nil {
			return err
		}
	}
	s, err := dial(ctx, o)
	if err != nil {
		return err
	}
	defer s.close()
	return cmd.run(ctx, s, o, pos, stdout)
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
// flag error is a usage error; -h prints the usage on stdout.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usageText)
		return err
	}
	return fmt.Errorf("%w: %v", errUsage, err)
}

// parseInterspersed parses fs's flags wherever they stand among the
// positional arguments ("holders /jobs/42 -json"), and returns the
// positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args, stdout); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
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
