package main

// The goldens of the CUE fixture addons (tests/fixtures/cue-addons): what CUE gives for each case
// of cases.json when the files are built exactly as `vela` builds them:
//   - template.cue (with `package main` prepended when it has none), every resources/**.cue
//     declaring `package main`, and a generated file: `package main`, the text of parameter.cue
//     (or resources/parameter.cue), `context: {metadata: <metadata.yaml as KubeVela's Meta struct
//     writes it>}` and `parameter: <the arguments as JSON>`;  → `output` and `outputs`;
//   - each resources/*.cue without a package clause, alone with the parameter text, context and
//     parameter → its `output` (a component; skipped when absent);
//   - NOTES.cue with the same, `context.installer.upgrade` added → `notes`.
// A golden (<addon>.<case>.json in goldens/) holds {output, outputs, components, notes}, each
// value as CUE exports it (numbers and key order kept); the Rust test tests/cue_addons.rs
// compares addonctl's render with it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// addonCase is one entry of cases.json.
type addonCase struct {
	Addon   string          `json:"addon"`
	Case    string          `json:"case"`
	Args    json.RawMessage `json:"args"`
	Upgrade bool            `json:"upgrade"`
}

// meta is KubeVela's addon `Meta` struct (pkg/addon/type.go), which `vela` reads metadata.yaml
// into and writes back as JSON for `context.metadata`: its fields, order and omitempty rules.
type meta struct {
	Name          string            `json:"name"`
	Version       string            `json:"version"`
	Description   string            `json:"description"`
	Icon          string            `json:"icon"`
	URL           string            `json:"url,omitempty"`
	Tags          []string          `json:"tags,omitempty"`
	UXPlugins     map[string]string `json:"uxPlugins,omitempty"`
	DeployTo      *deployTo         `json:"deployTo,omitempty"`
	Dependencies  []*dependency     `json:"dependencies,omitempty"`
	NeedNamespace []string          `json:"needNamespace,omitempty"`
	Invisible     bool              `json:"invisible"`
	System        *systemReqs       `json:"system,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type deployTo struct {
	LegacyRuntimeCluster bool `json:"runtime_cluster,omitempty"`
	DisableControlPlane  bool `json:"disableControlPlane"`
	RuntimeCluster       bool `json:"runtimeCluster"`
}

type dependency struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

type systemReqs struct {
	VelaVersion       string `json:"vela,omitempty"`
	KubernetesVersion string `json:"kubernetes,omitempty"`
}

// velaMeta reads metadata.yaml as `vela` does (YAML turned into JSON, then decoded into Meta,
// unknown fields dropped) and writes the struct back as JSON.
func velaMeta(text []byte) (json.RawMessage, error) {
	var doc interface{}
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, err
	}
	asJSON, err := json.Marshal(jsonable(doc))
	if err != nil {
		return nil, err
	}
	var m meta
	if err := json.Unmarshal(asJSON, &m); err != nil {
		return nil, err
	}
	return marshal(m)
}

// jsonable turns the maps YAML decodes into ones encoding/json writes.
func jsonable(v interface{}) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		out := map[string]interface{}{}
		for k, e := range x {
			out[k] = jsonable(e)
		}
		return out
	case map[interface{}]interface{}:
		out := map[string]interface{}{}
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}

// marshal is compact JSON without HTML escaping.
func marshal(v interface{}) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

var packageClause = regexp.MustCompile(`^package\s+([A-Za-z_][A-Za-z0-9_]*)`)

// packageOf is the package a CUE file declares ("" for none): its first line that is neither
// blank nor a comment decides.
func packageOf(text string) string {
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "//") {
			continue
		}
		if m := packageClause.FindStringSubmatch(t); m != nil {
			return m[1]
		}
		return ""
	}
	return ""
}

// walk lists the files under dir, as sorted slash-separated relative paths.
func walk(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(out)
	return out, err
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// addonGolden is the golden of one case; its fields in the order the golden writes them.
type addonGolden struct {
	Output     json.RawMessage   `json:"output"`
	Outputs    json.RawMessage   `json:"outputs"`
	Components []json.RawMessage `json:"components"`
	Notes      json.RawMessage   `json:"notes"`
}

var jsonNull = json.RawMessage("null")

// field is one field of a JSON object, its value as written.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields are the fields of a JSON object in their order, or ok false when the text is no
// object.
func objectFields(text []byte) ([]field, bool) {
	dec := json.NewDecoder(bytes.NewReader(text))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var fields []field
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := t.(string)
		if !ok {
			return nil, false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		fields = append(fields, field{key: key, value: value})
	}
	return fields, true
}

// withDefaultName gives a component without a name (or a JavaScript-falsy one, as `vela`'s
// check treats it) the name made from its file as `vela` makes it (pkg/addon/render.go): the
// base name with every occurrence of its extension removed, then dots as dashes:
// `a.cue` → `a`, `legacy.worker.cue` → `legacy-worker`.
func withDefaultName(component json.RawMessage, file string) (json.RawMessage, error) {
	fields, ok := objectFields(component)
	if !ok {
		return component, nil
	}
	base := path.Base(file)
	name := strings.ReplaceAll(strings.ReplaceAll(base, path.Ext(base), ""), ".", "-")
	nameJSON, err := marshal(name)
	if err != nil {
		return nil, err
	}
	found := false
	for i, f := range fields {
		if f.key != "name" {
			continue
		}
		found = true
		switch strings.TrimSpace(string(f.value)) {
		case "null", "false", `""`, "0", "0.0":
			fields[i].value = nameJSON
		}
	}
	if !found {
		fields = append(fields, field{key: "name", value: nameJSON})
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(f.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// addonEvaluator evaluates the cases of one fixture root in a scratch directory.
type addonEvaluator struct {
	root string
	tmp  string
}

// exportJSON exports expr from the files; an absent field gives nil when optional.
func (e *addonEvaluator) exportJSON(spec addonCase, caseDir string, files []string, expr, what string, optional bool) (json.RawMessage, error) {
	r := exportWithin(fmt.Sprintf("%s/%s: %s", spec.Addon, spec.Case, what), files, expr)
	if r.err != nil {
		text := errorText(r.err, caseDir)
		if optional && strings.Contains(text, fmt.Sprintf("reference %q not found", expr)) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s/%s: %s: %s", spec.Addon, spec.Case, what, text)
	}
	return bytes.TrimSpace(r.stdout), nil
}

func (e *addonEvaluator) evaluate(spec addonCase) (addonGolden, error) {
	g := addonGolden{Output: jsonNull, Outputs: jsonNull, Components: []json.RawMessage{}, Notes: jsonNull}
	dir := filepath.Join(e.root, spec.Addon)
	read := func(rel string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		return string(b), err
	}
	files, err := walk(dir)
	if err != nil {
		return g, err
	}
	metadataText, err := os.ReadFile(filepath.Join(dir, "metadata.yaml"))
	if err != nil {
		return g, err
	}
	metadata, err := velaMeta(metadataText)
	if err != nil {
		return g, fmt.Errorf("%s/metadata.yaml: %w", spec.Addon, err)
	}
	parameterText := ""
	for _, candidate := range []string{"parameter.cue", "resources/parameter.cue"} {
		if contains(files, candidate) {
			if parameterText, err = read(candidate); err != nil {
				return g, err
			}
			break
		}
	}
	args := spec.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var compactArgs bytes.Buffer
	if err := json.Compact(&compactArgs, args); err != nil {
		return g, fmt.Errorf("%s/%s: args: %w", spec.Addon, spec.Case, err)
	}
	generated := func(upgrade *bool) (string, error) {
		context := struct {
			Metadata  json.RawMessage `json:"metadata"`
			Installer *struct {
				Upgrade bool `json:"upgrade"`
			} `json:"installer,omitempty"`
		}{Metadata: metadata}
		if upgrade != nil {
			context.Installer = &struct {
				Upgrade bool `json:"upgrade"`
			}{Upgrade: *upgrade}
		}
		c, err := marshal(context)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s\ncontext: %s\nparameter: %s\n", parameterText, c, compactArgs.String()), nil
	}
	caseDir, err := os.MkdirTemp(e.tmp, spec.Addon+"-"+spec.Case+"-")
	if err != nil {
		return g, err
	}
	write := func(name, text string) (string, error) {
		full := filepath.Join(caseDir, name)
		return full, os.WriteFile(full, []byte(text), 0o644)
	}
	var resourceCues []string
	for _, f := range files {
		if strings.HasPrefix(f, "resources/") && strings.HasSuffix(f, ".cue") && f != "resources/parameter.cue" {
			resourceCues = append(resourceCues, f)
		}
	}
	plain, err := generated(nil)
	if err != nil {
		return g, err
	}
	if contains(files, "template.cue") {
		template, err := read("template.cue")
		if err != nil {
			return g, err
		}
		if packageOf(template) == "" {
			template = "package main\n" + template
		}
		t, err := write("template.cue", template)
		if err != nil {
			return g, err
		}
		list := []string{t}
		for i, f := range resourceCues {
			text, err := read(f)
			if err != nil {
				return g, err
			}
			if packageOf(text) == "main" {
				full, err := write(fmt.Sprintf("fragment-%d.cue", i), text)
				if err != nil {
					return g, err
				}
				list = append(list, full)
			}
		}
		gen, err := write("generated.cue", "package main\n"+plain)
		if err != nil {
			return g, err
		}
		list = append(list, gen)
		if g.Output, err = e.exportJSON(spec, caseDir, list, "output", "template.cue", false); err != nil {
			return g, err
		}
		outputs, err := e.exportJSON(spec, caseDir, list, "outputs", "template.cue outputs", true)
		if err != nil {
			return g, err
		}
		if outputs != nil {
			g.Outputs = outputs
		}
	}
	for _, f := range resourceCues {
		text, err := read(f)
		if err != nil {
			return g, err
		}
		if packageOf(text) != "" {
			continue
		}
		file, err := write("legacy-"+path.Base(f), plain+"\n"+text)
		if err != nil {
			return g, err
		}
		component, err := e.exportJSON(spec, caseDir, []string{file}, "output", f, true)
		if err != nil {
			return g, err
		}
		if component == nil {
			continue
		}
		if component, err = withDefaultName(component, f); err != nil {
			return g, err
		}
		g.Components = append(g.Components, component)
	}
	if contains(files, "NOTES.cue") {
		notesText, err := read("NOTES.cue")
		if err != nil {
			return g, err
		}
		upgrade := spec.Upgrade
		withInstaller, err := generated(&upgrade)
		if err != nil {
			return g, err
		}
		file, err := write("notes.cue", withInstaller+"\n"+notesText)
		if err != nil {
			return g, err
		}
		notes, err := e.exportJSON(spec, caseDir, []string{file}, "notes", "NOTES.cue", true)
		if err != nil {
			return g, err
		}
		if notes != nil {
			g.Notes = notes
		}
	}
	return g, nil
}

func runAddons(args []string) error {
	root := ""
	mode := ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--root":
			if i+1 >= len(args) {
				usage("--root needs a directory")
			}
			i++
			abs, err := filepath.Abs(args[i])
			if err != nil {
				return err
			}
			root = abs
		case "--update", "--check":
			mode = a[2:]
		default:
			usage(fmt.Sprintf("unknown argument %s", a))
		}
	}
	if root == "" || mode == "" {
		usage("addons needs --root DIR and one of --update or --check")
	}
	casesText, err := os.ReadFile(filepath.Join(root, "cases.json"))
	if err != nil {
		return err
	}
	var cases []addonCase
	if err := json.Unmarshal(casesText, &cases); err != nil {
		return fmt.Errorf("cases.json: %w", err)
	}
	tmp, err := os.MkdirTemp("", "cue-addon-goldens-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	goldens := filepath.Join(root, "goldens")
	if err := os.MkdirAll(goldens, 0o755); err != nil {
		return err
	}
	e := &addonEvaluator{root: root, tmp: tmp}
	failed := 0
	for _, spec := range cases {
		g, err := e.evaluate(spec)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(g); err != nil {
			return fmt.Errorf("%s/%s: %w", spec.Addon, spec.Case, err)
		}
		file := filepath.Join(goldens, spec.Addon+"."+spec.Case+".json")
		if mode == "update" {
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				return err
			}
			continue
		}
		have, ok, err := readIfExists(file)
		if err != nil {
			return err
		}
		if !ok || have != b.String() {
			failed++
			fmt.Fprintf(os.Stderr, "cue-addon-goldens: %s differs from CUE\n", file)
		}
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "cue-addon-goldens: %d golden(s) differ; run scripts/cue-addon-goldens.sh --update and review\n", failed)
		os.Exit(1)
	}
	verb := "match CUE"
	if mode == "update" {
		verb = "written"
	}
	fmt.Fprintf(os.Stderr, "cue-addon-goldens: CUE %s, %d cases %s\n", cueVersion(), len(cases), verb)
	return nil
}
