package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// apiPackage is what the generator reads from the Go package of an API version.
type apiPackage struct {
	// Doc is the package's godoc, markers removed.
	Doc string
	// Markers are the package-level markers (+groupName, ...).
	Markers markers
	// Types by name; Order lists them in source order (files sorted by name).
	Types map[string]*typeDecl
	Order []string
	// Consts in source order.
	Consts []*constDecl
	// Imports maps a package name used in the API's files to its import path.
	Imports map[string]string
}

// typeDecl is one named type.
type typeDecl struct {
	Name    string
	Doc     string
	Markers markers
	// Fields of a struct type; nil otherwise.
	Fields []*fieldDecl
	// IsStruct is true for struct types; Underlying names the type of the others ("string").
	IsStruct   bool
	Underlying string
}

// fieldDecl is one field of a struct type.
type fieldDecl struct {
	GoName    string
	JSONName  string
	Inline    bool
	OmitEmpty bool
	Type      typeExpr
	Doc       string
	Markers   markers
}

// typeExpr is a field's type: a named type (local when Pkg is empty, or of the imported package
// Pkg), a pointer, a slice or a map.
type typeExpr struct {
	Kind string // "name", "pointer", "slice", "map"
	Pkg  string
	Name string
	Elem *typeExpr
	Key  *typeExpr
}

// constDecl is one constant.
type constDecl struct {
	Name  string
	Type  string // "" for untyped constants
	Value string // the string value; the literal for other kinds
	Doc   string
	// GroupDoc is the godoc of the const ( ... ) block the constant is declared in.
	GroupDoc string
	Markers  markers
	File     string
}

// loadPackage parses the non-test, non-generated Go files of dir.
func loadPackage(dir string) (*apiPackage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read API package %s: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "zz_generated") {
			continue
		}
		files = append(files, n)
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	p := &apiPackage{Types: map[string]*typeDecl{}, Imports: map[string]string{}}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		if err := p.addFile(name, f); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *apiPackage) addFile(name string, f *ast.File) error {
	if f.Doc != nil {
		doc, ms := splitDoc(f.Doc)
		if doc != "" {
			p.Doc = doc
		}
		p.Markers = append(p.Markers, ms...)
	}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return fmt.Errorf("%s: import %s: %w", name, imp.Path.Value, err)
		}
		local := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			local = imp.Name.Name
		}
		if prev, ok := p.Imports[local]; ok && prev != path {
			return fmt.Errorf("%s: package name %s means both %s and %s in the API's files", name, local, prev, path)
		}
		p.Imports[local] = path
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		switch gd.Tok {
		case token.TYPE:
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && gd.Lparen == token.NoPos {
					doc = gd.Doc
				}
				t, err := newTypeDecl(ts, doc)
				if err != nil {
					return fmt.Errorf("%s: type %s: %w", name, ts.Name.Name, err)
				}
				p.Types[t.Name] = t
				p.Order = append(p.Order, t.Name)
			}
		case token.CONST:
			groupDoc := ""
			if gd.Lparen != token.NoPos && gd.Doc != nil {
				groupDoc, _ = splitDoc(gd.Doc)
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				doc := vs.Doc
				if doc == nil && gd.Lparen == token.NoPos {
					doc = gd.Doc
				}
				for i, id := range vs.Names {
					c := &constDecl{Name: id.Name, GroupDoc: groupDoc, File: name}
					c.Doc, c.Markers = splitDoc(doc)
					if vs.Type != nil {
						c.Type = exprString(vs.Type)
					}
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
							c.Value = lit.Value
							if lit.Kind == token.STRING {
								c.Value, _ = strconv.Unquote(lit.Value)
							}
						} else {
							c.Value = exprString(vs.Values[i])
						}
					}
					p.Consts = append(p.Consts, c)
				}
			}
		}
	}
	return nil
}

func newTypeDecl(ts *ast.TypeSpec, doc *ast.CommentGroup) (*typeDecl, error) {
	t := &typeDecl{Name: ts.Name.Name}
	t.Doc, t.Markers = splitDoc(doc)
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		t.Underlying = exprString(ts.Type)
		return t, nil
	}
	t.IsStruct = true
	for _, f := range st.Fields.List {
		fd := &fieldDecl{}
		fd.Doc, fd.Markers = splitDoc(f.Doc)
		te, err := parseTypeExpr(f.Type)
		if err != nil {
			return nil, err
		}
		fd.Type = te
		if len(f.Names) > 0 {
			fd.GoName = f.Names[0].Name
		} else {
			fd.GoName = te.Name
		}
		if f.Tag != nil {
			tag, err := strconv.Unquote(f.Tag.Value)
			if err != nil {
				return nil, fmt.Errorf("field %s: tag %s: %w", fd.GoName, f.Tag.Value, err)
			}
			jsonTag := reflect.StructTag(tag).Get("json")
			parts := strings.Split(jsonTag, ",")
			fd.JSONName = parts[0]
			for _, opt := range parts[1:] {
				switch opt {
				case "inline":
					fd.Inline = true
				case "omitempty", "omitzero":
					fd.OmitEmpty = true
				}
			}
		}
		if fd.JSONName == "-" {
			continue
		}
		t.Fields = append(t.Fields, fd)
	}
	return t, nil
}

func parseTypeExpr(e ast.Expr) (typeExpr, error) {
	switch x := e.(type) {
	case *ast.Ident:
		return typeExpr{Kind: "name", Name: x.Name}, nil
	case *ast.SelectorExpr:
		pkg, ok := x.X.(*ast.Ident)
		if !ok {
			return typeExpr{}, fmt.Errorf("unsupported type %s", exprString(e))
		}
		return typeExpr{Kind: "name", Pkg: pkg.Name, Name: x.Sel.Name}, nil
	case *ast.StarExpr:
		elem, err := parseTypeExpr(x.X)
		return typeExpr{Kind: "pointer", Elem: &elem}, err
	case *ast.ArrayType:
		if x.Len != nil {
			return typeExpr{}, fmt.Errorf("unsupported array type %s", exprString(e))
		}
		elem, err := parseTypeExpr(x.Elt)
		return typeExpr{Kind: "slice", Elem: &elem}, err
	case *ast.MapType:
		key, err := parseTypeExpr(x.Key)
		if err != nil {
			return typeExpr{}, err
		}
		elem, err := parseTypeExpr(x.Value)
		return typeExpr{Kind: "map", Key: &key, Elem: &elem}, err
	default:
		return typeExpr{}, fmt.Errorf("unsupported type %s", exprString(e))
	}
}

// exprString prints simple type and value expressions.
func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(x.X)
	case *ast.ArrayType:
		return "[]" + exprString(x.Elt)
	case *ast.MapType:
		return "map[" + exprString(x.Key) + "]" + exprString(x.Value)
	case *ast.BasicLit:
		return x.Value
	default:
		return fmt.Sprintf("%T", e)
	}
}

// splitDoc separates a comment group into its text (markers removed, paragraphs separated by
// one blank line, lines of a paragraph joined by spaces) and its markers.
func splitDoc(g *ast.CommentGroup) (string, markers) {
	if g == nil {
		return "", nil
	}
	var ms markers
	var paras []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, c := range g.List {
		line := strings.TrimPrefix(c.Text, "//")
		if strings.HasPrefix(c.Text, "/*") {
			line = strings.TrimSuffix(strings.TrimPrefix(c.Text, "/*"), "*/")
		}
		if m, ok := parseMarker(line); ok {
			ms = append(ms, m)
			continue
		}
		line = strings.TrimSpace(line)
		if line == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return strings.Join(paras, "\n\n"), ms
}
