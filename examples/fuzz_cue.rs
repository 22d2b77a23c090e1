//! A mutation fuzzer for the CUE parser and evaluator (run by `scripts/fuzz-cue.sh` for a
//! bounded time, never by the test command). Seeds are the `.cue` files under the directories
//! given (and a few built-in ones); each mutant is evaluated and exported with small limits.
//! An input that makes the evaluator fail internally (a panic) or exceed its time budget by far
//! is written to `target/fuzz-cue/` and the run fails.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use addonctl::cue::{evaluate, Limits, Source};

const SEEDS: &[&str] = &[
    "a: b + 1\nb: 2\nc: {d: *\"x\" | string, e: [for i in [1, 2] {i}]}",
    "#D: {a: int, b?: string}\nx: #D & {a: 1}\ny: [...int] & [1, 2]\nif x.b != _|_ {z: 1}",
    "import \"strings\"\np: [string]: {n: int | *3}\np: q: {}\ns: strings.Join([\"a\"], \"\\(p.q.n)\")",
    "a: >=1 & <=10\na: 5\nl: [1] + [2]\nm: {for k, v in {x: 1} {\"\\(k)\": v}}",
];

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ":",
    "?:",
    "!:",
    ",",
    "\n",
    "...",
    "|",
    "&",
    "*",
    "_|_",
    "_",
    "#D",
    "_h",
    "a",
    "b",
    "x",
    "\"s\"",
    "\"\\(a)\"",
    "1",
    "2.5",
    "for k, v in ",
    "if ",
    "let q = ",
    "!= _|_",
    "== _|_",
    "=~\"^a\"",
    ">=1",
    "int",
    "string",
    "[...int]",
    "close(",
    "len(",
    "+",
    "-",
    "/",
    "&&",
    "||",
    "!",
    "null",
    "true",
    "\"\"\"\n\tx\n\t\"\"\"",
    "[string]: ",
    "a: a",
    "a: {b: a}",
    "[for x in a {x}]",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        usize::try_from(self.next() % (n as u64)).unwrap_or(0)
    }
}

fn mutate(rng: &mut Rng, input: &str, corpus: &[String]) -> String {
    let mut bytes: Vec<char> = input.chars().collect();
    for _ in 0..=rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(5) {
            0 if !bytes.is_empty() => {
                let end = (at + rng.below(8)).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            1 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                bytes.splice(at..at, token.chars());
            }
            2 if !corpus.is_empty() => {
                let other: Vec<char> = corpus[rng.below(corpus.len())].chars().collect();
                let from = rng.below(other.len());
                let to = (from + rng.below(40)).min(other.len());
                bytes.splice(at..at, other[from..to].iter().copied());
            }
            3 if !bytes.is_empty() => {
                let i = rng.below(bytes.len());
                bytes[i] = char::from(u8::try_from(rng.below(95) + 32).unwrap_or(b' '));
            }
            _ => {
                let token = TOKENS[rng.below(TOKENS.len())];
                let n = rng.below(64);
                for _ in 0..n {
                    bytes.splice(at..at, token.chars());
                }
            }
        }
    }
    bytes.into_iter().collect()
}

fn collect(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "cue") {
            if let Ok(text) = fs_err::read_to_string(&path) {
                out.push(text);
            }
        }
    }
}

fn main() {
    let mut seconds = 60u64;
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--seconds" {
            seconds = args.next().and_then(|s| s.parse().ok()).unwrap_or(60);
        } else {
            dirs.push(PathBuf::from(arg));
        }
    }
    let mut corpus: Vec<String> = SEEDS.iter().map(|s| (*s).to_string()).collect();
    for dir in &dirs {
        collect(dir, &mut corpus);
    }
    let limits = Limits {
        max_steps: 200_000,
        max_depth: 64,
        max_bytes: 1 << 20,
        timeout: Duration::from_millis(500),
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id()));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut runs, mut failures) = (0u64, 0u64);
    while Instant::now() < deadline {
        let seed = corpus[rng.below(corpus.len())].clone();
        let input = mutate(&mut rng, &seed, &corpus);
        let start = Instant::now();
        let result = evaluate(&[Source::new("fuzz.cue", input.clone())], &limits)
            .and_then(|i| i.export_all());
        let took = start.elapsed();
        runs += 1;
        let internal = matches!(&result, Err(e) if e.message.contains("internal error"));
        if internal || took > Duration::from_secs(3) {
            failures += 1;
            let dir = Path::new("target/fuzz-cue");
            let _ = fs_err::create_dir_all(dir);
            let file = dir.join(format!("crash-{runs}.cue"));
            let _ = fs_err::write(&file, &input);
            eprintln!("FAILURE ({took:?}, {result:?}): {}", file.display());
        }
    }
    println!("{runs} inputs in {seconds} s, {failures} failures");
    if failures > 0 {
        std::process::exit(1);
    }
}
