// Command testtimes reads `go test -json` on its standard input and prints
// what `go test` prints without -json (each package's result, and the
// output of the tests that failed), then the slowest tests, so that a
// suite that grows slow shows where. It exits 1 if a test, a package or a
// build failed. `make test` runs it.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output, build-fail
}

// slowest is how many of the slowest tests are listed.
const slowest = 12

func main() {
	failed, err := report(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// timing is one top-level test's run time.
type timing struct {
	name    string
	seconds float64
}

// report copies the result of in to out and says whether anything failed.
func report(in io.Reader, out io.Writer) (failed bool, err error) {
	held := map[string]*strings.Builder{} // output of tests still running, by package and name
	var times []timing
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for lines.Scan() {
		var e event
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			// Not an event: go test's own words (a build error before
			// any package ran, say). Pass it on.
			fmt.Fprintln(out, lines.Text())
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Fprint(out, e.Output)
		case e.Action == "build-fail":
			failed = true
		case e.Test == "" && e.Action == "output":
			if e.Output != "PASS\n" {
				fmt.Fprint(out, e.Output)
			}
		case e.Test == "" && e.Action == "fail":
			failed = true
		case e.Test == "":
		case e.Action == "output":
			b := held[key]
			if b == nil {
				b = &strings.Builder{}
				held[key] = b
			}
			b.WriteString(e.Output)
		case e.Action == "pass" || e.Action == "skip" || e.Action == "fail":
			if e.Action == "fail" {
				failed = true
				if b := held[key]; b != nil {
					fmt.Fprint(out, b.String())
				}
			}
			delete(held, key)
			if !strings.Contains(e.Test, "/") {
				times = append(times, timing{e.Package + "." + e.Test, e.Elapsed})
			}
		}
	}
	if err := lines.Err(); err != nil {
		return true, err
	}
	slices.SortFunc(times, func(a, b timing) int { return cmp.Compare(b.seconds, a.seconds) })
	if len(times) > 0 {
		fmt.Fprintf(out, "\nslowest tests of %d:\n", len(times))
		for _, t := range times[:min(slowest, len(times))] {
			fmt.Fprintf(out, "%8.1fs  %s\n", t.seconds, t.name)
		}
	}
	return failed, nil
}
