package engine

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxPathLen bounds a lock path, in bytes.
const MaxPathLen = 1024

// ValidatePath reports whether p can name a lock: an absolute ZooKeeper path
// of at most MaxPathLen bytes, with no empty, "." or ".." segment, no
// trailing slash, no character ZooKeeper rejects, and outside the server's
// reserved /zookeeper tree. The error wraps ErrInvalidPath.
func ValidatePath(p string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidPath, p, why) }
	switch {
	case p == "":
		return bad("empty")
	case len(p) > MaxPathLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxPathLen))
	case p[0] != '/':
		return bad("not absolute")
	case p == "/":
		return bad("the root cannot be a lock")
	case strings.HasSuffix(p, "/"):
		return bad("trailing slash")
	case !utf8.ValidString(p):
		return bad("not UTF-8")
	case p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/"):
		return bad("reserved by the server")
	}
	for _, seg := range strings.Split(p[1:], "/") {
		switch seg {
		case "":
			return bad("empty segment")
		case ".", "..":
			return bad("relative segment")
		}
	}
	for _, r := range p {
		// The ranges ZooKeeper's own path check refuses.
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0 && r <= 0xffff {
			return bad(fmt.Sprintf("character %U not allowed", r))
		}
	}
	return nil
}
