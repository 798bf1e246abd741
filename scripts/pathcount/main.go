// Command pathcount reads a coverage profile (go tool covdata textfmt) and
// prints how many of the module's functions ran, how often they were
// entered in all, and in how many files: the measure of issue 34's path
// budget. Test files and this command are not counted.
//
//	pathcount -profile p.txt -module github.com/offlinelock/offlinelock -dir .
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type block struct {
	line, col int
	count     int
}

func main() {
	profile := flag.String("profile", "", "textfmt coverage profile")
	module := flag.String("module", "", "module path")
	dir := flag.String("dir", ".", "module directory")
	list := flag.Bool("v", false, "list the functions")
	flag.Parse()
	blocks, err := readProfile(*profile, *module)
	if err != nil {
		log.Fatal(err)
	}
	files := map[string]bool{}
	var funcs []string
	calls := 0
	for rel, bs := range blocks {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(*dir, rel), nil, 0)
		if err != nil {
			log.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Body.Lbrace), fset.Position(fd.Body.Rbrace)
			entry := -1
			for _, b := range bs { // the first block of the body is entered once per call
				if within(b, start, end) && (entry < 0 || before(b, bs[entry])) {
					entry = indexOf(bs, b)
				}
			}
			if entry < 0 || bs[entry].count == 0 {
				continue
			}
			files[rel] = true
			calls += bs[entry].count
			funcs = append(funcs, fmt.Sprintf("%s:%s %d", rel, fd.Name.Name, bs[entry].count))
		}
	}
	if *list {
		sort.Strings(funcs)
		for _, f := range funcs {
			fmt.Println(f)
		}
	}
	fmt.Printf("%d functions, %d calls, %d files\n", len(funcs), calls, len(files))
}

func readProfile(path, module string) (map[string][]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]block{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		// name.go:l.c,l.c stmts count
		colon := strings.LastIndex(line, ":")
		name, rest := line[:colon], strings.Fields(line[colon+1:])
		rel, ok := strings.CutPrefix(name, module+"/")
		if !ok || strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "scripts/") || len(rest) != 3 {
			continue
		}
		lc := strings.SplitN(strings.SplitN(rest[0], ",", 2)[0], ".", 2)
		l, _ := strconv.Atoi(lc[0])
		c, _ := strconv.Atoi(lc[1])
		n, _ := strconv.Atoi(rest[2])
		out[rel] = append(out[rel], block{l, c, n})
	}
	return out, s.Err()
}

func within(b block, start, end token.Position) bool {
	after := b.line > start.Line || (b.line == start.Line && b.col >= start.Column)
	beforeEnd := b.line < end.Line || (b.line == end.Line && b.col <= end.Column)
	return after && beforeEnd
}

func before(a, b block) bool { return a.line < b.line || (a.line == b.line && a.col < b.col) }

func indexOf(bs []block, b block) int {
	for i := range bs {
		if bs[i] == b {
			return i
		}
	}
	return -1
}
