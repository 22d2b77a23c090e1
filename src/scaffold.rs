//! `init`: a new addon that lints clean, as a starting point for registry authors: Rhai
//! (addonctl's own format) or, with `--cue`, KubeVela's CUE layout (`metadata.yaml`,
//! `parameter.cue`, `template.cue`, `resources/`, `README.md`).

use std::path::{Path, PathBuf};

/// The files of a new addon: (relative path, contents).
pub fn files(name: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "metadata.yaml",
            format!(
                "name: {name}\nversion: 0.1.0\ndescription: {name} for Kubernetes\ntags: []\n\
                 # Other addons this one needs, with semver constraints:\n\
                 # dependencies:\n#   - name: some-addon\n#     version: \">=1.0.0\"\n\
                 deployTo:\n  runtimeCluster: false\n"
            ),
        ),
        (
            "README.md",
            format!("# {name}\n\nDescribe what the addon installs and how to use it.\n\n```shell\naddonctl enable {name} replicas=2\n```\n"),
        ),
        (
            "parameter.rhai",
            "// Parameters users can set: `addonctl enable <addon> key=value`.\n\
             #{\n    \
                 replicas: pint(1).max(10).usage(\"Number of replicas\"),\n    \
                 image: string(\"nginx:1.25\").min_len(1).usage(\"Container image\"),\n    \
                 clusters: list(string()).optional().usage(\"Clusters to deploy to; all clusters when absent\"),\n\
             }\n"
                .to_owned(),
        ),
        (
            "template.rhai",
            format!(
                "// Builds the KubeVela Application that wraps the addon.\n\
                 let labels = #{{ \"app.kubernetes.io/name\": \"{name}\" }};\n\
                 let deployment = #{{\n    \
                     apiVersion: \"apps/v1\",\n    kind: \"Deployment\",\n    \
                     metadata: #{{ name: \"{name}\", namespace: context.namespace, labels: labels }},\n    \
                     spec: #{{\n        replicas: parameter.replicas,\n        selector: #{{ matchLabels: labels }},\n        \
                         template: #{{\n            metadata: #{{ labels: labels }},\n            \
                             spec: #{{ containers: [#{{ name: \"{name}\", image: parameter.image }}] }},\n        }},\n    }},\n\
                 }};\n\
                 #{{\n    output: application(#{{\n        \
                     components: [k8s_objects(\"{name}\", [deployment])],\n        \
                     policies: [topology(\"{name}-clusters\", parameter.clusters)],\n    }}),\n}}\n"
            ),
        ),
        (
            "NOTES.rhai",
            format!(
                "// Printed after `addonctl enable`: the addon is applied, its workloads may not be ready yet.\n\
                 let replicas = if parameter.replicas == 1 {{ \"1 replica\" }} else {{ `${{parameter.replicas}} replicas` }};\n\
                 `{name} has been enabled (${{replicas}} of ${{parameter.image}}); run ` + \"`addonctl status {name}`\" + ` to see when it is ready.`\n"
            ),
        ),
    ]
}

/// The language of a new addon.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Flavour {
    /// `parameter.rhai`, `template.rhai`, `NOTES.rhai`.
    #[default]
    Rhai,
    /// KubeVela's layout: `parameter.cue`, `template.cue`, a `package main` fragment in
    /// `resources/`.
    Cue,
}

/// The files of a new CUE addon in KubeVela's layout: (relative path, contents).
pub fn cue_files(name: &str) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = files(name)
        .into_iter()
        .filter(|(path, _)| matches!(*path, "metadata.yaml" | "README.md"))
        .collect();
    out.push((
        "parameter.cue",
        "// Parameters users can set: `addonctl enable <addon> key=value`.\n\
         parameter: {\n\
         \t// +usage=Number of replicas\n\
         \treplicas: *1 | int & >=1 & <=10\n\
         \t// +usage=Container image\n\
         \timage: *\"nginx:1.25\" | string\n\
         \t// +usage=Clusters to deploy to; all clusters when absent\n\
         \tclusters?: [...string]\n\
         }\n"
        .to_owned(),
    ));
    out.push((
        "template.cue",
        format!(
            "// Builds the KubeVela Application that wraps the addon.\n\
             package main\n\n\
             output: {{\n\
             \tapiVersion: \"core.oam.dev/v1beta1\"\n\
             \tkind:       \"Application\"\n\
             \tspec: {{\n\
             \t\tcomponents: [{{\n\
             \t\t\tname: \"{name}\"\n\
             \t\t\ttype: \"k8s-objects\"\n\
             \t\t\tproperties: objects: [deployment]\n\
             \t\t}}]\n\
             \t\tpolicies: [{{\n\
             \t\t\tname: \"{name}-clusters\"\n\
             \t\t\ttype: \"topology\"\n\
             \t\t\tproperties: {{\n\
             \t\t\t\tif parameter.clusters != _|_ {{\n\
             \t\t\t\t\tclusters: parameter.clusters\n\
             \t\t\t\t}}\n\
             \t\t\t\tif parameter.clusters == _|_ {{\n\
             \t\t\t\t\tclusterLabelSelector: {{}}\n\
             \t\t\t\t}}\n\
             \t\t\t}}\n\
             \t\t}}]\n\
             \t}}\n\
             }}\n"
        ),
    ));
    out.push((
        "resources/deployment.cue",
        format!(
            "// A fragment of the template: `package main` files of resources/ join template.cue.\n\
             package main\n\n\
             _labels: \"app.kubernetes.io/name\": \"{name}\"\n\n\
             deployment: {{\n\
             \tapiVersion: \"apps/v1\"\n\
             \tkind:       \"Deployment\"\n\
             \tmetadata: {{\n\
             \t\tname:   \"{name}\"\n\
             \t\tlabels: _labels\n\
             \t}}\n\
             \tspec: {{\n\
             \t\treplicas: parameter.replicas\n\
             \t\tselector: matchLabels: _labels\n\
             \t\ttemplate: {{\n\
             \t\t\tmetadata: labels: _labels\n\
             \t\t\tspec: containers: [{{\n\
             \t\t\t\tname:  \"{name}\"\n\
             \t\t\t\timage: parameter.image\n\
             \t\t\t}}]\n\
             \t\t}}\n\
             \t}}\n\
             }}\n"
        ),
    ));
    out
}

/// Writes a new addon into `dir` (which must not exist or be empty). Returns the files written.
pub fn scaffold(dir: &Path, name: &str, flavour: Flavour) -> crate::Result<Vec<PathBuf>> {
    if !crate::model::metadata::is_valid_name(name) {
        return Err(crate::error::AuthoringError::InvalidName {
            name: name.to_owned(),
        }
        .into());
    }
    if dir.exists() && fs_err::read_dir(dir)?.next().is_some() {
        return Err(crate::error::AuthoringError::DirNotEmpty {
            dir: dir.to_owned(),
        }
        .into());
    }
    let mut written = Vec::new();
    let files = match flavour {
        Flavour::Rhai => files(name),
        Flavour::Cue => cue_files(name),
    };
    for (path, text) in files {
        let full = dir.join(path);
        if let Some(parent) = full.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::write(&full, text)?;
        written.push(full);
    }
    Ok(written)
}
