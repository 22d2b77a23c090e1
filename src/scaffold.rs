//! `init`: a new Rhai addon that lints clean, as a starting point for registry authors.

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
            format!("`{name} is enabled with ${{parameter.replicas}} replica(s) of ${{parameter.image}}.`\n"),
        ),
    ]
}

/// Writes a new addon into `dir` (which must not exist or be empty). Returns the files written.
pub fn scaffold(dir: &Path, name: &str) -> crate::Result<Vec<PathBuf>> {
    if !crate::model::metadata::is_valid_name(name) {
        return Err(crate::Error::User(format!(
            "`{name}` is not a valid addon name: use lowercase letters, digits and single `-` between them"
        )));
    }
    if dir.exists() && fs_err::read_dir(dir)?.next().is_some() {
        return Err(crate::Error::User(format!(
            "`{}` already exists and is not empty; choose another directory with `--dir`",
            dir.display()
        )));
    }
    let mut written = Vec::new();
    for (path, text) in files(name) {
        let full = dir.join(path);
        if let Some(parent) = full.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::write(&full, text)?;
        written.push(full);
    }
    Ok(written)
}
