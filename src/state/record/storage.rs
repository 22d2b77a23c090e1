//! How a record is stored: one Secret `addon-record-<addon>` while its JSON is small (the
//! format every earlier version wrote and reads: key `record`, uncompressed), else the JSON
//! gzipped and cut into shards (Secrets `addon-record-<addon>-<digest>-<n>`, each at most
//! [`Layout::shard_bytes`]) that the record Secret points to (key `recordIndex`: the shards'
//! names, the stream's SHA-256 and sizes).
//!
//! Guarantees:
//! - the record Secret keeps its name and labels whatever the format, so tools that read only
//!   labels (KubeVela's, `list`) see every addon as before;
//! - shards are written before the record Secret that points to them, under names derived from
//!   their content, so a record Secret never points to a shard that is not there yet, and a
//!   write interrupted between the two leaves the previous record whole (its own shards are
//!   untouched; the new ones are orphans that the next write or `disable` deletes);
//! - a record that does not fit [`Layout::max_shards`] shards is refused before anything is
//!   written ([`check_room`] is called before an enable applies anything);
//! - reading checks the digest: a missing or changed shard is an error, never a shorter record.

use std::io::{Read as _, Write as _};

use base64::Engine as _;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{record_name, Record, RECORD_KEY};
use crate::cluster::{self, Cluster};
pub use crate::error::RecordError;
use crate::model::wire::{secret_gvk, LABEL_RECORD};
pub use crate::model::wire::{LABEL_RECORD_OF, LABEL_RECORD_PART};
use crate::state::lease::addon_lease;
/// The key of a sharded record's index in the record Secret.
pub const INDEX_KEY: &str = "recordIndex";
/// The key of a shard's bytes.
pub const CHUNK_KEY: &str = "chunk";

/// Size limits of the stored record.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// The largest JSON kept inline (uncompressed, the format of earlier versions).
    pub inline_max: usize,
    /// The most compressed bytes per shard (a Secret holds at most 1 MiB of data).
    pub shard_bytes: usize,
    /// The most shards one record may use.
    pub max_shards: usize,
}

impl Layout {
    /// The limits used: inline up to 512 KiB of JSON, shards of 768 KiB (1 MiB once base64
    /// encoded in the request), at most 64 of them (48 MiB compressed: several million
    /// object×cluster pairs).
    pub const DEFAULT: Layout = Layout {
        inline_max: 512 * 1024,
        shard_bytes: 768 * 1024,
        max_shards: 64,
    };

    fn budget(&self) -> usize {
        self.shard_bytes * self.max_shards
    }
}

/// The most bytes a sharded record inflates to when read (a bound on what a hostile Secret can
/// make addonctl allocate).
const MAX_INFLATED: u64 = 1024 * 1024 * 1024;

/// What a record uses in the worst case per object×cluster pair a pending revision plans and
/// whose uid is not known yet (the uid and its key, uncompressed).
pub const PAIR_GROWTH: usize = 64;

/// Where a sharded record's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Index {
    /// `gzip`.
    encoding: String,
    /// SHA-256 of the compressed stream (hex).
    sha256: String,
    /// Compressed bytes.
    size: usize,
    /// The JSON's bytes.
    inflated: usize,
    /// The shards, in order.
    shards: Vec<String>,
}

/// A record as Secrets: the record Secret and its shards (none when inline).
#[derive(Debug, Clone)]
pub struct Encoded {
    /// The record Secret.
    pub main: Value,
    /// Its shards, in order.
    pub shards: Vec<Value>,
}

impl Encoded {
    /// The largest Secret's data, in bytes (decoded).
    pub fn largest_data(&self) -> usize {
        std::iter::once(&self.main)
            .chain(&self.shards)
            .map(data_size)
            .max()
            .unwrap_or(0)
    }

    /// Every Secret's data, in bytes (decoded).
    pub fn total_data(&self) -> usize {
        std::iter::once(&self.main)
            .chain(&self.shards)
            .map(data_size)
            .sum()
    }
}

fn data_size(secret: &Value) -> usize {
    secret
        .get("data")
        .and_then(Value::as_object)
        .map_or(0, |data| {
            data.iter()
                .map(|(k, v)| k.len() + v.as_str().map_or(0, |s| s.len() / 4 * 3))
                .sum()
        })
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            use std::fmt::Write as _;
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Gzips bytes.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// Inflates gzipped bytes, refusing more than `limit` bytes.
pub fn gunzip(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    GzDecoder::new(bytes)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("not gzip: {e}"))?;
    if out.len() as u64 > limit {
        return Err(format!("it inflates to more than {limit} bytes"));
    }
    Ok(out)
}

/// Object×cluster pairs a record lists (dispatched and planned).
pub fn pairs(record: &Record) -> usize {
    record
        .dispatched
        .values()
        .map(|i| i.objects.len())
        .sum::<usize>()
        + record
            .pending
            .as_ref()
            .map_or(0, |p| p.dispatched.values().map(Vec::len).sum())
}

/// Encodes a record as Secrets in `ns`: inline when small, else compressed and sharded.
pub fn encode(record: &Record, ns: &str, layout: &Layout) -> Result<Encoded, RecordError> {
    let mut main = record.to_secret(ns);
    let json = serde_json::to_vec(record).unwrap_or_default();
    if json.len() <= layout.inline_max {
        return Ok(Encoded {
            main,
            shards: Vec::new(),
        });
    }
    let compressed = gzip(&json);
    if compressed.len() > layout.budget() {
        return Err(RecordError::TooLarge {
            addon: record.name.clone(),
            bytes: compressed.len(),
            limit: layout.budget(),
            pairs: pairs(record),
        });
    }
    let digest = sha256_hex(&compressed);
    let base = record_name(&record.name);
    let mut shards = Vec::new();
    let mut names = Vec::new();
    for (i, chunk) in compressed.chunks(layout.shard_bytes.max(1)).enumerate() {
        let name = format!("{base}-{}-{i}", &digest[..10]);
        shards.push(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {
                    LABEL_RECORD_OF: record.name,
                    LABEL_RECORD_PART: "shard",
                    "app.kubernetes.io/managed-by": "addonctl",
                },
            },
            "type": "Opaque",
            "data": {CHUNK_KEY: b64(chunk)},
        }));
        names.push(name);
    }
    let index = Index {
        encoding: "gzip".to_owned(),
        sha256: digest,
        size: compressed.len(),
        inflated: json.len(),
        shards: names,
    };
    main["data"] = json!({INDEX_KEY: b64(&serde_json::to_vec(&index).unwrap_or_default())});
    Ok(Encoded { main, shards })
}

/// Refuses, before anything is applied, a record that could outgrow its budget once the uids
/// of what its pending revision plans are known.
pub fn check_room(record: &Record, layout: &Layout) -> Result<(), RecordError> {
    let json = serde_json::to_vec(record).unwrap_or_default();
    let planned = record
        .pending
        .as_ref()
        .map_or(0, |p| p.dispatched.values().map(Vec::len).sum::<usize>());
    let growth = planned * PAIR_GROWTH;
    if json.len() + growth <= layout.inline_max {
        return Ok(());
    }
    let bytes = gzip(&json).len() + growth;
    if bytes > layout.budget() {
        return Err(RecordError::TooLarge {
            addon: record.name.clone(),
            bytes,
            limit: layout.budget(),
            pairs: pairs(record),
        });
    }
    Ok(())
}

fn text_at<'a>(secret: &'a Value, pointer: &str) -> Option<&'a str> {
    secret.pointer(pointer).and_then(Value::as_str)
}

/// The name of a Secret.
fn name_of(secret: &Value) -> &str {
    text_at(secret, "/metadata/name").unwrap_or_default()
}

/// Whether a record Secret is sharded.
pub fn is_sharded(main: &Value) -> bool {
    text_at(main, &format!("/data/{INDEX_KEY}")).is_some()
}

/// The addon a record Secret belongs to (its label).
fn addon_of(main: &Value) -> String {
    text_at(
        main,
        &format!(
            "/metadata/labels/{}",
            crate::model::wire::LABEL_NAME.replace('/', "~1")
        ),
    )
    .map_or_else(
        || name_of(main).trim_start_matches("addon-record-").to_owned(),
        str::to_owned,
    )
}

/// Reads a record from its Secret and, when sharded, the shards (any Secrets; those it names
/// are used). `Ok(None)`: the Secret holds no record (neither format).
pub fn decode(main: &Value, shards: &[Value]) -> Result<Option<Record>, RecordError> {
    let addon = addon_of(main);
    let unreadable = |reason: String| RecordError::Unreadable {
        addon: addon.clone(),
        namespace: text_at(main, "/metadata/namespace")
            .unwrap_or_default()
            .to_owned(),
        secret: name_of(main).to_owned(),
        reason,
    };
    if text_at(main, &format!("/data/{RECORD_KEY}")).is_some() {
        return Record::from_secret(main)
            .map(Some)
            .ok_or_else(|| unreadable("its `record` is not addonctl's JSON".to_owned()));
    }
    let Some(encoded) = text_at(main, &format!("/data/{INDEX_KEY}")) else {
        return Ok(None);
    };
    let index: Index = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| unreadable(format!("its `{INDEX_KEY}` is not addonctl's index")))?;
    if index.encoding != "gzip" || index.size > Layout::DEFAULT.budget() * 4 {
        return Err(unreadable(format!(
            "unknown encoding `{}` or size {}",
            index.encoding, index.size
        )));
    }
    let mut compressed = Vec::with_capacity(index.size);
    for name in &index.shards {
        let shard = shards
            .iter()
            .find(|s| name_of(s) == name)
            .ok_or_else(|| unreadable(format!("its shard `{name}` is missing")))?;
        let bytes = text_at(shard, &format!("/data/{CHUNK_KEY}"))
            .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok())
            .ok_or_else(|| unreadable(format!("its shard `{name}` has no `{CHUNK_KEY}`")))?;
        compressed.extend_from_slice(&bytes);
    }
    if compressed.len() != index.size || sha256_hex(&compressed) != index.sha256 {
        return Err(unreadable(
            "its shards do not match its digest (changed by someone else)".to_owned(),
        ));
    }
    let json = gunzip(&compressed, MAX_INFLATED).map_err(unreadable)?;
    serde_json::from_slice(&json)
        .map(Some)
        .map_err(|e| unreadable(format!("its JSON does not read: {e}")))
}

/// A record as stored, with what a conditional write needs.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    /// The record; `None` when there is none.
    pub record: Option<Record>,
    /// The record Secret's resourceVersion.
    pub resource_version: Option<String>,
    /// The record Secret's uid.
    pub uid: Option<String>,
    /// Whether it is sharded (shards to clean up after the next write).
    pub sharded: bool,
}

/// Reads addon `addon`'s record (one read; one more list when it is sharded).
pub async fn read(cluster: &Cluster, ns: &str, addon: &str) -> crate::Result<Stored> {
    let Some(secret) = cluster
        .get(&secret_gvk(), Some(ns), &record_name(addon))
        .await?
    else {
        return Ok(Stored::default());
    };
    let value = crate::state::to_value(&secret);
    let sharded = is_sharded(&value);
    let shards = if sharded {
        shards_of(cluster, ns, Some(addon)).await?
    } else {
        Vec::new()
    };
    Ok(Stored {
        record: decode(&value, &shards)?,
        resource_version: secret.metadata.resource_version.clone(),
        uid: secret.metadata.uid.clone(),
        sharded,
    })
}

/// The shards in `ns` (of one addon, or of all): one labelled list.
async fn shards_of(cluster: &Cluster, ns: &str, addon: Option<&str>) -> crate::Result<Vec<Value>> {
    let selector = match addon {
        Some(addon) => format!("{LABEL_RECORD_PART}=shard,{LABEL_RECORD_OF}={addon}"),
        None => format!("{LABEL_RECORD_PART}=shard"),
    };
    Ok(cluster
        .list_reused(&secret_gvk(), Some(ns), &selector)
        .await?
        .iter()
        .map(crate::state::to_value)
        .collect())
}

/// Every record in `ns`: one labelled list, plus one list of shards when any is sharded.
/// Secrets labelled as records that hold none (neither format) are left out; a damaged one is
/// an error (what it lists would be forgotten).
pub async fn read_all(cluster: &Cluster, ns: &str) -> crate::Result<Vec<Record>> {
    let (records, damaged) = read_all_readable(cluster, ns).await?;
    match damaged.into_iter().next() {
        Some(error) => Err(error.into()),
        None => Ok(records),
    }
}

/// [`read_all`], the damaged records apart: each is its addon's problem (reading that addon's
/// record fails), not every other addon's. For what only reads; what deletes objects another
/// addon may share uses [`read_all`].
pub async fn read_all_readable(
    cluster: &Cluster,
    ns: &str,
) -> crate::Result<(Vec<Record>, Vec<RecordError>)> {
    let (mains, shards) = list_all(cluster, ns).await?;
    let mut out = Vec::new();
    let mut damaged = Vec::new();
    for main in &mains {
        match decode(main, &shards) {
            Ok(Some(record)) => out.push(record),
            Ok(None) => {}
            Err(error) => damaged.push(error),
        }
    }
    Ok((out, damaged))
}

/// Addon `addon`'s record as [`read`] gives it, and every other addon's record as
/// [`read_all`] gives them, from the lists of [`read_all`]: for a command that reads every
/// record anyway, no request of its own.
pub async fn read_with_others(
    cluster: &Cluster,
    ns: &str,
    addon: &str,
) -> crate::Result<(Stored, Vec<Record>)> {
    let (mains, shards) = list_all(cluster, ns).await?;
    let name = record_name(addon);
    let mut stored = Stored::default();
    let mut others = Vec::new();
    for main in &mains {
        let record = decode(main, &shards)?;
        if name_of(main) != name {
            others.extend(record);
            continue;
        }
        let text = |field: &str| {
            main.pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        stored = Stored {
            record,
            resource_version: text("resourceVersion"),
            uid: text("uid"),
            sharded: is_sharded(main),
        };
    }
    Ok((stored, others))
}

/// The record Secrets of `ns` and, when any is sharded, every shard (reused lists).
async fn list_all(cluster: &Cluster, ns: &str) -> crate::Result<(Vec<Value>, Vec<Value>)> {
    // Under an addon's lock, its record is read again by name (see `Cluster::list_locked`).
    let mains: Vec<Value> = cluster
        .list_locked(
            &secret_gvk(),
            Some(ns),
            &format!("{LABEL_RECORD}=true"),
            |lease, addon| (lease == addon_lease(addon)).then(|| record_name(addon)),
        )
        .await?
        .iter()
        .map(crate::state::to_value)
        .collect();
    let shards = if mains.iter().any(is_sharded) {
        shards_of(cluster, ns, None).await?
    } else {
        Vec::new()
    };
    Ok((mains, shards))
}

/// The outcome of a conditional write.
#[derive(Debug)]
pub enum Written {
    /// Written: the record Secret as stored, and whether it is sharded.
    Stored(Box<DynamicObject>, bool),
    /// The record Secret changed since `version` was read: nothing of it was overwritten.
    Conflict,
}

/// Writes a record: its shards first (when sharded), then the record Secret, conditional on
/// `version` when given; then deletes the shards it no longer uses (when it or the previous
/// record was sharded).
pub async fn write(
    cluster: &Cluster,
    ns: &str,
    record: &Record,
    version: Option<&str>,
    was_sharded: bool,
) -> crate::Result<Written> {
    let encoded = encode(record, ns, &Layout::DEFAULT)?;
    for shard in &encoded.shards {
        cluster.apply(shard, ns).await?;
    }
    let mut main = encoded.main;
    if let Some(version) = version {
        main["metadata"]["resourceVersion"] = json!(version);
    }
    let stored = match cluster.apply(&main, ns).await {
        Ok(stored) => stored,
        Err(cluster::Error::Conflict { .. }) => return Ok(Written::Conflict),
        Err(e) => return Err(e.into()),
    };
    if was_sharded || !encoded.shards.is_empty() {
        let keep: Vec<&str> = encoded.shards.iter().map(name_of).collect();
        if let Err(e) = delete_shards(cluster, ns, &record.name, &keep).await {
            tracing::debug!("unused shards of `{}` are left: {e}", record.name);
        }
    }
    Ok(Written::Stored(
        Box::new(stored),
        !encoded.shards.is_empty(),
    ))
}

/// Deletes the shards of addon `addon`'s record but those named in `keep`. Returns the names
/// deleted.
pub async fn delete_shards(
    cluster: &Cluster,
    ns: &str,
    addon: &str,
    keep: &[&str],
) -> crate::Result<Vec<String>> {
    let selector = format!("{LABEL_RECORD_PART}=shard,{LABEL_RECORD_OF}={addon}");
    let listed = cluster.list(&secret_gvk(), Some(ns), &selector).await?;
    let names: Vec<&str> = listed
        .iter()
        .filter_map(|secret| secret.metadata.name.as_deref())
        .filter(|name| !keep.contains(name))
        .collect();
    delete_named(cluster, ns, &names).await
}

/// The Secrets of addon `addon`'s record besides the record itself: each name, and whether it
/// is a shard (which must outlive the record that names it).
///
/// Under `addon`'s lock, when [`parts_ahead`] read them before it and the record is as the list
/// of records read before it showed it, that read is the answer: the parts change only with
/// the record, under its lock (see [`Cluster::list_locked_if_unchanged`]).
pub async fn parts(cluster: &Cluster, ns: &str, addon: &str) -> crate::Result<Vec<(String, bool)>> {
    let listed = cluster
        .list_locked_if_unchanged(
            &secret_gvk(),
            Some(ns),
            &format!("{LABEL_RECORD_OF}={addon}"),
            &format!("{LABEL_RECORD}=true"),
            &record_name(addon),
        )
        .await?;
    Ok(listed
        .iter()
        .filter_map(|secret| {
            let name = secret.metadata.name.clone()?;
            let shard = secret
                .metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get(LABEL_RECORD_PART))
                .is_some_and(|part| part == "shard");
            Some((name, shard))
        })
        .collect())
}

/// Reads `addon`'s record parts ahead of its lock, for [`parts`] to use under it (a reused
/// list: nothing more when read already).
pub async fn parts_ahead(cluster: &Cluster, ns: &str, addon: &str) -> crate::Result<()> {
    cluster
        .list_reused(
            &secret_gvk(),
            Some(ns),
            &format!("{LABEL_RECORD_OF}={addon}"),
        )
        .await?;
    Ok(())
}

/// Deletes the Secrets `names` of the record's parts concurrently (a record keeps up to
/// `--history-max` revisions and 64 shards); after the first failure no further delete is
/// started, and the first error is returned. Returns the names deleted (those already gone are
/// not).
pub async fn delete_named(
    cluster: &Cluster,
    ns: &str,
    names: &[&str],
) -> crate::Result<Vec<String>> {
    let results = cluster::bounded::until_failure(
        names,
        crate::state::clusters::OBJECT_CONCURRENCY,
        |&name| async move { cluster.delete(&secret_gvk(), Some(ns), name).await },
    )
    .await;
    let mut deleted = Vec::new();
    let mut first_error = None;
    for (name, result) in names.iter().zip(results) {
        match result {
            Some(Ok(true)) => deleted.push((*name).to_owned()),
            Some(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Some(Ok(false)) | None => {}
        }
    }
    match first_error {
        Some(e) => Err(e.into()),
        None => Ok(deleted),
    }
}
