// Command cue-oracle is addonctl's CUE oracle: the real Go CUE evaluator (cuelang.org/go, at the
// version KubeVela 1.10 builds with, see go.mod) used as a library, evaluating as
// `cue export --out json [-e expr]` does. One process evaluates a whole corpus.
//
// Usage:
//
//	cue-oracle corpus --cases DIR [--jobs N] (--update | --check) [case…]
//	cue-oracle addons --root DIR (--update | --check)
//	cue-oracle version
//
// corpus: every case of DIR (tests/cue/cases) is `<name>.cue` (one file) or a directory
// `<name>/` (every `*.cue` file directly inside, in byte order of their names: the files of one
// package). Its golden, next to it, is either
//
//	<name>.json  what `cue export --out json` prints, verbatim (big integers and `2.0` kept), or
//	<name>.err   when CUE fails: "kind: <conflict|incomplete|closed|other>" and
//	             "error: <the first line of the error CUE prints>".
//
// --update (re)writes the goldens of the cases (all, or the ones named) and deletes stale ones;
// --check evaluates every case again and fails when a golden is missing, stale or different.
// The Rust test tests/cue_oracle.rs compares addonctl's evaluator with these goldens.
//
// addons: the goldens of the CUE fixture addons (DIR is tests/fixtures/cue-addons), see
// addons.go.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/parser"
)

// caseTimeout bounds one evaluation (a case is small; this only catches a hang).
const caseTimeout = 20 * time.Second

// cueModule is the module path of the evaluator, whose version `version` reports.
const cueModule = "cuelang.org/go"

// parserVersion is what `cue` passes to parser.FromVersion: the oldest syntax it still accepts,
// v0.4.0, counted as -1000 + 100*minor + patch.
const parserVersion = -1000 + 100*4 + 0

func main() {
	if len(os.Args) < 2 {
		usage("a command is needed")
	}
	var err error
	switch os.Args[1] {
	case "corpus":
		err = runCorpus(os.Args[2:])
	case "addons":
		err = runAddons(os.Args[2:])
	case "version":
		fmt.Println(cueVersion())
	default:
		usage(fmt.Sprintf("unknown command %q", os.Args[1]))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cue-oracle: %v\n", err)
		os.Exit(1)
	}
}

func usage(message string) {
	fmt.Fprintf(os.Stderr, "cue-oracle: %s\n", message)
	fmt.Fprintln(os.Stderr, "usage: cue-oracle corpus --cases DIR [--jobs N] (--update | --check) [case…]")
	fmt.Fprintln(os.Stderr, "       cue-oracle addons --root DIR (--update | --check)")
	fmt.Fprintln(os.Stderr, "       cue-oracle version")
	os.Exit(2)
}

// cueVersion is the version of cuelang.org/go this program was built with.
func cueVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == cueModule {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "unknown"
}

// ---- evaluation, as `cue export --out json [-e expr] FILE…` ----------------------------------

// result is what `cue export` gives: its standard output, or the error it prints.
type result struct {
	stdout []byte
	err    error
}

// parseFile parses as `cue` does: comments kept, syntax back to v0.4 accepted.
func parseFile(name string, src interface{}) (*ast.File, error) {
	return parser.ParseFile(name, src, parser.FromVersion(parserVersion), parser.ParseComments)
}

// export evaluates the CUE files (absolute paths, one directory, one package) as
// `cue export --out json` does, with `-e expr` when expr is not empty: the files are loaded as one
// instance and built (a load or build error fails), the expression is evaluated in its scope,
// the value must be concrete and is printed as indented JSON. Errors elsewhere in the instance
// only fail when the value exported depends on them, as with `cue export -e`.
func export(files []string, expr string) (res result) {
	defer func() {
		// A panic in the evaluator is an oracle failure, reported like an error.
		if r := recover(); r != nil {
			res = result{err: fmt.Errorf("panic: %v", r)}
		}
	}()
	if len(files) == 0 {
		return result{err: fmt.Errorf("no file to evaluate")}
	}
	cfg := &load.Config{Dir: filepath.Dir(files[0]), ParseFile: parseFile}
	instances := load.Instances(files, cfg)
	if len(instances) != 1 {
		return result{err: fmt.Errorf("the files load as %d instances, not one", len(instances))}
	}
	inst := instances[0]
	if inst.Err != nil {
		return result{err: inst.Err}
	}
	ctx := cuecontext.New()
	values, err := ctx.BuildInstances([]*build.Instance{inst})
	if err != nil {
		return result{err: err}
	}
	v := values[0]
	if expr != "" {
		e, err := parser.ParseExpr("--expression", expr)
		if err != nil {
			return result{err: err}
		}
		v = ctx.BuildExpr(e, cue.Scope(v), cue.InferBuiltins(true), cue.ImportPath(inst.ID()))
	}
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return result{err: err}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "    ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		if m, ok := err.(*json.MarshalerError); ok {
			err = m.Err
		}
		return result{err: err}
	}
	return result{stdout: out.Bytes()}
}

// exportWithin is export bounded by caseTimeout: a hang ends the whole program, as nothing can
// stop the evaluation of one case.
func exportWithin(what string, files []string, expr string) result {
	done := make(chan result, 1)
	go func() { done <- export(files, expr) }()
	select {
	case r := <-done:
		return r
	case <-time.After(caseTimeout):
		fmt.Fprintf(os.Stderr, "cue-oracle: %s: CUE gave no answer in %s\n", what, caseTimeout)
		os.Exit(1)
		return result{}
	}
}

// errorText is the error as `cue` prints it, positions relative to dir.
func errorText(err error, dir string) string {
	var b strings.Builder
	errors.Print(&b, err, &errors.Config{Cwd: dir, ToSlash: true})
	return strings.ReplaceAll(b.String(), dir+string(filepath.Separator), "")
}

// firstLine is the first non-blank line of text, trimmed.
func firstLine(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) != "" {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

var (
	// CUE v0.9 reports a comprehension that adds fields to the struct it iterates as "field … not
	// allowed by earlier comprehension or reference cycle": a cycle, not a closed struct.
	cycleError      = regexp.MustCompile(`not allowed by earlier comprehension or reference cycle|structural cycle|cycle error`)
	closedError     = regexp.MustCompile(`not allowed`)
	conflictError   = regexp.MustCompile(`conflicting values|empty disjunction|invalid value|incompatible list lengths`)
	incompleteError = regexp.MustCompile(`incomplete (\w+ )?value|non-concrete value|undefined field|cannot reference optional field|unresolved disjunction`)
)

// kindOf is the error kind of one message, as the Rust test compares it.
func kindOf(text string) string {
	switch {
	case cycleError.MatchString(text):
		return "other"
	case closedError.MatchString(text):
		return "closed"
	case conflictError.MatchString(text):
		return "conflict"
	case incompleteError.MatchString(text):
		return "incomplete"
	}
	return "other"
}

// classify is the kind of the first error line, else of any line of the message.
func classify(first, text string) string {
	if kind := kindOf(first); kind != "other" {
		return kind
	}
	return kindOf(text)
}

// ---- the corpus -------------------------------------------------------------------------------

type corpusCase struct {
	name  string
	files []string
}

type golden struct {
	ext  string
	text string
}

func goldenOf(r result, dir string) golden {
	if r.err == nil {
		return golden{ext: "json", text: string(r.stdout)}
	}
	text := errorText(r.err, dir)
	first := firstLine(text)
	if first == "" {
		first = "an error without message"
	}
	return golden{ext: "err", text: fmt.Sprintf("kind: %s\nerror: %s\n", classify(first, text), first)}
}

// listCases is every case of the corpus, sorted by name.
func listCases(dir string) ([]corpusCase, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var cases []corpusCase
	for _, entry := range entries {
		full := filepath.Join(dir, entry.Name())
		if entry.IsDir() {
			inner, err := os.ReadDir(full)
			if err != nil {
				return nil, err
			}
			var files []string
			for _, f := range inner {
				if !f.IsDir() && strings.HasSuffix(f.Name(), ".cue") {
					files = append(files, filepath.Join(full, f.Name()))
				}
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("case directory %s holds no .cue file", entry.Name())
			}
			sort.Strings(files)
			cases = append(cases, corpusCase{name: entry.Name(), files: files})
		} else if name, ok := strings.CutSuffix(entry.Name(), ".cue"); ok {
			cases = append(cases, corpusCase{name: name, files: []string{full}})
		}
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].name < cases[j].name })
	return cases, nil
}

// readIfExists is the file's text, or ok false when it does not exist.
func readIfExists(file string) (string, bool, error) {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(b), true, nil
}

func otherExt(ext string) string {
	if ext == "json" {
		return "err"
	}
	return "json"
}

func outcome(ext string) string {
	if ext == "json" {
		return "succeeds"
	}
	return "fails"
}

func checkOne(c corpusCase, g golden, dir string) ([]string, error) {
	var problems []string
	have, ok, err := readIfExists(filepath.Join(dir, c.name+"."+g.ext))
	if err != nil {
		return nil, err
	}
	if !ok {
		problems = append(problems, fmt.Sprintf("%s: no golden %s.%s (CUE %s)", c.name, c.name, g.ext, outcome(g.ext)))
	} else if have != g.text {
		problems = append(problems, fmt.Sprintf("%s: %s.%s differs from CUE\n--- golden\n%s--- CUE\n%s", c.name, c.name, g.ext, have, g.text))
	}
	other := otherExt(g.ext)
	if _, ok, err := readIfExists(filepath.Join(dir, c.name+"."+other)); err != nil {
		return nil, err
	} else if ok {
		problems = append(problems, fmt.Sprintf("%s: %s.%s should not exist (CUE %s)", c.name, c.name, other, outcome(g.ext)))
	}
	return problems, nil
}

func updateOne(c corpusCase, g golden, dir string) (bool, error) {
	file := filepath.Join(dir, c.name+"."+g.ext)
	other := filepath.Join(dir, c.name+"."+otherExt(g.ext))
	have, _, err := readIfExists(file)
	if err != nil {
		return false, err
	}
	_, otherExists, err := readIfExists(other)
	if err != nil {
		return false, err
	}
	if err := os.WriteFile(file, []byte(g.text), 0o644); err != nil {
		return false, err
	}
	if err := os.Remove(other); err != nil && !os.IsNotExist(err) {
		return false, err
	}
	return have != g.text || otherExists, nil
}

// staleGoldens are the goldens of no case.
func staleGoldens(dir string, cases []corpusCase) ([]string, error) {
	names := map[string]bool{}
	for _, c := range cases {
		names[c.name] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, e := range entries {
		n := e.Name()
		for _, ext := range []string{".json", ".err"} {
			if stem, ok := strings.CutSuffix(n, ext); ok && !e.IsDir() && !names[stem] {
				stale = append(stale, n)
			}
		}
	}
	return stale, nil
}

// evaluateAll evaluates the cases on `jobs` goroutines, each case with its own CUE context;
// the results are in the order of cases.
func evaluateAll(cases []corpusCase, jobs int) []result {
	results := make([]result, len(cases))
	next := make(chan int)
	done := make(chan struct{})
	for w := 0; w < jobs; w++ {
		go func() {
			for i := range next {
				results[i] = exportWithin(cases[i].name, cases[i].files, "")
			}
			done <- struct{}{}
		}()
	}
	for i := range cases {
		next <- i
	}
	close(next)
	for w := 0; w < jobs; w++ {
		<-done
	}
	return results
}

func runCorpus(args []string) error {
	dir := ""
	mode := ""
	jobs := min(4, runtime.NumCPU())
	var only []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--cases":
			if i+1 >= len(args) {
				usage("--cases needs a directory")
			}
			i++
			abs, err := filepath.Abs(args[i])
			if err != nil {
				return err
			}
			dir = abs
		case a == "--jobs":
			if i+1 >= len(args) {
				usage("--jobs needs a number")
			}
			i++
			n, err := strconv.Atoi(args[i])
			if err != nil || n < 1 || n > 64 {
				usage("--jobs needs a number of goroutines from 1 to 64")
			}
			jobs = n
		case a == "--update" || a == "--check":
			if mode != "" && mode != a[2:] {
				usage("--update and --check exclude each other")
			}
			mode = a[2:]
		case strings.HasPrefix(a, "-"):
			usage(fmt.Sprintf("unknown option %s", a))
		default:
			name := strings.TrimSuffix(a, "/")
			for _, ext := range []string{".cue", ".json", ".err"} {
				name = strings.TrimSuffix(name, ext)
			}
			only = append(only, filepath.Base(name))
		}
	}
	if dir == "" {
		usage("--cases is required")
	}
	if mode == "" {
		usage("one of --update or --check is required")
	}
	cases, err := listCases(dir)
	if err != nil {
		return err
	}
	if len(only) > 0 {
		known := map[string]bool{}
		for _, c := range cases {
			known[c.name] = true
		}
		wanted := map[string]bool{}
		var unknown []string
		for _, n := range only {
			if !known[n] {
				unknown = append(unknown, n)
			}
			wanted[n] = true
		}
		if len(unknown) > 0 {
			usage("no such case: " + strings.Join(unknown, ", "))
		}
		var kept []corpusCase
		for _, c := range cases {
			if wanted[c.name] {
				kept = append(kept, c)
			}
		}
		cases = kept
	}
	jobs = max(1, min(jobs, len(cases)))
	started := time.Now()
	results := evaluateAll(cases, jobs)
	var problems []string
	counts := map[string]int{}
	changed := 0
	for i, c := range cases {
		g := goldenOf(results[i], dir)
		counts[g.ext]++
		if mode == "check" {
			p, err := checkOne(c, g, dir)
			if err != nil {
				return err
			}
			problems = append(problems, p...)
		} else {
			ch, err := updateOne(c, g, dir)
			if err != nil {
				return err
			}
			if ch {
				changed++
				fmt.Printf("updated %s.%s\n", c.name, g.ext)
			}
		}
	}
	if len(only) == 0 {
		stale, err := staleGoldens(dir, cases)
		if err != nil {
			return err
		}
		for _, f := range stale {
			if mode == "check" {
				problems = append(problems, f+": golden of no case")
			} else {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					return err
				}
				fmt.Printf("deleted %s\n", f)
			}
		}
	}
	summary := fmt.Sprintf("cue-oracle: CUE %s, %d cases (%d export, %d fail) in %.1f s on %d goroutine(s)",
		cueVersion(), len(cases), counts["json"], counts["err"], time.Since(started).Seconds(), jobs)
	if mode == "update" {
		summary += fmt.Sprintf(", %d goldens changed", changed)
	}
	fmt.Println(summary)
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "%s\ncue-oracle: %d golden(s) differ from CUE; run `bash scripts/cue-oracle.sh --update` and review the diff\n",
			strings.Join(problems, "\n"), len(problems))
		os.Exit(1)
	}
	return nil
}
