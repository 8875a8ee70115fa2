package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// version is the release of the tool. A binary installed with `go install
// ...@vX.Y.Z` also reports the module version it was built from, which
// says the same for a release and more for anything else.
const version = "0.1.0"

// runVersion prints the tool's version, and what the build says of itself:
// the module version (a tag, a pseudo-version, or "(devel)" when built in
// a checkout), the commit of a checkout build, the Go release, and the
// ZooKeeper client's version.
func runVersion(_ context.Context, _ options, _ []string, stdout, _ io.Writer) error {
	_, err := fmt.Fprintln(stdout, versionLine())
	return err
}

func versionLine() string {
	line := "turnstile " + version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return line
	}
	var parts []string
	if v := info.Main.Version; v != "" {
		parts = append(parts, "module "+v)
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+modified"
			}
		}
	}
	if rev != "" {
		parts = append(parts, "commit "+rev[:min(12, len(rev))]+dirty)
	}
	parts = append(parts, info.GoVersion)
	for _, d := range info.Deps {
		if d.Path == "github.com/go-zookeeper/zk" {
			parts = append(parts, "go-zookeeper "+d.Version)
		}
	}
	return line + " (" + strings.Join(parts, ", ") + ")"
}
