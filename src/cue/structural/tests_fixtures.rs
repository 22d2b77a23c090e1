//! Fixtures shared by the converter tests.
#![allow(dead_code)]
#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use serde_json::json;

pub(super) const COMPONENT: &str = r##"import (
	"strconv"
	"strings"
)

// A web service component.
"webservice": {
	type:        "component"
	alias:       "ws"
	description: "Describes long-running, scalable, containerized services."
	annotations: {
		"category":                       "Application Delivery"
		"definition.oam.dev/example-url": "https://example.com/ws.yaml"
	}
	labels: "ui-hidden": "true"
	attributes: {
		workload: definition: {
			apiVersion: "apps/v1"
			kind:       "Deployment"
		}
		workload: type: "deployments.apps"
		status: {
			customStatus: #"""
				ready: {
					readyReplicas: *0 | int
				} & {
					if context.output.status.readyReplicas != _|_ {
						readyReplicas: context.output.status.readyReplicas
					}
				}
				message: "Ready:\(ready.readyReplicas)/\(context.output.spec.replicas)"
				"""#
			healthPolicy: #"""
				isHealth: context.output.spec.replicas == ready.readyReplicas
				"""#
		}
	}
}
template: {
	output: {
		apiVersion: "apps/v1"
		kind:       "Deployment"
		spec: {
			selector: matchLabels: "app.oam.dev/component": context.name
			template: {
				metadata: labels: "app.oam.dev/component": context.name
				spec: containers: [{
					name:  context.name
					image: parameter.image
					if parameter["cmd"] != _|_ {
						command: parameter.cmd
					}
					env: [ for k, v in parameter.env {name: k, value: strconv.FormatInt(v, 10)}]
				}]
			}
		}
	}
	// a } in a comment and "}" in a string must not end the block
	outputs: note: {data: "}{" + #"raw "}" string"# + strings.ToUpper("\(context.name)-\("}")")}
	parameter: {
		// +usage=Which image would you like to use for your service
		image: string
		cmd?: [...string]
		env: [string]: int
	}
}
"##;

pub(super) const TRAIT: &str = r#"scaler: {
	type:        "trait"
	description: "Manually scale K8s pod for your workload which follows the pattern."
	attributes: {
		podDisruptive: false
		appliesToWorkloads: ["deployments.apps", "statefulsets.apps"]
		conflictsWith: []
	}
}
template: {
	parameter: {
		// +usage=Specify the number of workload
		replicas: *1 | int
	}
	patch: spec: replicas: parameter.replicas
}
"#;

pub(super) const WORKFLOW_STEP: &str = r#"import "vela/op"

"apply-object": {
	type: "workflow-step"
	annotations: {"category": "Resource Management"}
	labels: {}
	description: "Apply raw kubernetes objects for your workflow steps"
}
template: {
	apply: op.#Apply & {value: parameter.value, cluster: parameter.cluster}
	parameter: {value: {...}, cluster: *"" | string}
}
"#;

pub(super) const POLICY: &str = r#"package main

"topology": {
	type: "policy"
	annotations: {}
	description: "Describe the destination where components should be deployed to."
	attributes: {}
}

template: {
	parameter: {
		clusters?: [...string]
		namespace?: string
	}
}
"#;

pub(super) const LITERALS: &str = r##"literals: {
	type: "trait"
	description: """
		first line
		  indented "quoted"
		last \t tab
		"""
	attributes: {
		raw:      #"C:\path\n "quoted" \#n"#
		esc:      "a\"b\\c\u00e9\U0001F600\/\n"
		multiRaw: #"""
			\d+ "x"
			"""#
		nums: [1, -2, 3.5, 1e3, 0x1F, 0o17, 0b101, 1_000, 2Ki, 1.5K, -0.25, +7, 0.5Ki, -1M]
		flags: [true, false, null]
		nested: a: b: c: 1
		nested: a: b: d: "two"
		nested: {a: b: c: 1}
		"quoted key": {x: 1, y: 2}, trailing: [1, 2,],
		empty: {}
		same: [1, {a: 1}]
		same: [1, {b: 2}]
	}
}
template: {patch: {}}
"##;

pub(super) const CONFIG: &str = r#"import "strconv"

metadata: {
	name:        "demo-config"
	alias:       "Demo Config"
	description: "Every construct of the supported subset"
	sensitive:   true
	scope:       "project"
}

template: {
	output: {
		apiVersion: "v1"
		kind:       "Secret"
		metadata: name: context.name
		if parameter.token != _|_ {
			stringData: token: parameter.token
		}
		stringData: port: strconv.FormatInt(parameter.port, 10)
	}
	parameter: {
		// +usage=The server URL
		url: string
		// +usage=An access token
		token?: string
		// +usage=The port
		port: *8080 | int
		ratio: *0.5 | float
		weight?: number
		enabled: *true | bool
		// +usage=The protocol,
		// one of three
		// +short=p
		protocol: *"https" | "http" | "grpc"
		level: "debug" | "info"
		replicas: int & >=1 & <=10
		percent: int & >0 & <100
		code: string & =~"^[a-z]+$"
		tags: [...string]
		servers?: [...{
			host: string
			// +usage=The server port
			port: *80 | int
		}]
		labels: [string]: string
		extra: {
			[string]: int
		}
		auth: {
			username:  string
			password?: string
		}
		tls: enabled: *false | bool
		content: {...}
		anything: _
		kind: "Demo"
		zones: *["a", "b"] | [...string]
		"quoted-key"?: string
		// A plain comment describes too
		// over two lines
		notes?: string

		// A comment separated by a blank line is not a doc comment

		ttl?: uint
	}
}
"#;

pub(super) const NACOS: &str = r#"metadata: {
	name:        "nacos-config"
	alias:       "Nacos Configuration"
	description: "Write the configuration to the nacos"
	sensitive:   false
	scope:       "system"
}

template: {
	nacos: {
		// The endpoint can not references the parameter.
		endpoint: {
			name:      "nacos"
			namespace: "vela-system"
		}
		format: "yaml"
		metadata: {
			dataId: parameter.dataId
			if parameter.appName != _|_ {
				appName: parameter.appName
			}
		}
		content: parameter.content
	}
	parameter: {
		// +usage=Configuration ID
		dataId: string
		content: {
			...
		}
		contentType: *"json" | "yaml" | "properties" | "toml"
		appName?: string
	}
}
"#;

pub(super) fn definition(text: &str) -> Value {
    match definition_from_cue(text, "vela-system") {
        Ok(value) => value,
        Err(e) => panic!("conversion failed: {e}"),
    }
}

pub(super) fn definition_error(text: &str) -> CueError {
    match definition_from_cue(text, "vela-system") {
        Ok(value) => panic!("expected an error, got {value}"),
        Err(e) => e,
    }
}

pub(super) fn config(text: &str) -> Value {
    match config_template_from_cue(text, "vela-system") {
        Ok(value) => value,
        Err(e) => panic!("conversion failed: {e}"),
    }
}

pub(super) fn config_error(text: &str) -> CueError {
    match config_template_from_cue(text, "vela-system") {
        Ok(value) => panic!("expected an error, got {value}"),
        Err(e) => e,
    }
}

pub(super) fn assert_error(e: &CueError, line: usize, column: usize, needles: &[&str]) {
    assert_eq!(
        (e.line, e.column),
        (line, column),
        "wrong position for: {e}"
    );
    for needle in needles {
        assert!(
            e.message.contains(needle),
            "`{}` does not mention `{needle}`",
            e.message
        );
    }
}

/// The text between `template: {` and the last `}` of a fixture.
pub(super) fn body_of(text: &str) -> &str {
    let start = text
        .find("template: {")
        .map_or(0, |i| i + "template: {".len());
    let end = text.rfind('}').unwrap_or(text.len());
    text.get(start..end).unwrap_or("")
}

pub(super) fn parameter_schema(config_map: &Value) -> Value {
    let text = config_map["data"]["schema"].as_str().unwrap_or("null");
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// A config template whose parameter block is `parameter`.
pub(super) fn config_with(parameter: &str) -> String {
    format!("metadata: name: \"t\"\ntemplate: {{\n\tparameter: {{\n{parameter}\n\t}}\n}}\n")
}
