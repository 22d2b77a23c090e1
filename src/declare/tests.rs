use serde_json::json;

use super::*;

fn schema() -> ParameterSchema {
    ParameterSchema::from_json_schema(json!({
        "type": "object",
        "properties": {
            "replicas": {"type": "integer"},
            "token": {"type": "string", "writeOnly": true},
            "auth": {"type": "object", "properties": {
                "user": {"type": "string"},
                "password": {"type": "string", "writeOnly": true},
            }},
            "keys": {"type": "array", "items": {"type": "string", "writeOnly": true}},
            "pin": {"type": "integer", "writeOnly": true},
        }
    }))
    .unwrap()
}

fn map(value: serde_json::Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[test]
fn secret_parameters_leave_the_parameters_and_keep_their_paths() {
    let args = map(json!({
        "replicas": 2,
        "token": "s3cr3t-token",
        "auth": {"user": "me", "password": "hunter2"},
    }));
    let (plain, secrets) = split_secrets(&args, &schema()).unwrap();
    assert_eq!(
        Value::Object(plain.clone()),
        json!({"replicas": 2, "auth": {"user": "me"}})
    );
    assert_eq!(
        secrets,
        BTreeMap::from([
            ("auth.password".to_owned(), "hunter2".to_owned()),
            ("token".to_owned(), "s3cr3t-token".to_owned()),
        ])
    );
    let text = serde_json::to_string(&plain).unwrap();
    assert!(!text.contains("hunter2") && !text.contains("s3cr3t"));
}

#[test]
fn an_object_emptied_by_the_split_goes_and_an_object_given_empty_stays() {
    let args = map(json!({"auth": {"password": "x"}}));
    let (plain, _) = split_secrets(&args, &schema()).unwrap();
    assert!(plain.is_empty(), "{plain:?}");
    let args = map(json!({"auth": {}}));
    let (plain, _) = split_secrets(&args, &schema()).unwrap();
    assert_eq!(Value::Object(plain), json!({"auth": {}}));
}

#[test]
fn secrets_that_are_not_text_or_inside_lists_are_refused_without_their_values() {
    let error = split_secrets(&map(json!({"pin": 1234})), &schema()).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("`pin` is not text") && !text.contains("1234"),
        "{text}"
    );
    assert!(error.is_user_error());
    let error = split_secrets(&map(json!({"keys": ["k-one"]})), &schema()).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("`keys` is a list") && !text.contains("k-one"),
        "{text}"
    );
}

#[test]
fn a_cluster_selector_is_key_value_pairs() {
    let selector = parse_selector("env=prod, region=eu-1,example.com/tier=a").unwrap();
    assert_eq!(
        selector.match_labels,
        BTreeMap::from([
            ("env".to_owned(), "prod".to_owned()),
            ("region".to_owned(), "eu-1".to_owned()),
            ("example.com/tier".to_owned(), "a".to_owned()),
        ])
    );
    assert!(parse_selector("").unwrap().match_labels.is_empty());
    for bad in ["env", "=prod", "env=a b", "env=x/y"] {
        let error = parse_selector(bad).unwrap_err();
        assert!(
            error.to_string().contains("--cluster-selector"),
            "{bad}: {error}"
        );
    }
}

#[test]
fn the_masked_secret_shows_no_value() {
    let secret = params_secret(
        "vela-system",
        "demo",
        BTreeMap::from([("token".to_owned(), "hunter2".to_owned())]),
    );
    let declaration = Declaration {
        addon: Addon::new("demo", AddonSpec::default()),
        secret: Some(secret),
        validated_version: "1.0.0".to_owned(),
    };
    let masked = declaration.masked_secret().unwrap();
    assert_eq!(masked["data"]["token"], crate::render::MASK);
    assert_eq!(masked["metadata"]["name"], "addon-params-demo");
    assert_eq!(masked["metadata"]["labels"][LABEL_PARAMS], "demo");
    let text = masked.to_string();
    assert!(
        !text.contains("hunter2") && !text.contains("aHVudGVyMg"),
        "{text}"
    );
}
