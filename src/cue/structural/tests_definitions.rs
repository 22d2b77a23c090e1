//! Tests of the definition converter and the shared lexer.

use serde_json::json;

use super::tests_fixtures::*;
use super::*;

// --- definitions -------------------------------------------------------------------------

#[test]
fn component_definition_is_converted() {
    let def = definition(COMPONENT);
    let custom_status = "ready: {\n\treadyReplicas: *0 | int\n} & {\n\tif context.output.status.readyReplicas != _|_ {\n\t\treadyReplicas: context.output.status.readyReplicas\n\t}\n}\nmessage: \"Ready:\\(ready.readyReplicas)/\\(context.output.spec.replicas)\"";
    let template = format!(
        "import (\n\t\"strconv\"\n\t\"strings\"\n)\n{}",
        body_of(COMPONENT)
    );
    let expected = json!({
        "apiVersion": "core.oam.dev/v1beta1",
        "kind": "ComponentDefinition",
        "metadata": {
            "name": "webservice",
            "namespace": "vela-system",
            "annotations": {
                "definition.oam.dev/alias": "ws",
                "definition.oam.dev/description": "Describes long-running, scalable, containerized services.",
                "custom.definition.oam.dev/category": "Application Delivery",
                "definition.oam.dev/example-url": "https://example.com/ws.yaml"
            },
            "labels": {"custom.definition.oam.dev/ui-hidden": "true"}
        },
        "spec": {
            "workload": {
                "definition": {"apiVersion": "apps/v1", "kind": "Deployment"},
                "type": "deployments.apps"
            },
            "status": {
                "customStatus": custom_status,
                "healthPolicy": "isHealth: context.output.spec.replicas == ready.readyReplicas"
            },
            "schematic": {"cue": {"template": template}}
        }
    });
    assert_eq!(def, expected);
}

#[test]
fn template_text_is_kept_verbatim() {
    let def = definition(COMPONENT);
    let template = def["spec"]["schematic"]["cue"]["template"]
        .as_str()
        .unwrap_or("");
    assert!(template.starts_with("import (\n\t\"strconv\"\n\t\"strings\"\n)\n\n\toutput: {"));
    assert!(template.contains("// a } in a comment and \"}\" in a string must not end the block"));
    assert!(template.contains(r#"strings.ToUpper("\(context.name)-\("}")")"#));
    assert!(template.ends_with("\t\tenv: [string]: int\n\t}\n"));
}

#[test]
fn trait_definition_with_bare_name() {
    let def = definition(TRAIT);
    assert_eq!(def["kind"], "TraitDefinition");
    assert_eq!(def["metadata"]["name"], "scaler");
    assert_eq!(def["spec"]["podDisruptive"], false);
    assert_eq!(
        def["spec"]["appliesToWorkloads"],
        json!(["deployments.apps", "statefulsets.apps"])
    );
    assert_eq!(def["spec"]["conflictsWith"], json!([]));
    assert_eq!(def["spec"]["schematic"]["cue"]["template"], body_of(TRAIT));
    assert!(
        def["metadata"].get("labels").is_none(),
        "empty labels are omitted"
    );
    assert!(
        def["metadata"]["annotations"]
            .get(ALIAS_ANNOTATION)
            .is_none(),
        "alias only when given"
    );
}

#[test]
fn workflow_step_with_single_import() {
    let def = definition(WORKFLOW_STEP);
    assert_eq!(def["kind"], "WorkflowStepDefinition");
    assert_eq!(def["metadata"]["name"], "apply-object");
    assert_eq!(
        def["metadata"]["annotations"],
        json!({
            "custom.definition.oam.dev/category": "Resource Management",
            "definition.oam.dev/description": "Apply raw kubernetes objects for your workflow steps"
        })
    );
    assert_eq!(
        def["spec"],
        json!({"schematic": {"cue": {"template": format!("import \"vela/op\"\n{}", body_of(WORKFLOW_STEP))}}})
    );
}

#[test]
fn policy_with_package_clause() {
    let def = definition(POLICY);
    assert_eq!(def["kind"], "PolicyDefinition");
    assert_eq!(def["metadata"]["name"], "topology");
    let template = def["spec"]["schematic"]["cue"]["template"]
        .as_str()
        .unwrap_or("");
    assert!(
        !template.contains("package"),
        "the package clause is not part of the template"
    );
    assert!(template.contains("clusters?: [...string]"));
}

#[test]
fn workload_and_aliased_imports() {
    let text = "import (\n\tyaml \"encoding/yaml\", \"strings\"\n)\nimport \"list\"\n\"my.workload\": {type: \"workload\", attributes: {definition: {apiVersion: \"v1\", kind: \"Pod\"}}}\ntemplate: {output: yaml.Marshal({})}\n";
    let def = definition(text);
    assert_eq!(def["kind"], "WorkloadDefinition");
    assert_eq!(def["metadata"]["name"], "my.workload");
    assert_eq!(
        def["spec"]["schematic"]["cue"]["template"],
        "import (\n\tyaml \"encoding/yaml\", \"strings\"\n)\nimport \"list\"\noutput: yaml.Marshal({})"
    );
}

#[test]
fn literal_forms_are_decoded() {
    let def = definition(LITERALS);
    assert_eq!(
        def["metadata"]["annotations"][DESCRIPTION_ANNOTATION],
        "first line\n  indented \"quoted\"\nlast \t tab"
    );
    let spec = &def["spec"];
    assert_eq!(spec["raw"], "C:\\path\\n \"quoted\" \n");
    assert_eq!(spec["esc"], "a\"b\\c\u{e9}\u{1F600}/\n");
    assert_eq!(spec["multiRaw"], "\\d+ \"x\"");
    assert_eq!(
        spec["nums"],
        json!([1, -2, 3.5, 1000.0, 31, 15, 5, 1000, 2048, 1500, -0.25, 7, 512, -1_000_000])
    );
    assert_eq!(spec["flags"], json!([true, false, null]));
    assert_eq!(spec["nested"], json!({"a": {"b": {"c": 1, "d": "two"}}}));
    assert_eq!(spec["quoted key"], json!({"x": 1, "y": 2}));
    assert_eq!(spec["trailing"], json!([1, 2]));
    assert_eq!(spec["empty"], json!({}));
    assert_eq!(spec["same"], json!([1, {"a": 1, "b": 2}]));
}

#[test]
fn repeated_metadata_keys_are_merged() {
    let text = "\"x\": {\n\ttype: \"trait\"\n\tattributes: podDisruptive: true\n\tlabels: a: \"1\"\n\tattributes: {appliesToWorkloads: [\"*\"]}\n\tlabels: {b: \"2\"}\n\ttype: \"trait\"\n}\ntemplate: {patch: {}}\n";
    let def = definition(text);
    assert_eq!(def["spec"]["podDisruptive"], true);
    assert_eq!(def["spec"]["appliesToWorkloads"], json!(["*"]));
    assert_eq!(
        def["metadata"]["labels"],
        json!({"custom.definition.oam.dev/a": "1", "custom.definition.oam.dev/b": "2"})
    );
}

#[test]
fn conflicting_repeated_keys_name_the_key() {
    let e = definition_error(
        "\"x\": {\n\ttype: \"trait\"\n\tdescription: \"a\"\n\tdescription: \"b\"\n}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 4, 2, &["`description`", "\"a\"", "\"b\""]);
    let e = definition_error(
        "\"x\": {\n\ttype: \"trait\"\n\tattributes: podDisruptive: true\n\tattributes: {podDisruptive: false}\n}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 4, 2, &["`podDisruptive`", "true", "false"]);
}

#[test]
fn a_user_annotation_cannot_be_non_string() {
    let e = definition_error(
        "\"x\": {\n\ttype: \"trait\"\n\tannotations: {\n\t\tretries: 3\n\t}\n}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 4, 12, &["annotations.retries", "string"]);
}

#[test]
fn non_literals_in_metadata_are_rejected_with_positions() {
    let cases: [(&str, usize, usize, &[&str]); 9] = [
        (
            "\tdescription: parameter.desc",
            3,
            15,
            &["reference `parameter`", "literal"],
        ),
        (
            "\tdescription: *\"a\" | \"b\"",
            3,
            15,
            &["default marker `*`", "literal"],
        ),
        ("\tdescription: \"a\" | \"b\"", 3, 19, &["`|`", "literal"]),
        ("\tdescription: \"a\" + \"b\"", 3, 19, &["`+`", "literal"]),
        (
            "\tdescription: \"\\(x)\"",
            3,
            15,
            &["interpolation", "literal"],
        ),
        (
            "\tdescription: string",
            3,
            15,
            &["type `string`", "literal"],
        ),
        (
            "\tattributes: {if true {a: 1}}",
            3,
            15,
            &["`if` comprehension", "literal"],
        ),
        ("\tattributes: [1, ...]", 3, 18, &["open list", "literal"]),
        (
            "\tattributes: strings.Join([], \"\")",
            3,
            14,
            &["reference `strings`", "literal"],
        ),
    ];
    for (line, l, c, needles) in cases {
        let text = format!("\"x\": {{\n\ttype: \"trait\"\n{line}\n}}\ntemplate: {{patch: {{}}}}\n");
        assert_error(&definition_error(&text), l, c, needles);
    }
}

#[test]
fn structural_errors_have_positions() {
    let e = definition_error("\"x\": {\n\ttype: \"gadget\"\n}\ntemplate: {patch: {}}\n");
    assert_error(&e, 2, 8, &["unknown definition type \"gadget\""]);
    let e = definition_error(
        "\"x\": {type: \"trait\"}\n\"y\": {type: \"trait\"}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 2, 1, &["exactly one metadata field", "`x`", "`y`"]);
    let e = definition_error("\"x\": {type: \"trait\"}\n");
    assert_error(&e, 2, 1, &["no `template"]);
    let e = definition_error("template: {patch: {}}\n");
    assert_error(&e, 2, 1, &["no metadata field"]);
    let e = definition_error("\"x\": {type: \"trait\"}\ntemplate: {\n\tpatch: {\n");
    assert_error(&e, 3, 9, &["never closed"]);
    let e = definition_error("\"x\": {type: \"trait\"}\ntemplate: {\n\tpatch: [}\n}\n");
    assert_error(&e, 3, 10, &["found `}`", "`]`", "line 3, column 9"]);
    let e = definition_error(
        "\"x\": {\n\ttype: \"trait\"\n\tdescription: \"abc\n}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 3, 15, &["not terminated"]);
    let e = definition_error("\"x\": {type: \"trait\"}\ntemplate: {\n\t// only a comment\n}\n");
    assert_error(&e, 2, 11, &["template block is empty"]);
    let e = definition_error("\"x\": {description: \"no type\"}\ntemplate: {patch: {}}\n");
    assert_error(&e, 1, 1, &["no `type`"]);
    let e = definition_error("\"My_Def\": {type: \"trait\"}\ntemplate: {patch: {}}\n");
    assert_error(&e, 1, 1, &["not a valid Kubernetes name"]);
    let e = definition_error("\"x\": {type: \"trait\"}\ntemplate: patch: {}\n");
    assert_error(&e, 2, 11, &["expected `{`"]);
    let e = definition_error("\"x\": {type: \"trait\", type: \"policy\"}\ntemplate: {patch: {}}\n");
    assert_error(&e, 1, 22, &["`type`", "\"trait\"", "\"policy\""]);
    let e = definition_error("\"x\": {type: 'trait'}\ntemplate: {patch: {}}\n");
    assert_error(&e, 1, 13, &["bytes"]);
    let e = definition_error(
        "\"x\": {type: \"trait\", attributes: {n: 1.0001K}}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 1, 38, &["`1.0001K` is not a whole number"]);
    let e = definition_error(
        "\"x\": {type: \"trait\", attributes: {n: 99999999999999999999}}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 1, 38, &["out of the 64-bit range"]);
    let e = definition_error("\"x\": {type: \"trait\", #hidden: 1}\ntemplate: {patch: {}}\n");
    assert_error(&e, 1, 22, &["definition `#hidden`"]);
}

#[test]
fn multi_line_string_errors() {
    let e = definition_error(
        "\"x\": {\n\ttype: \"trait\"\n\tdescription: \"\"\"abc\n\t\"\"\"\n}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 3, 15, &["new line after the opening quotes"]);
    let e = definition_error(
        "\"x\": {\n\ttype: \"trait\"\n\tdescription: \"\"\"\n\tabc\n\t\tdone\"\"\"\n}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 3, 15, &["closing quotes"]);
    let e = definition_error(
        "\"x\": {\n\ttype: \"trait\"\n\tdescription: \"\"\"\n  abc\n\t\t\"\"\"\n}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 3, 15, &["indented like its closing quotes"]);
    let e = definition_error(
        "\"x\": {type: \"trait\", description: \"bad \\q escape\"}\ntemplate: {patch: {}}\n",
    );
    assert_error(&e, 1, 35, &["`\\q`"]);
}

#[test]
fn declaration_order_and_several_template_blocks() {
    let text = "template: {\n\toutput: {}\n}\n\"late\": {type: \"component\"}\ntemplate: {parameter: {}}\n";
    let def = definition(text);
    assert_eq!(def["metadata"]["name"], "late");
    assert_eq!(
        def["spec"]["schematic"]["cue"]["template"],
        "\n\toutput: {}\n\nparameter: {}"
    );
}

#[test]
fn interpolated_status_details_are_not_literal() {
    let text = "addon: {\n\ttype: \"component\"\n\tattributes: status: details: {\n\t\t$name: \"\\(context.output.metadata.name)\"\n\t}\n}\ntemplate: {output: {}}\n";
    let e = definition_error(text);
    assert_error(&e, 4, 10, &["string interpolation", "literal"]);
}

#[test]
fn crlf_and_bom_are_accepted() {
    let text = format!("\u{feff}{}", TRAIT.replace('\n', "\r\n"));
    let def = definition(&text);
    assert_eq!(def["kind"], "TraitDefinition");
    assert_eq!(def["spec"]["podDisruptive"], false);
}

#[test]
fn error_display_has_line_and_column() {
    let e = CueError {
        line: 3,
        column: 7,
        message: "boom".into(),
    };
    assert_eq!(e.to_string(), "line 3, column 7: boom");
}
