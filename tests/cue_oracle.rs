//! The CUE oracle corpus: every case of `tests/cue/cases` evaluated by `addonctl::cue` and
//! compared with its golden, which the real Go CUE evaluator gave (`scripts/cue-oracle.sh`).
//!
//! A case is `<name>.cue` or a directory `<name>/` of `.cue` files (one package, files in byte
//! order of their names). Its golden is `<name>.json` (what `cue export --out json` printed) or
//! `<name>.err` (the oracle failed: `kind: …` and its first error line). A case agrees when both
//! export the same JSON value (integers and floats apart, field order ignored) or both fail
//! with a matching kind: `conflict` → [`ErrorKind::Conflict`], `incomplete` →
//! [`ErrorKind::Incomplete`], `closed` (a field a closed struct does not allow) → `Conflict` or
//! `Other`, `other` → any failure but [`ErrorKind::Unsupported`] ("not implemented" is no
//! agreement), which only a case carrying the comment `// accept: unsupported` accepts (an
//! unknown package or function, where the oracle fails too).
//!
//! A case carrying the comment `// known gap: <why>` is one the evaluator does not yet agree on:
//! it is listed in the summary and must still disagree (so the comment goes when the gap closes).
//!
//! `ADDONCTL_CUE_CASES=substring` runs only the cases whose name contains it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use addonctl::cue::{self, ErrorKind, Limits, Source};

/// The issue asks for at least this many cases.
const MIN_CASES: usize = 150;
/// How much of a value a failure report shows.
const SHOW_CHARS: usize = 600;

struct Case {
    name: String,
    sources: Vec<Source>,
}

impl Case {
    /// Whether an `Unsupported` error agrees with an `other` failure of the oracle.
    fn accepts_unsupported(&self) -> bool {
        self.sources
            .iter()
            .any(|s| s.text.lines().any(|l| l.trim() == "// accept: unsupported"))
    }

    /// Why the evaluator does not agree yet, when the case says so (`// known gap: …`).
    fn known_gap(&self) -> Option<&str> {
        self.sources.iter().find_map(|s| {
            s.text
                .lines()
                .find_map(|l| l.trim().strip_prefix("// known gap:").map(str::trim))
        })
    }
}

enum Golden {
    Json(Json),
    Fail { kind: String, line: String },
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cue/cases")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Every case, sorted by name (the order `scripts/cue-oracle` uses).
fn load_cases(dir: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "cue"))
                .collect();
            files.sort();
            let sources = files
                .iter()
                .map(|f| Source::new(f.file_name().unwrap().to_string_lossy(), read(f)))
                .collect();
            cases.push(Case {
                name: file_name,
                sources,
            });
        } else if let Some(name) = file_name.strip_suffix(".cue") {
            cases.push(Case {
                name: name.to_string(),
                sources: vec![Source::new(file_name.clone(), read(&path))],
            });
        }
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

fn load_golden(dir: &Path, name: &str) -> Result<Golden, String> {
    let json = dir.join(format!("{name}.json"));
    let err = dir.join(format!("{name}.err"));
    match (json.exists(), err.exists()) {
        (true, false) => parse_json(&read(&json))
            .map(Golden::Json)
            .map_err(|e| format!("{name}.json: {e}")),
        (false, true) => {
            let text = read(&err);
            let mut lines = text.lines();
            let kind = lines.next().and_then(|l| l.strip_prefix("kind: "));
            let line = lines.next().and_then(|l| l.strip_prefix("error: "));
            match (kind, line) {
                (Some(k), Some(l))
                    if ["conflict", "incomplete", "closed", "other"].contains(&k) =>
                {
                    Ok(Golden::Fail {
                        kind: k.to_string(),
                        line: l.to_string(),
                    })
                }
                _ => Err(format!("{name}.err: not `kind: …` and `error: …`")),
            }
        }
        (true, true) => Err(format!("{name}: both {name}.json and {name}.err exist")),
        (false, false) => Err(format!(
            "{name}: no golden; run `bash scripts/cue-oracle.sh --update {name}`"
        )),
    }
}

/// What addonctl's evaluator gave for one case.
enum Actual {
    Json(Json),
    Fail(cue::Error),
    Panic(String),
}

fn evaluate(case: &Case) -> Actual {
    let run = || cue::evaluate(&case.sources, &Limits::default())?.export_all_text();
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(Ok(text)) => match parse_json(&text) {
            Ok(value) => Actual::Json(value),
            Err(e) => Actual::Panic(format!("the evaluator exported invalid JSON ({e}): {text}")),
        },
        Ok(Err(e)) => Actual::Fail(e),
        Err(payload) => Actual::Panic(
            payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "a panic without message".to_string()),
        ),
    }
}

fn kind_agrees(golden: &str, actual: ErrorKind, accept_unsupported: bool) -> bool {
    match golden {
        "conflict" => actual == ErrorKind::Conflict,
        "incomplete" => actual == ErrorKind::Incomplete,
        "closed" => matches!(actual, ErrorKind::Conflict | ErrorKind::Other),
        _ => actual != ErrorKind::Unsupported || accept_unsupported,
    }
}

/// `None` when the case agrees with its golden, else why not (expected vs actual).
fn compare(case: &Case, golden: &Golden, actual: &Actual) -> Option<String> {
    match (golden, actual) {
        (_, Actual::Panic(message)) => Some(format!("the evaluator panicked: {message}")),
        (Golden::Json(expected), Actual::Json(actual)) => {
            let (path, want, got) = first_difference(expected, actual, "")?;
            Some(format!(
                "values differ at {}: expected {}, actual {}\n    expected: {}\n    actual:   {}",
                if path.is_empty() { "the root" } else { &path },
                show(&want),
                show(&got),
                show(&expected.to_string()),
                show(&actual.to_string()),
            ))
        }
        (Golden::Json(expected), Actual::Fail(e)) => Some(format!(
            "expected a value, the evaluator failed ({:?}): {e}\n    expected: {}",
            e.kind,
            show(&expected.to_string())
        )),
        (Golden::Fail { kind, line }, Actual::Json(value)) => Some(format!(
            "expected a failure ({kind}: {line}), the evaluator exported\n    actual:   {}",
            show(&value.to_string())
        )),
        (Golden::Fail { kind, line }, Actual::Fail(e)) => {
            (!kind_agrees(kind, e.kind, case.accepts_unsupported())).then(|| {
                format!(
                    "both fail, but the kind differs: expected {kind} ({line}), actual {:?}: {e}",
                    e.kind
                )
            })
        }
    }
}

fn show(text: &str) -> String {
    if text.chars().count() <= SHOW_CHARS {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(SHOW_CHARS).collect::<String>())
    }
}

/// The group of a case for the summary: its name up to the first `_` (`pkg_strings_join` →
/// `pkg_strings`).
fn group(name: &str) -> &str {
    let end = if let Some(rest) = name.strip_prefix("pkg_") {
        rest.find('_').map_or(name.len(), |i| i + 4)
    } else {
        name.find('_').unwrap_or(name.len())
    };
    &name[..end]
}

#[test]
fn every_corpus_case_agrees_with_the_cue_oracle() {
    let dir = cases_dir();
    let filter = std::env::var("ADDONCTL_CUE_CASES").unwrap_or_default();
    let cases: Vec<Case> = load_cases(&dir)
        .into_iter()
        .filter(|c| c.name.contains(&filter))
        .collect();
    assert!(!cases.is_empty(), "no case matches {filter:?}");
    let mut failures = Vec::new();
    let mut gaps = Vec::new();
    let mut groups: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for case in &cases {
        let outcome = match load_golden(&dir, &case.name) {
            Ok(golden) => compare(case, &golden, &evaluate(case)),
            Err(e) => Some(e),
        };
        let entry = groups.entry(group(&case.name)).or_default();
        entry.1 += 1;
        match (outcome, case.known_gap()) {
            (None, None) => entry.0 += 1,
            (None, Some(_)) => failures.push(format!(
                "✗ {}: agrees now: remove its `// known gap:` comment",
                case.name
            )),
            (Some(why), Some(gap)) => gaps.push(format!("  {} ({gap}): {why}", case.name)),
            (Some(why), None) => failures.push(format!("✗ {}: {why}", case.name)),
        }
    }
    let passed = cases.len() - failures.len() - gaps.len();
    let mut summary = format!(
        "{passed} of {} CUE oracle cases agree with the oracle",
        cases.len()
    );
    for (name, (ok, total)) in &groups {
        let _ = write!(summary, "\n  {name:<14} {ok:>3}/{total}");
    }
    if !gaps.is_empty() {
        let _ = write!(
            summary,
            "\n{} known gaps (`// known gap:`):\n{}",
            gaps.len(),
            gaps.join("\n")
        );
    }
    eprintln!("{summary}");
    if !failures.is_empty() {
        eprintln!("{}", failures.join("\n"));
        panic!(
            "{} of {} CUE oracle cases disagree with the oracle (listed above)",
            failures.len(),
            cases.len()
        );
    }
}

#[test]
fn the_corpus_has_a_golden_for_every_case_and_no_other() {
    let dir = cases_dir();
    let cases = load_cases(&dir);
    assert!(
        cases.len() >= MIN_CASES,
        "{} cases, at least {MIN_CASES} wanted",
        cases.len()
    );
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    let mut problems = Vec::new();
    for case in &cases {
        if case.sources.is_empty() {
            problems.push(format!("{}: a directory without .cue files", case.name));
        }
        if let Err(e) = load_golden(&dir, &case.name) {
            problems.push(e);
        }
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        let stem = file
            .strip_suffix(".json")
            .or_else(|| file.strip_suffix(".err"));
        if let Some(stem) = stem {
            if !names.contains(&stem) {
                problems.push(format!("{file}: a golden of no case"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---- JSON with numbers kept as written -------------------------------------------------------

/// A JSON value whose numbers keep the difference between integers (exact, any size) and
/// floats, as CUE exports them.
#[derive(Debug, Clone)]
enum Json {
    Null,
    Bool(bool),
    /// An integer as canonical decimal text (no `+`, no `-0`).
    Int(String),
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn number(text: &str) -> Result<Json, String> {
        if text.contains(['.', 'e', 'E']) {
            text.parse::<f64>()
                .map(Json::Float)
                .map_err(|e| format!("bad number {text}: {e}"))
        } else {
            let digits = text.trim_start_matches('+');
            let (neg, digits) = match digits.strip_prefix('-') {
                Some(d) => (true, d),
                None => (false, digits),
            };
            let digits = digits.trim_start_matches('0');
            if !digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(format!("bad number {text}"));
            }
            Ok(Json::Int(match (digits.is_empty(), neg) {
                (true, _) => "0".to_string(),
                (false, true) => format!("-{digits}"),
                (false, false) => digits.to_string(),
            }))
        }
    }

    fn from_value(value: &serde_json::Value) -> Json {
        match value {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => {
                let text = n.to_string();
                Json::number(&text).unwrap_or(Json::Str(format!("<number {text}>")))
            }
            serde_json::Value::String(s) => Json::Str(s.clone()),
            serde_json::Value::Array(items) => {
                Json::Arr(items.iter().map(Json::from_value).collect())
            }
            serde_json::Value::Object(map) => Json::Obj(
                map.iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }
}

impl std::fmt::Display for Json {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Int(i) => f.write_str(i),
            Json::Float(x) => write!(f, "{x:?}"),
            Json::Str(s) => write!(f, "{}", serde_json::Value::String(s.clone())),
            Json::Arr(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Json::Obj(fields) => {
                f.write_str("{")?;
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:{v}", serde_json::Value::String(k.clone()))?;
                }
                f.write_str("}")
            }
        }
    }
}

fn floats_equal(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-15 * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

/// The first place where two values differ: (path, expected there, actual there).
fn first_difference(want: &Json, got: &Json, path: &str) -> Option<(String, String, String)> {
    let differ = || Some((path.to_string(), want.to_string(), got.to_string()));
    match (want, got) {
        (Json::Null, Json::Null) => None,
        (Json::Bool(a), Json::Bool(b)) if a == b => None,
        (Json::Int(a), Json::Int(b)) if a == b => None,
        (Json::Float(a), Json::Float(b)) if floats_equal(*a, *b) => None,
        (Json::Str(a), Json::Str(b)) if a == b => None,
        (Json::Arr(a), Json::Arr(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, &format!("{path}[{i}]"))),
        (Json::Obj(a), Json::Obj(b)) => {
            let b_map: BTreeMap<&str, &Json> = b.iter().map(|(k, v)| (k.as_str(), v)).collect();
            let a_map: BTreeMap<&str, &Json> = a.iter().map(|(k, v)| (k.as_str(), v)).collect();
            for (k, v) in &a_map {
                let sub = if path.is_empty() {
                    (*k).to_string()
                } else {
                    format!("{path}.{k}")
                };
                match b_map.get(k) {
                    Some(w) => {
                        if let Some(d) = first_difference(v, w, &sub) {
                            return Some(d);
                        }
                    }
                    None => return Some((sub, v.to_string(), "(absent)".to_string())),
                }
            }
            let extra = b_map.keys().find(|k| !a_map.contains_key(*k))?;
            let sub = if path.is_empty() {
                (*extra).to_string()
            } else {
                format!("{path}.{extra}")
            };
            Some((sub, "(absent)".to_string(), b_map[extra].to_string()))
        }
        _ => differ(),
    }
}

/// Parses the JSON `cue export` prints, keeping every number's text.
fn parse_json(text: &str) -> Result<Json, String> {
    let mut p = Parser {
        bytes: text.as_bytes(),
        text,
        at: 0,
        depth: 0,
    };
    let value = p.value()?;
    p.skip_ws();
    if p.at != p.bytes.len() {
        return Err(format!("trailing text at byte {}", p.at));
    }
    Ok(value)
}

struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn expect(&mut self, word: &str) -> Result<(), String> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            Err(format!("expected {word} at byte {}", self.at))
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.skip_ws();
        self.depth += 1;
        if self.depth > 512 {
            return Err("nested too deeply".to_string());
        }
        let value = match self.bytes.get(self.at) {
            Some(b'n') => self.expect("null").map(|()| Json::Null),
            Some(b't') => self.expect("true").map(|()| Json::Bool(true)),
            Some(b'f') => self.expect("false").map(|()| Json::Bool(false)),
            Some(b'"') => self.string().map(Json::Str),
            Some(b'[') => self.array(),
            Some(b'{') => self.object(),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                while self.at < self.bytes.len()
                    && matches!(
                        self.bytes[self.at],
                        b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                    )
                {
                    self.at += 1;
                }
                Json::number(&self.text[start..self.at])
            }
            _ => Err(format!("unexpected text at byte {}", self.at)),
        };
        self.depth -= 1;
        value
    }

    fn string(&mut self) -> Result<String, String> {
        let start = self.at;
        self.at += 1;
        while self.at < self.bytes.len() {
            match self.bytes[self.at] {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return serde_json::from_str(&self.text[start..self.at])
                        .map_err(|e| format!("bad string at byte {start}: {e}"));
                }
                _ => self.at += 1,
            }
        }
        Err(format!("unterminated string at byte {start}"))
    }

    fn array(&mut self) -> Result<Json, String> {
        self.at += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
            return Ok(Json::Arr(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_ws();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Json::Arr(items));
                }
                _ => return Err(format!("expected , or ] at byte {}", self.at)),
            }
        }
    }

    fn object(&mut self) -> Result<Json, String> {
        self.at += 1;
        let mut fields = Vec::new();
        self.skip_ws();
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
            return Ok(Json::Obj(fields));
        }
        loop {
            self.skip_ws();
            let key = self.string()?;
            self.skip_ws();
            self.expect(":")?;
            fields.push((key, self.value()?));
            self.skip_ws();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Json::Obj(fields));
                }
                _ => return Err(format!("expected , or }} at byte {}", self.at)),
            }
        }
    }
}

#[test]
fn the_golden_comparison_tells_integers_floats_and_big_integers_apart() {
    let golden =
        parse_json(r#"{"a": 2, "b": 2.0, "big": 123456789012345678901234567890, "l": [1E+2, -0]}"#)
            .unwrap();
    let same = Json::from_value(&serde_json::json!({"l": [100.0, 0], "b": 2.0, "a": 2, "big": 0}));
    // Everything agrees but `big` (serde_json without arbitrary precision cannot hold it).
    let (path, want, got) = first_difference(&golden, &same, "").unwrap();
    assert_eq!(
        (path.as_str(), want.as_str(), got.as_str()),
        ("big", "123456789012345678901234567890", "0")
    );
    let int_for_float =
        Json::from_value(&serde_json::json!({"a": 2, "b": 2, "big": 1, "l": [100.0, 0]}));
    assert_eq!(
        first_difference(&golden, &int_for_float, "").map(|d| d.0),
        Some("b".to_string())
    );
    let missing = Json::from_value(&serde_json::json!({"a": 2}));
    assert_eq!(
        first_difference(&golden, &missing, "").map(|d| d.0),
        Some("b".to_string())
    );
    assert!(first_difference(&golden, &golden.clone(), "").is_none());
    assert!(parse_json("{\"a\": 1,}").is_err());
    assert!(kind_agrees("closed", ErrorKind::Conflict, false));
    assert!(!kind_agrees("conflict", ErrorKind::Unsupported, true));
    assert!(!kind_agrees("incomplete", ErrorKind::Conflict, false));
    assert!(kind_agrees("other", ErrorKind::Syntax, false));
    assert!(!kind_agrees("other", ErrorKind::Unsupported, false));
    assert!(kind_agrees("other", ErrorKind::Unsupported, true));
}
