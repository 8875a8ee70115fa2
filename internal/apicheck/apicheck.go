// Package apicheck lists the exported API of turnstile's public packages,
// one line per exported identifier, in the manner of Go's own api/ files:
// every package-level constant, variable, function and type, every method
// of an exported type, and every exported field of an exported struct.
//
// The list is checked in (api/turnstile.txt) and compared by a test, so
// that a change to what users can name shows up as a diff in review and is
// made on purpose. It reads the source with go/parser alone: the API is
// what the declarations say, and no build of the packages is needed.
package apicheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Packages are the public packages whose API is promised, as paths below
// the repository's root. Examples, commands, the harness and internal
// packages are not part of it.
var Packages = []string{"engine", "lock", "election", "events", "queue", "metrics", "status", "turnstiletest"}

// List returns the API lines of the packages below root, sorted. A package
// listed in Packages whose folder does not exist is skipped, so that the
// list can name a package before it lands.
func List(root string) ([]string, error) {
	var lines []string
	for _, pkg := range Packages {
		dir := filepath.Join(root, pkg)
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		l, err := listDir(dir, pkg)
		if err != nil {
			return nil, err
		}
		lines = append(lines, l...)
	}
	slices.Sort(lines)
	return slices.Compact(lines), nil
}

func listDir(dir, pkg string) ([]string, error) {
	lines, aliases, err := parseDir(dir, pkg)
	if err != nil {
		return nil, err
	}
	// An alias of a type in an internal package promises that type's
	// methods and fields under the alias's name, though their declarations
	// sit where this list does not otherwise look.
	root := filepath.Join(dir, strings.Repeat("../", strings.Count(pkg, "/")+1))
	for _, a := range aliases {
		rel, ok := strings.CutPrefix(a.importPath, Module+"/")
		if !ok || !strings.Contains("/"+rel+"/", "/internal/") {
			continue
		}
		target, _, err := parseDir(filepath.Join(root, rel), pkg)
		if err != nil {
			return nil, err
		}
		for _, l := range target {
			if l, ok := aliasLine(l, pkg, a); ok {
				lines = append(lines, l)
			}
		}
	}
	return lines, nil
}

// Module is the module path the public packages' imports are read against.
const Module = "github.com/turnstile-go/turnstile"

// alias is an exported type alias of a type in another package.
type alias struct {
	name       string // the alias's name
	importPath string // the package the alias's type is declared in
	target     string // that type's name there
}

// aliasLine is the line of the target type's API that the alias makes
// public: its methods and its fields, not the type's own declaration,
// which the alias's line already is.
func aliasLine(l, pkg string, a alias) (string, bool) {
	head := "pkg " + pkg + ", "
	body := strings.TrimPrefix(l, head)
	for _, p := range []string{"method (*%s[", "method (%s[", "method (*%s)", "method (%s)", "type %s struct, ", "type %s[T] struct, "} {
		if from := fmt.Sprintf(p, a.target); strings.HasPrefix(body, from) {
			return head + fmt.Sprintf(p, a.name) + body[len(from):], true
		}
	}
	return "", false
}

func parseDir(dir, pkg string) ([]string, []alias, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	var lines []string
	var aliases []alias
	for name, p := range pkgs {
		if name == "main" {
			continue
		}
		for _, f := range p.Files {
			if !buildsOnLinux(f) {
				continue
			}
			lines = append(lines, listFile(fset, pkg, f)...)
			aliases = append(aliases, aliasesOf(f)...)
		}
	}
	return lines, aliases, nil
}

// aliasesOf returns the exported aliases in f of types declared in other
// packages.
func aliasesOf(f *ast.File) []alias {
	imports := map[string]string{}
	for _, im := range f.Imports {
		path := strings.Trim(im.Path.Value, `"`)
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = path
	}
	var out []alias
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			if !ts.Name.IsExported() || !ts.Assign.IsValid() {
				continue
			}
			t := ts.Type
			switch x := t.(type) {
			case *ast.IndexExpr:
				t = x.X
			case *ast.IndexListExpr:
				t = x.X
			}
			sel, ok := t.(*ast.SelectorExpr)
			if !ok {
				continue
			}
			if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] != "" {
				out = append(out, alias{name: ts.Name.Name, importPath: imports[id.Name], target: sel.Sel.Name})
			}
		}
	}
	return out
}

// buildsOnLinux leaves out files constrained away from the platform the
// list is made on; the API must not depend on it.
func buildsOnLinux(f *ast.File) bool {
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") && strings.Contains(c.Text, "ignore") {
				return false
			}
		}
	}
	return true
}

func listFile(fset *token.FileSet, pkg string, f *ast.File) []string {
	var lines []string
	add := func(format string, args ...any) {
		lines = append(lines, "pkg "+pkg+", "+fmt.Sprintf(format, args...))
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				add("func %s%s", d.Name.Name, signature(fset, d.Type))
				continue
			}
			recv := d.Recv.List[0].Type
			if !ast.IsExported(baseType(recv)) {
				continue
			}
			add("method (%s) %s%s", render(fset, recv), d.Name.Name, signature(fset, d.Type))
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					kind := "var"
					if d.Tok == token.CONST {
						kind = "const"
					}
					for _, n := range s.Names {
						if n.IsExported() {
							add("%s %s", kind, n.Name)
						}
					}
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					name := s.Name.Name
					if s.TypeParams != nil {
						name += render(fset, &ast.IndexListExpr{X: s.Name, Indices: fieldTypes(s.TypeParams)})[len(s.Name.Name):]
					}
					switch t := s.Type.(type) {
					case *ast.StructType:
						add("type %s struct", name)
						for _, fld := range t.Fields.List {
							for _, n := range fld.Names {
								if n.IsExported() {
									add("type %s struct, %s %s", name, n.Name, render(fset, fld.Type))
								}
							}
							if len(fld.Names) == 0 && ast.IsExported(baseType(fld.Type)) {
								add("type %s struct, embedded %s", name, render(fset, fld.Type))
							}
						}
					case *ast.InterfaceType:
						add("type %s interface", name)
						for _, m := range t.Methods.List {
							for _, n := range m.Names {
								if n.IsExported() {
									add("type %s interface, %s%s", name, n.Name, signature(fset, m.Type.(*ast.FuncType)))
								}
							}
						}
					default:
						eq := " "
						if s.Assign.IsValid() {
							eq = " = "
						}
						add("type %s%s%s", name, eq, render(fset, s.Type))
					}
				}
			}
		}
	}
	return lines
}

func fieldTypes(fl *ast.FieldList) []ast.Expr {
	var out []ast.Expr
	for _, f := range fl.List {
		for _, n := range f.Names {
			out = append(out, n)
		}
	}
	return out
}

// baseType is the name of a receiver's or embedded field's type, without
// pointer and type arguments.
func baseType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			return t.Sel.Name
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func signature(fset *token.FileSet, ft *ast.FuncType) string {
	s := render(fset, ft)
	return strings.TrimPrefix(s, "func")
}

func render(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	printer.Fprint(&b, fset, n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// Identifiers counts the identifiers among API lines: every line but those
// of a struct's fields and an interface's methods, which belong to their
// type.
func Identifiers(lines []string) int {
	n := 0
	for _, l := range lines {
		if !strings.Contains(l, " struct, ") && !strings.Contains(l, " interface, ") {
			n++
		}
	}
	return n
}
