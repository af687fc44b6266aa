package sdk_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// aliasTargets maps the packages sdk and sdk/node alias types of to
// their directories.
var aliasTargets = map[string]string{"core": "../internal/core", "actors": "../actors"}

// typeSpecs parses the non-test files of dir and returns its type
// declarations by name, with their doc comments.
func typeSpecs(t *testing.T, dir string) map[string]*ast.TypeSpec {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ast.TypeSpec{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if ts.Doc == nil && len(g.Specs) == 1 {
					ts.Doc = g.Doc
				}
				out[ts.Name.Name] = ts
			}
		}
	}
	return out
}

// TestAliasDocsListEveryMember: go doc on an sdk alias shows only the
// alias's own comment, so every alias of a struct lists each exported
// field, and every alias of an interface each method, in its doc comment
// as a code line ("\tName …"): a field added to internal/core.Metadata and
// not to sdk.Metadata's comment fails here (go doc ./sdk Metadata showed
// no fields).
func TestAliasDocsListEveryMember(t *testing.T) {
	sdkTypes := map[string]*ast.TypeSpec{}
	for _, dir := range []string{".", "node"} {
		for name, ts := range typeSpecs(t, dir) {
			if dir != "." {
				name = dir + "." + name
			}
			sdkTypes[name] = ts
		}
	}
	targets := map[string]map[string]*ast.TypeSpec{}
	checked := 0
	for qname, ts := range sdkTypes {
		name := qname
		if i := strings.LastIndex(qname, "."); i >= 0 {
			name = qname[i+1:]
		}
		sel, ok := ts.Type.(*ast.SelectorExpr)
		if !ts.Assign.IsValid() || !ok || !ast.IsExported(name) {
			continue
		}
		pkg := sel.X.(*ast.Ident).Name
		dir, ok := aliasTargets[pkg]
		if !ok {
			continue
		}
		if targets[pkg] == nil {
			targets[pkg] = typeSpecs(t, dir)
		}
		target := targets[pkg][sel.Sel.Name]
		if target == nil {
			t.Errorf("sdk.%s aliases %s.%s, which is not declared in %s", qname, pkg, sel.Sel.Name, dir)
			continue
		}
		doc := ""
		if ts.Doc != nil {
			doc = ts.Doc.Text()
		}
		var members []string
		switch tt := target.Type.(type) {
		case *ast.StructType:
			for _, f := range tt.Fields.List {
				for _, n := range f.Names {
					if n.IsExported() {
						members = append(members, n.Name)
					}
				}
			}
		case *ast.InterfaceType:
			for _, m := range tt.Methods.List {
				for _, n := range m.Names {
					if n.IsExported() {
						members = append(members, n.Name)
					}
				}
			}
		}
		for _, m := range members {
			if !regexp.MustCompile(`(?m)^\t+(\w+, )*` + m + `\b`).MatchString(doc) {
				t.Errorf("sdk.%s's doc comment does not list %s.%s's %s as a code line (\"\\t%s …\"): go doc would not show it", qname, pkg, sel.Sel.Name, m, m)
			}
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("checked %d aliases; the parse found too few", checked)
	}
}
