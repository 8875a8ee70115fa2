package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
)

// With -tls-ca, -tls-cert and -tls-key the command reads, on a server's
// secure client port, the lock an engine holds there over TLS. Without
// them, or without the client certificate the server needs, it fails and
// says why; a flag naming a file that cannot serve is a usage error.
func TestTLSFlags(t *testing.T) {
	srv, files := zkserver.StartTLST(t, zkserver.Options{})
	ctx := testCtx(t)
	cfg, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.Start(ctx, engine.Config{Servers: []string{srv.SecureAddr()}, TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	path := lockPath(t)
	held, err := lock.NewMutex(e, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)

	at := func(args ...string) result {
		var out, errb bytes.Buffer
		code := run(ctx, append([]string{"-servers", srv.SecureAddr(), "-timeout", "3s"}, args...), &out, &errb)
		return result{code: code, stdout: out.String(), stderr: errb.String()}
	}

	r := at("-tls-ca", files.CA, "-tls-cert", files.ClientCert, "-tls-key", files.ClientKey, "holders", "-json", path)
	var holders []nodeView
	if r.code != exitOK {
		t.Fatalf("holders over TLS: %v", r)
	}
	if err := json.Unmarshal([]byte(r.stdout), &holders); err != nil || len(holders) != 1 || holders[0].Node != held.Node() {
		t.Errorf("holders over TLS: %+v (%v); want the engine's %s\n%v", holders, err, held.Node(), r)
	}

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no TLS", nil, exitError, "no ZooKeeper session"},
		{"no client certificate", []string{"-tls-ca", files.CA}, exitError, "bad certificate"},
		{"certificate without key", []string{"-tls-ca", files.CA, "-tls-cert", files.ClientCert}, exitUsage, "needs both"},
		{"CA file missing", []string{"-tls-ca", files.CA + ".missing"}, exitUsage, "no such file"},
		{"CA file not PEM", []string{"-tls-ca", files.ClientKey}, exitUsage, "no PEM certificate"},
	} {
		r := at(append(tc.args, "holders", path)...)
		// The reason is that of the last connection attempt: on a loaded
		// machine, the server's refusal can come after the client's own
		// bound on one handshake, which then reads "deadline exceeded".
		// Ask again (a bounded number of times) until an attempt got
		// the server's answer.
		for try := 0; try < 5 && strings.Contains(r.stderr, "deadline exceeded"); try++ {
			r = at(append(tc.args, "holders", path)...)
		}
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) || r.stdout != "" {
			t.Errorf("%s: want exit %d saying %q on stderr only, got %v", tc.name, tc.code, tc.stderr, r)
		}
		t.Logf("%s: exit %d: %s", tc.name, r.code, strings.SplitN(r.stderr, "\n", 2)[0])
	}
}
