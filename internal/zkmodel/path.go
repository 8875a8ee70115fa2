package zkmodel

import (
	"fmt"
	"strings"
)

// validPath is ZooKeeper's PathUtils.validatePath: absolute, no trailing
// slash but the root's, no empty, "." or ".." segment, no NUL and none of
// the characters the server refuses (controls, U+007F–U+009F, surrogates and
// the private use area U+D800–U+F8FF, U+FFF0–U+FFFF). Java sees a character
// above U+FFFF as two surrogates, and undecodable UTF-8 as U+FFFD, so both
// are refused too.
func validPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	if p == "/" {
		return true
	}
	if p[len(p)-1] == '/' {
		return false
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	for _, r := range p {
		switch {
		case r == 0,
			r <= 0x1f,
			r >= 0x7f && r <= 0x9f,
			r >= 0xd800 && r <= 0xf8ff,
			r >= 0xfff0:
			return false
		}
	}
	return true
}

// splitPath splits p at its last slash as the server does, with the root's
// key for an empty parent. ok is false when p has no slash or holds a NUL,
// which the server refuses with BadArguments before it looks at the tree.
func splitPath(p string) (parent, child string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 || strings.IndexByte(p, 0) >= 0 {
		return "", "", false
	}
	parent = p[:i]
	if parent == "" {
		parent = "/"
	}
	return parent, p[i+1:], true
}

// sequenceSuffix is the suffix a sequential create appends: the parent's
// cversion formatted as the server does, with Java's %010d, which Go's %010d
// matches digit for digit, negative values included ("-000000001",
// "-2147483648").
func sequenceSuffix(cversion int32) string {
	return fmt.Sprintf("%010d", cversion)
}

// specialPaths are the paths the server refuses to delete (and to reap):
// DataTree.isSpecialPath.
var specialPaths = map[string]bool{
	"/":                 true,
	"/zookeeper":        true,
	"/zookeeper/quota":  true,
	"/zookeeper/config": true,
}
