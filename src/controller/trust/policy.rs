//! The shipped ValidatingAdmissionPolicy that makes an `Addon`'s author annotations true, and
//! the check that it is installed (only then are they trusted).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::super::crd::{AUTHOR, AUTHOR_GROUPS};
use super::super::{Error, Result};
use super::POLICY;
use crate::cluster::Cluster;

/// The annotation both carry, with the policy's version: an older policy is not trusted.
const POLICY_VERSION_ANNOTATION: &str = "addonctl.io/policy-version";
/// The policy's version.
const POLICY_VERSION: &str = "1";

/// The annotations that name `user` with `groups` as an `Addon`'s author.
pub fn author_annotations(user: &str, groups: &[String]) -> BTreeMap<String, String> {
    BTreeMap::from([
        (AUTHOR.to_owned(), user.to_owned()),
        (AUTHOR_GROUPS.to_owned(), groups.join(",")),
    ])
}

/// The ValidatingAdmissionPolicy that keeps [`AUTHOR`] true and `allow`/`adopt` to approvers,
/// and its binding. `controller` is the controller's own user (its finalizer writes are not
/// spec changes, but it is exempt all the same).
pub fn policy_manifests(controller: &str) -> Vec<Value> {
    let annotations = json!({ POLICY_VERSION_ANNOTATION: POLICY_VERSION });
    let unchanged = "oldObject != null && object.spec == oldObject.spec && variables.author == variables.oldAuthor && variables.groups == variables.oldGroups";
    vec![
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": POLICY, "annotations": annotations},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": [super::super::crd::GROUP],
                    "apiVersions": ["*"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["addons"],
                }]},
                "matchConditions": [{
                    "name": "not-the-controller",
                    "expression": format!("request.userInfo.username != '{controller}'"),
                }],
                "variables": [
                    {"name": "annotations", "expression": "has(object.metadata.annotations) ? object.metadata.annotations : {}"},
                    {"name": "oldAnnotations", "expression": "oldObject != null && has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}"},
                    {"name": "author", "expression": format!("'{AUTHOR}' in variables.annotations ? variables.annotations['{AUTHOR}'] : ''")},
                    {"name": "oldAuthor", "expression": format!("'{AUTHOR}' in variables.oldAnnotations ? variables.oldAnnotations['{AUTHOR}'] : ''")},
                    {"name": "groups", "expression": format!("'{AUTHOR_GROUPS}' in variables.annotations ? variables.annotations['{AUTHOR_GROUPS}'] : ''")},
                    {"name": "oldGroups", "expression": format!("'{AUTHOR_GROUPS}' in variables.oldAnnotations ? variables.oldAnnotations['{AUTHOR_GROUPS}'] : ''")},
                    {"name": "unchanged", "expression": unchanged},
                    {"name": "optsIn", "expression": "(has(object.spec.allow) && size(object.spec.allow) > 0) || (has(object.spec.adopt) && object.spec.adopt)"},
                ],
                "validations": [
                    {
                        "expression": "variables.unchanged || variables.author == request.userInfo.username",
                        "messageExpression": format!("'the annotation {AUTHOR} must name the user writing the Addon (' + request.userInfo.username + '): the controller acts for its author and within their rights; `addonctl enable --declarative` sets it'"),
                        "reason": "Forbidden",
                    },
                    {
                        "expression": "variables.unchanged || variables.groups == '' || variables.groups.split(',').all(g, g in request.userInfo.groups)",
                        "messageExpression": format!("'the annotation {AUTHOR_GROUPS} may list only groups of the user writing the Addon (' + request.userInfo.groups.join(',') + ')'"),
                        "reason": "Forbidden",
                    },
                    {
                        "expression": "variables.unchanged || !variables.optsIn || authorizer.group('addonctl.io').resource('addons').namespace(object.metadata.namespace).name(object.metadata.name).check('approve').allowed()",
                        "messageExpression": "'spec.allow and spec.adopt let the controller apply what a review flags or take over an installation: setting them needs the verb approve on addons.addonctl.io (' + request.userInfo.username + ' lacks it)'",
                        "reason": "Forbidden",
                    },
                ],
            },
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": POLICY, "annotations": annotations},
            "spec": {"policyName": POLICY, "validationActions": ["Deny"]},
        }),
    ]
}

/// Whether the policy and its binding (this version, denying) are installed on the control
/// plane: only then do the author annotations say who wrote an `Addon`.
pub async fn policy_installed(cluster: &Cluster) -> Result<bool> {
    let gvk =
        |kind: &str| kube::core::GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
    for kind in [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ] {
        let found = match cluster.get(&gvk(kind), None, POLICY).await {
            Ok(found) => found,
            // Not served (before Kubernetes 1.30) or not readable: not installed as far as the
            // controller can tell.
            Err(crate::cluster::Error::Forbidden { .. }) => return Ok(false),
            Err(e) => return Err(Error::Library(Box::new(e.into()))),
        };
        let Some(found) = found else {
            return Ok(false);
        };
        let value = serde_json::to_value(found).unwrap_or(Value::Null);
        let version = value
            .pointer(&format!(
                "/metadata/annotations/{}",
                POLICY_VERSION_ANNOTATION.replace('/', "~1")
            ))
            .and_then(Value::as_str);
        if version != Some(POLICY_VERSION) {
            return Ok(false);
        }
        if kind == "ValidatingAdmissionPolicyBinding"
            && !value
                .pointer("/spec/validationActions")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v == "Deny"))
        {
            return Ok(false);
        }
    }
    Ok(true)
}
