//! Requests on objects: server-side apply, patch, get, list, delete, and the writes with
//! preconditions that compare-and-swap is built of.

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{json, Value};

use super::{Cluster, Error, Result, FIELD_MANAGER};

/// An object's kind (`object` when it has none) and name, as messages name them.
pub fn kind_and_name(object: &Value) -> (&str, Option<&str>) {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("object");
    let name = object.pointer("/metadata/name").and_then(Value::as_str);
    (kind, name)
}

/// A `Kind namespace/name` label for messages.
pub fn describe(object: &Value) -> String {
    let (kind, name) = kind_and_name(object);
    let name = name.unwrap_or("?");
    match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) => format!("{kind} `{ns}/{name}`"),
        None => format!("{kind} `{name}`"),
    }
}

/// Whether a stored object (as an apply returned it) was written after `revision` was read
/// ([`Cluster::revision`]): a server-side apply that changes nothing keeps the object's
/// `resourceVersion`. Without a revision, or with a `resourceVersion` that is not a number,
/// every object counts as written.
pub fn written_since(stored: &DynamicObject, revision: Option<u64>) -> bool {
    let version = stored
        .metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse::<u64>().ok());
    match (version, revision) {
        (Some(version), Some(revision)) => version > revision,
        _ => true,
    }
}

/// The group/version/kind of an object.
pub fn gvk_of(object: &Value) -> Option<GroupVersionKind> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Some(GroupVersionKind::gvk(group, version, kind))
}

/// The longest an apply waits for the object it met being deleted to be gone.
pub const DELETION_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

impl Cluster {
    /// Server-side applies an object (forced, field manager `addonctl`). Namespaced objects
    /// without a namespace go to `default_namespace`. Returns the object as stored.
    pub async fn apply(&self, object: &Value, default_namespace: &str) -> Result<DynamicObject> {
        self.apply_placed(object, default_namespace, None).await
    }

    /// [`Cluster::apply`], with namespaced objects forced into `namespace` when given (a topology
    /// policy's namespace).
    pub async fn apply_placed(
        &self,
        object: &Value,
        default_namespace: &str,
        namespace_override: Option<&str>,
    ) -> Result<DynamicObject> {
        self.apply_mode(object, default_namespace, namespace_override, false)
            .await
    }

    /// [`Cluster::apply_placed`] as a server-side dry run (`dryRun=All`): the server defaults,
    /// validates and runs admission on the object and returns what it would store, storing
    /// nothing. Not counted as a write ([`super::Counters::writes`]).
    pub async fn dry_run_apply(
        &self,
        object: &Value,
        default_namespace: &str,
        namespace_override: Option<&str>,
    ) -> Result<DynamicObject> {
        self.apply_mode(object, default_namespace, namespace_override, true)
            .await
    }

    async fn apply_mode(
        &self,
        object: &Value,
        default_namespace: &str,
        namespace_override: Option<&str>,
        dry_run: bool,
    ) -> Result<DynamicObject> {
        let (api, name, body, what) = self
            .apply_request(object, default_namespace, namespace_override)
            .await?;
        let mut params = PatchParams::apply(FIELD_MANAGER).force();
        params.dry_run = dry_run;
        let stored = api
            .patch(&name, &params, &Patch::Apply(&body))
            .await
            .map_err(|e| self.map_error(e, &what))?;
        if dry_run || stored.metadata.deletion_timestamp.is_none() {
            return Ok(stored);
        }
        self.gone(&api, &name, &stored.metadata, &what).await?;
        api.patch(&name, &params, &Patch::Apply(&body))
            .await
            .map_err(|e| self.map_error(e, &what))
    }

    /// An apply met the object being deleted (its `deletionTimestamp` set, its finalizers still
    /// to run: a CRD whose custom resources are being removed, a namespace emptying): what it
    /// changed is about to disappear. Waits until that object is gone (or replaced by another
    /// writer), reading it with a growing pause, for at most [`DELETION_WAIT`]; the caller then
    /// applies again, making it new. The wait exceeded is a conflict naming what holds it.
    async fn gone(
        &self,
        api: &Api<DynamicObject>,
        name: &str,
        deleting: &kube::api::ObjectMeta,
        what: &str,
    ) -> Result<()> {
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(25);
        loop {
            tokio::time::sleep(pause).await;
            match api.get_opt(name).await {
                Ok(Some(now)) if now.metadata.uid == deleting.uid => {}
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(r)) if r.code == 404 => return Ok(()),
                Err(e) => return Err(self.map_error(e, what)),
            }
            if started.elapsed() >= DELETION_WAIT {
                let finalizers = deleting.finalizers.clone().unwrap_or_default().join(", ");
                return Err(Error::Conflict {
                    cluster: self.name.clone(),
                    message: format!(
                        "{what} is being deleted (finalizers: {}) and was still there after {} s; \
                         it is applied new once it is gone: wait for its deletion to finish (see \
                         what its finalizers wait for), then run the command again",
                        if finalizers.is_empty() {
                            "none"
                        } else {
                            &finalizers
                        },
                        DELETION_WAIT.as_secs()
                    ),
                });
            }
            pause = (pause * 2).min(std::time::Duration::from_millis(500));
        }
    }

    /// [`Cluster::apply_placed`], the answer parsed only for its metadata (as
    /// [`super::slim::Metadata`] keeps it; the returned object's body is `null`): for callers
    /// that read the uid, the `resourceVersion` and the managers of what they applied, as a
    /// dispatch to many clusters does.
    pub async fn apply_placed_metadata(
        &self,
        object: &Value,
        default_namespace: &str,
        namespace_override: Option<&str>,
    ) -> Result<DynamicObject> {
        let (api, name, body, what) = self
            .apply_request(object, default_namespace, namespace_override)
            .await?;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let request = kube::core::Request::new(api.resource_url())
            .patch(&name, &params, &Patch::Apply(&body))
            .map_err(|e| self.map_error(kube::Error::BuildRequest(e), &what))?;
        let answer: super::slim::Item = self
            .client
            .request(request.clone())
            .await
            .map_err(|e| self.map_error(e, &what))?;
        let mut metadata: kube::api::ObjectMeta = answer.metadata.into();
        if metadata.deletion_timestamp.is_some() {
            self.gone(&api, &name, &metadata, &what).await?;
            let answer: super::slim::Item = self
                .client
                .request(request)
                .await
                .map_err(|e| self.map_error(e, &what))?;
            metadata = answer.metadata.into();
        }
        Ok(DynamicObject {
            types: None,
            metadata,
            data: Value::Null,
        })
    }

    /// What an apply of `object` sends: the API of its kind (in its namespace), its name, the
    /// body (namespace set or removed by the kind's scope) and its description.
    async fn apply_request(
        &self,
        object: &Value,
        default_namespace: &str,
        namespace_override: Option<&str>,
    ) -> Result<(Api<DynamicObject>, String, Value, String)> {
        let what = describe(object);
        let gvk = self.gvk_of(object, &what)?;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or_else(|| self.invalid(&what, "the object has no `metadata.name`"))?
            .to_owned();
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(default_namespace);
        let namespace = namespace_override.unwrap_or(namespace).to_owned();
        let (api, namespaced) = self.api_for(&gvk, Some(&namespace), &what).await?;
        let mut body = object.clone();
        if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            crate::model::drop_null_server_metadata(metadata);
            if namespaced {
                metadata.insert("namespace".into(), json!(namespace));
            } else {
                metadata.remove("namespace");
            }
        }
        Ok((api, name, body, what))
    }

    /// Merge-patches one object (field manager `addonctl`). Returns it as stored.
    pub async fn merge_patch(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> Result<DynamicObject> {
        let (what, api) = self.named_api(gvk, namespace, name).await?;
        api.patch(name, &patch_params(), &Patch::Merge(patch))
            .await
            .map_err(|e| self.map_error(e, &what))
    }

    /// What [`Cluster::create_if_missing`] and [`Cluster::get_or_create`] start from: the
    /// object's description, the API of its kind (in its namespace), its name, and the object
    /// stored under that name, if any.
    async fn stored_as(
        &self,
        object: &Value,
    ) -> Result<(String, Api<DynamicObject>, String, Option<DynamicObject>)> {
        let (what, api, name, _) = self.api_of(object).await?;
        let stored = api
            .get_opt(&name)
            .await
            .map_err(|e| self.map_error(e, &what))?;
        Ok((what, api, name, stored))
    }

    /// `object` as the typed object a create sends (`what` describes it in the error).
    fn typed(&self, object: &Value, what: &str) -> Result<DynamicObject> {
        serde_json::from_value(object.clone()).map_err(|e| self.invalid(what, &e.to_string()))
    }

    /// The kind of `object` (`what` describes it in the error).
    fn gvk_of(&self, object: &Value, what: &str) -> Result<GroupVersionKind> {
        gvk_of(object).ok_or_else(|| self.invalid(what, "the object has no `apiVersion` or `kind`"))
    }

    /// An object this cluster cannot be sent.
    fn invalid(&self, what: &str, message: &str) -> Error {
        Error::Invalid {
            cluster: self.name.clone(),
            object: what.to_owned(),
            message: message.to_owned(),
        }
    }

    /// Creates an object only if it does not exist (used for the system namespace, field
    /// manager [`crate::model::wire::SYSTEM_NAMESPACE_MANAGER`]). Returns whether it was created.
    pub async fn create_if_missing(&self, object: &Value) -> Result<bool> {
        let (what, api, _, stored) = self.stored_as(object).await?;
        if stored.is_some() {
            return Ok(false);
        }
        let typed = self.typed(object, &what)?;
        let params = PostParams {
            field_manager: Some(crate::model::wire::SYSTEM_NAMESPACE_MANAGER.to_owned()),
            ..PostParams::default()
        };
        match api.create(&params, &typed).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(r)) if r.code == 409 => Ok(false),
            Err(e) => Err(self.map_error(e, &what)),
        }
    }

    /// Reads an object, creating it (field manager `addonctl`) when it does not exist (a
    /// namespace a managed cluster lacks). Returns it as stored.
    pub async fn get_or_create(&self, object: &Value) -> Result<DynamicObject> {
        let (what, api, name, stored) = self.stored_as(object).await?;
        if let Some(stored) = stored {
            return Ok(stored);
        }
        let typed = self.typed(object, &what)?;
        match api.create(&post_params(), &typed).await {
            Ok(stored) => Ok(stored),
            Err(kube::Error::Api(r)) if r.code == 409 => {
                api.get(&name).await.map_err(|e| self.map_error(e, &what))
            }
            Err(e) => Err(self.map_error(e, &what)),
        }
    }

    /// The API of one named object's kind (in `namespace` when namespaced), with the object's
    /// description for messages.
    async fn named_api(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(String, Api<DynamicObject>)> {
        let what = format!("{} `{}`", gvk.kind, name);
        let (api, _) = self.api_for(gvk, namespace, &what).await?;
        Ok((what, api))
    }

    /// Reads one object; `None` when it does not exist or its kind is not served.
    pub async fn get(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<DynamicObject>> {
        if self.kind(gvk).await?.is_none() {
            return Ok(None);
        }
        let (what, api) = self.named_api(gvk, namespace, name).await?;
        match api.get_opt(name).await {
            Ok(found) => Ok(found),
            // A bare 404 ("404 page not found", not a NotFound Status): the kind stopped being
            // served between discovery and the read (its CRD was just deleted).
            Err(kube::Error::Api(r)) if r.code == 404 => Ok(None),
            Err(e) => Err(self.map_error(e, &what)),
        }
    }

    /// Lists objects of a kind (in one namespace or all), filtered by a label selector. A kind
    /// the server does not serve lists as empty.
    pub async fn list(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<DynamicObject>> {
        if self.kind(gvk).await?.is_none() {
            return Ok(Vec::new());
        }
        let what = format!("{} list", gvk.kind);
        let (api, _) = self.api_for(gvk, namespace, &what).await?;
        let params = if selector.is_empty() {
            ListParams::default()
        } else {
            ListParams::default().labels(selector)
        };
        api.list(&params)
            .await
            .map(|l| l.items)
            .map_err(|e| self.map_error(e, &what))
    }

    /// Deletes one object (background propagation). Returns whether it existed.
    pub async fn delete(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool> {
        if self.kind(gvk).await?.is_none() {
            return Ok(false);
        }
        let (what, api) = self.named_api(gvk, namespace, name).await?;
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(r)) if r.code == 404 => Ok(false),
            Err(e) => Err(self.map_error(e, &what)),
        }
    }
}

/// What a delete with a uid precondition found ([`Cluster::delete_with_uid`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// Deleted (deletion started: background propagation).
    Deleted,
    /// Not there: no such object, or its kind is not served.
    Absent,
    /// There under another uid: the precondition failed (`409 Conflict`), nothing was deleted.
    OtherUid,
}

impl Cluster {
    /// Deletes one object in one request (background propagation), only while it has `uid`
    /// when one is given: an object deleted and made again by someone else since is left
    /// alone ([`Deleted::OtherUid`]).
    pub async fn delete_with_uid(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
        uid: Option<&str>,
    ) -> Result<Deleted> {
        if self.kind(gvk).await?.is_none() {
            return Ok(Deleted::Absent);
        }
        let (what, api) = self.named_api(gvk, namespace, name).await?;
        let params = DeleteParams {
            preconditions: uid
                .filter(|u| !u.is_empty())
                .map(|uid| kube::api::Preconditions {
                    uid: Some(uid.to_owned()),
                    resource_version: None,
                }),
            ..DeleteParams::background()
        };
        match api.delete(name, &params).await {
            Ok(_) => Ok(Deleted::Deleted),
            Err(kube::Error::Api(r)) if r.code == 404 => Ok(Deleted::Absent),
            // Another object under the same name (the precondition failed).
            Err(kube::Error::Api(r)) if r.code == 409 && params.preconditions.is_some() => {
                Ok(Deleted::OtherUid)
            }
            Err(e) => Err(self.map_error(e, &what)),
        }
    }
}

/// Writes with preconditions: the building blocks of compare-and-swap (leases, stores).
impl Cluster {
    /// Creates an object (field manager `addonctl`). One that exists already is a
    /// [`Error::Conflict`].
    pub async fn create(&self, object: &Value) -> Result<DynamicObject> {
        let (what, api, _, _) = self.api_of(object).await?;
        let typed = self.typed(object, &what)?;
        api.create(&post_params(), &typed)
            .await
            .map_err(|e| self.map_error(e, &what))
    }

    /// Replaces an object whole (field manager `addonctl`). With `metadata.resourceVersion`
    /// set, only while the stored object still has it; otherwise a [`Error::Conflict`].
    pub async fn replace(&self, object: &Value) -> Result<DynamicObject> {
        let (what, api, name, _) = self.api_of(object).await?;
        let typed = self.typed(object, &what)?;
        api.replace(&name, &post_params(), &typed)
            .await
            .map_err(|e| self.map_error(e, &what))
    }

    /// Deletes an object only while it has `resource_version`. Returns whether it was deleted
    /// (`false`: gone already, or changed since).
    pub async fn delete_if_version(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
        resource_version: &str,
    ) -> Result<bool> {
        let (what, api) = self.named_api(gvk, namespace, name).await?;
        let params = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                uid: None,
                resource_version: Some(resource_version.to_owned()),
            }),
            ..DeleteParams::background()
        };
        match api.delete(name, &params).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(r)) if r.code == 404 || r.code == 409 => Ok(false),
            Err(e) => Err(self.map_error(e, &what)),
        }
    }

    /// An object's description, the API of its kind (in its namespace) and its name.
    async fn api_of(&self, object: &Value) -> Result<(String, Api<DynamicObject>, String, bool)> {
        let what = describe(object);
        let gvk = self.gvk_of(object, &what)?;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        let (api, namespaced) = self.api_for(&gvk, namespace, &what).await?;
        Ok((what, api, name, namespaced))
    }
}

/// The parameters of a merge patch addonctl sends (field manager `addonctl`, named rather than
/// taken from the `User-Agent`).
pub fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

/// The parameters of addonctl's creates and replaces: its field manager.
fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}
