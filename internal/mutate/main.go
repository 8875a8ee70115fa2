// Command mutate plants known bugs in a copy of the code and reports which
// checker catches each (make mutate).
//
// A checker that has never failed proves nothing: the simulator judging
// exclusion, tokens and outcomes, or a scripted test, is worth what it
// catches. Each mutant (mutants.go) is one small change that re-plants a
// class of bug this project has had or could have, written as a snippet
// of code and its replacement, found wherever the snippet is in the tree,
// so that a file moved or split does not lose its mutants. For each
// mutant, mutate copies the working tree, plants the change, builds, and
// runs the mutant's checks in order: the simulator for a budget of
// simulated seeds' time, or named tests. The first check that fails
// catches the mutant. A mutant whose snippet is missing, found twice, or
// that does not build, is an error, never a catch.
//
//	go run ./internal/mutate                  every mutant
//	go run ./internal/mutate -run handoff     mutants whose name matches
//	go run ./internal/mutate -list            the mutants, without running
//
// It prints a line per mutant, caught or missed, by which checker, the
// first failing seed and the time it took, and last `mutants: C caught of
// M`; it exits non-zero if any mutant is missed or in error.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	runFlag   = flag.String("run", "", "only the mutants whose name matches this regular expression")
	listFlag  = flag.Bool("list", false, "list the mutants and exit")
	budget    = flag.Duration("budget", 2*time.Minute, "simulation time a mutant may take to be caught")
	firstSeed = flag.Uint64("seed", 5_000_000, "the first simulator seed each mutant runs from")
	chunk     = flag.Int("chunk", 40, "seeds per simulator run")
	keep      = flag.Bool("keep", false, "keep each mutant's copy of the tree (its path is printed)")
)

func main() {
	flag.Parse()
	root, err := repoRoot()
	if err != nil {
		fatal(err)
	}
	var pick *regexp.Regexp
	if *runFlag != "" {
		if pick, err = regexp.Compile(*runFlag); err != nil {
			fatal(err)
		}
	}
	var chosen []mutant
	for _, m := range mutants {
		if pick == nil || pick.MatchString(m.name) {
			chosen = append(chosen, m)
		}
	}
	if *listFlag {
		for _, m := range chosen {
			fmt.Printf("%-28s %s\n", m.name, m.class)
		}
		return
	}
	caught := 0
	for _, m := range chosen {
		r := run(root, m)
		fmt.Println(r)
		if r.caught {
			caught++
		}
	}
	fmt.Printf("mutants: %d caught of %d\n", caught, len(chosen))
	if caught != len(chosen) {
		os.Exit(1)
	}
}

// result is one mutant's outcome.
type result struct {
	m       mutant
	caught  bool
	checker string // what caught it
	seed    string // the first failing seed, for the simulator
	took    time.Duration
	err     error // the mutant could not be planted or built
	detail  string
}

func (r result) String() string {
	switch {
	case r.err != nil:
		return fmt.Sprintf("error   %-28s %v", r.m.name, r.err)
	case !r.caught:
		return fmt.Sprintf("missed  %-28s %s (tried %s)", r.m.name, r.m.class, r.detail)
	case r.seed != "":
		return fmt.Sprintf("caught  %-28s by %s, seed %s, after %v: %s", r.m.name, r.checker, r.seed, r.took.Round(time.Second), r.detail)
	}
	return fmt.Sprintf("caught  %-28s by %s, after %v: %s", r.m.name, r.checker, r.took.Round(time.Second), r.detail)
}

func run(root string, m mutant) result {
	r := result{m: m}
	dir, err := os.MkdirTemp("", "mutant-"+m.name+"-")
	if err != nil {
		r.err = err
		return r
	}
	if *keep {
		fmt.Fprintf(os.Stderr, "mutant %s in %s\n", m.name, dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if err := copyTree(root, dir); err != nil {
		r.err = err
		return r
	}
	if err := plant(dir, m); err != nil {
		r.err = err
		return r
	}
	var tried []string
	for _, c := range m.checks {
		caught, seed, took, detail, err := c.run(dir)
		if err != nil {
			r.err = fmt.Errorf("%s: %w", c.name(), err)
			return r
		}
		tried = append(tried, c.name())
		if caught {
			r.caught, r.checker, r.seed, r.took, r.detail = true, c.name(), seed, took, detail
			return r
		}
	}
	r.detail = strings.Join(tried, ", ")
	return r
}

// plant applies m's changes: each snippet must be found exactly once among
// the tree's Go files (in a file of that name, when one is given).
func plant(dir string, m mutant) error {
	for _, c := range m.changes {
		if err := c.apply(dir); err != nil {
			return err
		}
	}
	return nil
}

func (c change) apply(dir string) error {
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		if c.file != "" && !strings.HasSuffix(filepath.ToSlash(p), "/"+c.file) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for range bytes.Count(b, []byte(c.old)) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(hits) != 1 {
		return fmt.Errorf("the snippet of %s is found %d times, want once (has the code moved on?)", c.file, len(hits))
	}
	b, err := os.ReadFile(hits[0])
	if err != nil {
		return err
	}
	return os.WriteFile(hits[0], bytes.Replace(b, []byte(c.old), []byte(c.new), 1), 0o644)
}

// simCheck runs the simulator's seeds on every core until one fails or
// the budget of simulation time is spent. With kind set, only a failure
// of that checker catches (the failure's first word: "liveness",
// "fencing", ...): a seed that fails otherwise is passed over, and the run
// goes on from the next one, so that a checker that another one beats to
// the same bug is still shown to see it.
type simCheck struct{ kind string }

func (c simCheck) name() string {
	if c.kind != "" {
		return "simulator (" + c.kind + ")"
	}
	return "simulator"
}

var seedLine = regexp.MustCompile(`seed (\d+): ([^\n]*)`)

func (c simCheck) run(dir string) (bool, string, time.Duration, string, error) {
	bin := filepath.Join(dir, "engine.test")
	if out, err := goCmd(context.Background(), dir, "test", "-c", "-o", bin, "./engine"); err != nil {
		return false, "", 0, "", fmt.Errorf("build: %v\n%s", err, tail(out))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *budget)
	defer cancel()
	start := time.Now()
	var (
		mu         sync.Mutex
		next       = *firstSeed
		found      string
		passedOver int // failures of other checkers, with kind set
		wg         sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				from := next
				next += uint64(*chunk)
				mu.Unlock()
				for end := from + uint64(*chunk); from < end && ctx.Err() == nil; {
					cmd := exec.CommandContext(ctx, bin, "-test.run", "TestSimulation$", "-test.count=1",
						fmt.Sprintf("-sim.first=%d", from), fmt.Sprintf("-sim.seeds=%d", end-from))
					cmd.Dir = filepath.Join(dir, "engine")
					out, err := cmd.CombinedOutput()
					if err == nil || ctx.Err() != nil {
						break
					}
					if c.kind != "" {
						// A failure of another checker, or one that names no
						// seed (a crash), is passed over: the chunk goes on
						// after its seed, or is left.
						seed, kind, ok := failedSeed(string(out))
						if kind != c.kind {
							mu.Lock()
							passedOver++
							mu.Unlock()
							if !ok {
								break
							}
							from = seed + 1
							continue
						}
					}
					mu.Lock()
					if found == "" {
						found = string(out)
						cancel()
					}
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if found == "" {
		return false, "", took, "", nil
	}
	other := ""
	if passedOver > 0 {
		other = fmt.Sprintf(" (%d failing seeds of other checkers passed over)", passedOver)
	}
	if m := seedLine.FindStringSubmatch(found); m != nil {
		return true, m[1], took, clip(m[2]) + other, nil
	}
	return true, "", took, clip(firstFail(found)), nil
}

// failedSeed is the seed a failing simulator run names, and the checker
// that failed it (the failure's first word); ok is false if it names none.
func failedSeed(out string) (seed uint64, kind string, ok bool) {
	m := seedLine.FindStringSubmatch(out)
	if m == nil {
		return 0, "", false
	}
	seed, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return 0, "", false
	}
	kind, _, _ = strings.Cut(m[2], ":")
	return seed, kind, true
}

// testCheck runs named tests of one package; a failing test catches.
type testCheck struct {
	pkg     string // as go test names it, from the tree's root
	pattern string // -run
}

func (c testCheck) name() string { return fmt.Sprintf("go test %s -run '%s'", c.pkg, c.pattern) }

func (c testCheck) run(dir string) (bool, string, time.Duration, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := goCmd(ctx, dir, "test", "-count=1", "-run", c.pattern, c.pkg)
	took := time.Since(start)
	if err == nil {
		if !ranTests(out) {
			return false, "", took, "", fmt.Errorf("ran no test:\n%s", tail(out))
		}
		return false, "", took, "", nil
	}
	if strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") {
		return false, "", took, "", fmt.Errorf("build: %s", tail(out))
	}
	return true, "", took, clip(firstFail(out)), nil
}

type check interface {
	name() string
	run(dir string) (caught bool, seed string, took time.Duration, detail string, err error)
}

func goCmd(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// copyTree copies the files git tracks in root (as they are in the work
// tree, uncommitted changes included) to dir.
func copyTree(root, dir string) error {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		b, err := os.ReadFile(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("run mutate inside the repository: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ranTests reports whether some package of a passing go test ran a test.
func ranTests(out string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ok ") && !strings.Contains(l, "[no tests to run]") {
			return true
		}
	}
	return false
}

// firstFail is the first line of a test's output that says what failed.
func firstFail(out string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var fail string
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, "--- FAIL"), l == "FAIL", strings.HasPrefix(l, "FAIL\t"), l == "":
		case strings.HasSuffix(l, ".go:") || strings.Contains(l, "_test.go:") || strings.Contains(l, "expected") || strings.Contains(l, "panic"):
			return l
		case fail == "":
			fail = l
		}
	}
	return fail
}

func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, s)
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(2)
}
