package engine_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/turnstile-go/turnstile/engine"
)

// FuzzValidatePath: every string is either refused with ErrInvalidPath or
// a path of the shape ValidatePath documents. The recipes' paths are
// user input; the engine checks them with this before anything is sent.
func FuzzValidatePath(f *testing.F) {
	for _, p := range []string{"", "/", "/a", "/a/b", "a", "/a/", "//a", "/a//b", "/./a", "/a/..", "/zookeeper",
		"/zookeeper/quota", "/zookeeperx", "/\x00", "/\u0085", "/\ud7ff", "/\uf8ff", "/\ufff0", "/é", "/\xff",
		"/" + strings.Repeat("a", engine.MaxPathLen-1), "/" + strings.Repeat("a", engine.MaxPathLen)} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := engine.ValidatePath(p)
		if err != nil {
			if !errors.Is(err, engine.ErrInvalidPath) {
				t.Fatalf("ValidatePath(%q): %v, not ErrInvalidPath", p, err)
			}
			return
		}
		segs := strings.Split(p, "/")
		switch {
		case len(p) > engine.MaxPathLen, !strings.HasPrefix(p, "/"), !utf8.ValidString(p), segs[1] == "zookeeper":
			t.Fatalf("ValidatePath(%q) accepted a path too long, relative, not UTF-8 or reserved", p)
		}
		for _, s := range segs[1:] {
			if s == "" || s == "." || s == ".." {
				t.Fatalf("ValidatePath(%q) accepted segment %q", p, s)
			}
		}
		for _, r := range p {
			if r < 0x20 || r == utf8.RuneError {
				t.Fatalf("ValidatePath(%q) accepted %U", p, r)
			}
		}
	})
}
