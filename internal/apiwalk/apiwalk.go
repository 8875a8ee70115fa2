// Package apiwalk calls every exported function and method of turnstile's
// public packages with nil and zero arguments, and with usable ones but a
// single nil, and fails the test on a panic, on a call that does not
// return within a bound, and on a nil required argument (a context, an
// engine, a lease, a callback, a recipe) that is not reported as an error
// wrapping engine.ErrInvalidRequest.
//
// Methods are found by reflection on the receivers a test hands it, so a
// method added to a walked type is walked without a word more; a new
// function or type must be named in the test's tables, which the walk
// checks against the API list (internal/apicheck) so that none is missed.
package apiwalk

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
)

// Receiver makes receivers of one type's methods.
type Receiver struct {
	// Name says which receiver this is, in failures.
	Name string
	// Make returns a fresh receiver, a pointer, for each call: a call may
	// use it up (Close, Release).
	Make func(t *testing.T, ctx context.Context) any
	// Invalid marks a receiver that no correct caller has (a recipe on a
	// nil engine): every error its methods return must wrap
	// engine.ErrInvalidRequest.
	Invalid bool
}

// Walk is what one walk covers and how it makes arguments.
type Walk struct {
	// Packages are the API packages the walk covers, as internal/apicheck
	// names them.
	Packages []string
	// API is the API list of the packages (apicheck.List).
	API []string
	// Funcs are the package-level functions, by "pkg.Name".
	Funcs map[string]any
	// Types are the receivers of each type's methods, by "pkg.Type". A nil
	// pointer of each receiver's type and, unless the type is in NoZero, a
	// zero value are walked as well.
	Types map[string][]Receiver
	// Values are the value types with methods (an int kind such as
	// engine.State), by "pkg.Type": each method is called on the zero
	// value, on -1 and on a large value.
	Values map[string]reflect.Type
	// NoZero are the types whose zero value is not walked, with why.
	NoZero map[string]string
	// NoLive are the functions and methods ("pkg.Name", "pkg.Type.Method")
	// not called with usable arguments, with why: they would start a
	// ZooKeeper server, say.
	NoLive map[string]string
	// Live returns a usable argument of type t, or false when there is none
	// (the argument is then zero).
	Live func(t *testing.T, ctx context.Context, typ reflect.Type) (reflect.Value, bool)
	// Release ends what a call returned (a lease, an engine), if it must
	// be ended.
	Release func(v any)
	// Timeout bounds the context given to each call; a call must return
	// within Timeout plus a grace of its own.
	Timeout time.Duration

	releasePanics    atomic.Int64
	lastReleasePanic atomic.Value
}

var (
	funcLine   = regexp.MustCompile(`^pkg ([a-z]+), func ([A-Za-z0-9_]+)\(`)
	methodLine = regexp.MustCompile(`^pkg ([a-z]+), method \(\*?([A-Za-z0-9_]+)(\[[^]]*\])?\) ([A-Za-z0-9_]+)\(`)
)

// Run walks everything, in parallel subtests by function and type, after
// checking that the tables name every function and type of the API.
func (w *Walk) Run(t *testing.T) {
	methods := map[string][]string{} // "pkg.Type" -> its methods in the API
	for _, line := range w.API {
		if m := funcLine.FindStringSubmatch(line); m != nil && slices.Contains(w.Packages, m[1]) {
			if _, ok := w.Funcs[m[1]+"."+m[2]]; !ok {
				t.Errorf("apiwalk: %s.%s is not in the walk's functions", m[1], m[2])
			}
		}
		if m := methodLine.FindStringSubmatch(line); m != nil && slices.Contains(w.Packages, m[1]) {
			typ := m[1] + "." + m[2]
			methods[typ] = append(methods[typ], m[4])
			_, isType := w.Types[typ]
			_, isValue := w.Values[typ]
			if !isType && !isValue {
				t.Errorf("apiwalk: %s (method %s) is not in the walk's types", typ, m[4])
			}
		}
	}
	var (
		mu     sync.Mutex
		called = map[string]bool{} // "pkg.Type.Method"
	)
	for _, name := range sortedKeys(w.Funcs) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w.callAll(t, name, reflect.ValueOf(w.Funcs[name]), false, false)
		})
	}
	for _, typ := range sortedKeys(w.Types) {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			for _, r := range w.receivers(t, typ) {
				// The method set of the receiver's type, through a
				// receiver made for the purpose, names the methods to call.
				sample := r.make(t)
				for i := range reflect.TypeOf(sample).NumMethod() {
					m := reflect.TypeOf(sample).Method(i)
					mu.Lock()
					called[typ+"."+m.Name] = true
					mu.Unlock()
					name := typ + "." + m.Name
					t.Run(r.name+"/"+m.Name, func(t *testing.T) {
						rv := r.make(t)
						defer w.release(rv)
						w.callAll(t, r.name+" "+name, reflect.ValueOf(rv).Method(i), r.invalid, r.zero)
					})
				}
				w.release(sample)
			}
		})
	}
	for _, typ := range sortedKeys(w.Values) {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			rt := w.Values[typ]
			for _, v := range valuesOf(rt) {
				for i := range rt.NumMethod() {
					mu.Lock()
					called[typ+"."+rt.Method(i).Name] = true
					mu.Unlock()
					t.Run(fmt.Sprintf("%v/%s", v, rt.Method(i).Name), func(t *testing.T) {
						w.callAll(t, fmt.Sprintf("%v ", v)+typ+"."+rt.Method(i).Name, v.Method(i), false, false)
					})
				}
			}
		})
	}
	t.Cleanup(func() {
		if n := w.releasePanics.Load(); n > 0 {
			t.Errorf("apiwalk: %d releases of what calls returned panicked; the last: %s", n, w.lastReleasePanic.Load())
		}
		for typ, ms := range methods {
			for _, m := range ms {
				if !called[typ+"."+m] && w.NoZero[typ] == "" {
					t.Errorf("apiwalk: %s.%s is in the API but no receiver walked it", typ, m)
				}
			}
		}
	})
}

type receiver struct {
	name    string
	make    func(t *testing.T) any
	invalid bool
	zero    bool // a zero value: wrong in its own way, so a refusal need not name the nil argument
}

// receivers are the type's receivers, a nil pointer and a zero value.
func (w *Walk) receivers(t *testing.T, typ string) []receiver {
	var out []receiver
	ctx := context.Background()
	for _, r := range w.Types[typ] {
		out = append(out, receiver{r.Name, func(t *testing.T) any { return r.Make(t, ctx) }, r.Invalid, false})
	}
	if len(out) == 0 {
		t.Fatalf("apiwalk: no receiver of %s", typ)
	}
	sample := out[0].make(t)
	rt := reflect.TypeOf(sample)
	w.release(sample)
	if rt.Kind() != reflect.Pointer {
		t.Fatalf("apiwalk: receiver of %s is a %v, not a pointer", typ, rt)
	}
	if !reflect.ValueOf(sample).IsNil() {
		out = append(out, receiver{"nil", func(*testing.T) any { return reflect.Zero(rt).Interface() }, true, false})
	}
	if w.NoZero[typ] == "" {
		out = append(out, receiver{"zero", func(*testing.T) any { return reflect.New(rt.Elem()).Interface() }, false, true})
	}
	return out
}

// valuesOf are the values of an int kind a walk calls methods on.
func valuesOf(rt reflect.Type) []reflect.Value {
	vals := []reflect.Value{reflect.Zero(rt)}
	switch rt.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		for _, n := range []int64{-1, 1 << 20} {
			v := reflect.New(rt).Elem()
			v.SetInt(n)
			vals = append(vals, v)
		}
	}
	return vals
}

var errorType = reflect.TypeFor[error]()

// required reports whether a nil of typ is an argument no correct caller
// passes: a context, an engine, a lease, a callback, an interface. A nil
// slice or map is an empty one, and a nil option is no option.
func required(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Func, reflect.Chan:
		return true
	}
	return false
}

// argSet is one set of arguments of a call, and the nil required one it
// holds, if any.
type argSet struct {
	name   string
	args   func(t *testing.T, ctx context.Context) []reflect.Value
	nilArg string
	single bool // nilArg is the one wrong argument
}

// callAll calls fn with every set of arguments.
func (w *Walk) callAll(t *testing.T, name string, fn reflect.Value, invalid, zeroRecv bool) {
	ft := fn.Type()
	n := ft.NumIn()
	zero := func(i int) reflect.Value { return reflect.Zero(ft.In(i)) }
	live := func(t *testing.T, ctx context.Context, i int) reflect.Value {
		if ft.IsVariadic() && i == n-1 {
			return zero(i)
		}
		if v, ok := w.Live(t, ctx, ft.In(i)); ok {
			return v
		}
		return zero(i)
	}
	sets := []argSet{{name: "zero", args: func(*testing.T, context.Context) []reflect.Value {
		args := make([]reflect.Value, n)
		for i := range n {
			args[i] = zero(i)
		}
		return args
	}}}
	for i := range n {
		if ft.IsVariadic() && i == n-1 {
			break
		}
		if required(ft.In(i)) {
			sets[0].nilArg = ft.In(i).String()
			break
		}
	}
	if w.NoLive[strings.TrimPrefix(name[strings.LastIndex(name, " ")+1:], "")] == "" && n > 0 {
		sets = append(sets, argSet{name: "live", args: func(t *testing.T, ctx context.Context) []reflect.Value {
			args := make([]reflect.Value, n)
			for i := range n {
				args[i] = live(t, ctx, i)
			}
			return args
		}})
		for j := range n {
			variadic := ft.IsVariadic() && j == n-1
			if !variadic && !required(ft.In(j)) {
				continue
			}
			set := argSet{name: fmt.Sprintf("nil arg %d", j), nilArg: ft.In(j).String()}
			if variadic {
				// One zero element: a nil option is no option, but a nil
				// lock or operation is a nil required argument.
				elem := ft.In(j).Elem()
				set.name = "one zero variadic"
				if !required(elem) || elem.Kind() == reflect.Func {
					set.nilArg = ""
				} else {
					set.nilArg = elem.String()
				}
			}
			set.args = func(t *testing.T, ctx context.Context) []reflect.Value {
				args := make([]reflect.Value, n)
				for i := range n {
					args[i] = live(t, ctx, i)
				}
				if variadic {
					args[j] = reflect.MakeSlice(ft.In(j), 1, 1)
				} else {
					args[j] = zero(j)
				}
				return args
			}
			sets = append(sets, set)
		}
	}
	for _, set := range sets {
		// Only a call with one thing wrong must name it; with several,
		// any of them may be the one refused.
		set.single = set.nilArg != "" && set.name != "zero" && !invalid && !zeroRecv
		w.call(t, name+"("+set.name+")", fn, set, invalid)
	}
}

// call makes one call in a goroutine of its own and checks its outcome.
func (w *Walk) call(t *testing.T, name string, fn reflect.Value, set argSet, invalid bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), w.Timeout)
	defer cancel()
	args := set.args(t, ctx)
	type outcome struct {
		err      error
		hasErr   bool
		panicked any
		stack    string
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				buf := make([]byte, 16<<10)
				o.panicked, o.stack = p, panicSite(string(buf[:runtime.Stack(buf, false)]))
			}
			done <- o
		}()
		var out []reflect.Value
		if fn.Type().IsVariadic() {
			out = fn.CallSlice(args)
		} else {
			out = fn.Call(args)
		}
		o.err, o.hasErr = w.results(ctx, out)
	}()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(w.Timeout + 10*time.Second):
		t.Fatalf("%s: no return within %v of its context's end", name, 10*time.Second)
	}
	for _, a := range args {
		if a.IsValid() && a.CanInterface() {
			w.release(a.Interface())
		}
	}
	if o.panicked != nil {
		// A function without an error to return may report a nil
		// required argument as a panic with an error wrapping
		// ErrInvalidRequest, as context.WithCancel(nil) does; never with a
		// runtime error.
		if err, isErr := o.panicked.(error); !isErr || !errors.Is(err, engine.ErrInvalidRequest) || hasErrorResult(fn.Type()) {
			t.Errorf("%s: panic: %v, in %s", name, o.panicked, o.stack)
		}
		return
	}
	if !o.hasErr || (!invalid && set.nilArg == "") {
		return
	}
	if !errors.Is(o.err, engine.ErrInvalidRequest) || set.single && !strings.Contains(o.err.Error(), "nil") {
		t.Errorf("%s: got %v, want an error wrapping ErrInvalidRequest naming the nil %s", name, o.err, what(set.nilArg, invalid))
	}
}

// panicSite is the function and line a panic's stack names first below
// the panic itself.
func panicSite(stack string) string {
	lines := strings.Split(stack, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") && i+2 < len(lines) {
			for _, l := range lines[i+1:] {
				if strings.Contains(l, "turnstile-go/turnstile/") && !strings.Contains(l, "/internal/apiwalk") {
					return strings.TrimPrefix(l, "github.com/turnstile-go/turnstile/")
				}
			}
			return lines[i+1]
		}
	}
	return stack
}

func what(nilArg string, invalid bool) string {
	if invalid && nilArg == "" {
		return "receiver"
	}
	return nilArg
}

// results is the error among out, waiting for a future's; whatever else
// was returned is released.
func (w *Walk) results(ctx context.Context, out []reflect.Value) (err error, hasErr bool) {
	for _, v := range out {
		switch {
		case v.Type() == errorType:
			hasErr = true
			if !v.IsNil() {
				err = v.Interface().(error)
			}
		case isFuture(v.Type()):
			hasErr = true
			if v.IsNil() {
				err = errors.New("apiwalk: a nil future")
				continue
			}
			res := v.MethodByName("Wait").Call([]reflect.Value{reflect.ValueOf(ctx)})
			if !res[1].IsNil() {
				err = res[1].Interface().(error)
			}
			w.release(res[0].Interface())
		default:
			if v.CanInterface() {
				w.release(v.Interface())
			}
		}
	}
	return err, hasErr
}

func hasErrorResult(ft reflect.Type) bool {
	for i := range ft.NumOut() {
		if ft.Out(i) == errorType || isFuture(ft.Out(i)) {
			return true
		}
	}
	return false
}

// isFuture reports whether typ is an *engine.Future of some T.
func isFuture(typ reflect.Type) bool {
	return typ.Kind() == reflect.Pointer && typ.Elem().PkgPath() == "github.com/turnstile-go/turnstile/engine" &&
		strings.HasPrefix(typ.Elem().Name(), "Future[")
}

// release ends v through Release; a panic there is a finding as well (a
// zero lease's release, say), reported as the release's.
func (w *Walk) release(v any) {
	if v == nil || w.Release == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 16<<10)
			w.releasePanics.Add(1)
			w.lastReleasePanic.Store(fmt.Sprintf("release of %T: panic: %v, in %s", v, p, panicSite(string(buf[:runtime.Stack(buf, false)]))))
		}
	}()
	w.Release(v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
