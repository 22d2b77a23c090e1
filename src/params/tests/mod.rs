//! Unit tests of the parameter declarations and values, with the helpers they share.

mod declarations;
mod values;

use super::*;
use rhai::packages::{
    ArithmeticPackage, BasicArrayPackage, BasicMapPackage, BasicStringPackage, LanguageCorePackage,
    LogicPackage, MoreStringPackage, Package,
};
use rhai::{Dynamic, Engine};

/// The engine as the renderer builds it: raw, the listed packages, strict variables.
fn engine() -> Engine {
    let mut engine = Engine::new_raw();
    engine.register_global_module(BasicArrayPackage::new().as_shared_module());
    engine.register_global_module(BasicMapPackage::new().as_shared_module());
    engine.register_global_module(LanguageCorePackage::new().as_shared_module());
    engine.register_global_module(ArithmeticPackage::new().as_shared_module());
    engine.register_global_module(LogicPackage::new().as_shared_module());
    engine.register_global_module(BasicStringPackage::new().as_shared_module());
    engine.register_global_module(MoreStringPackage::new().as_shared_module());
    engine.set_strict_variables(true);
    engine.set_max_expr_depths(64, 64);
    register(&mut engine);
    engine
}

fn eval(script: &str) -> Result<Dynamic, String> {
    engine().eval::<Dynamic>(script).map_err(|e| e.to_string())
}

fn schema_of(script: &str) -> ParameterSchema {
    let value = eval(script).expect("the script evaluates");
    ParameterSchema::from_rhai(value).expect("the declarations compile")
}

/// The schema fragment of one parameter `p` declared as `expression`.
fn fragment(expression: &str) -> Value {
    schema_of(&format!("#{{ p: {expression} }}")).schema()["properties"]["p"].clone()
}

fn declaration_error(script: &str) -> String {
    let value = eval(script).expect("the script evaluates");
    ParameterSchema::from_rhai(value)
        .expect_err("the declarations are rejected")
        .to_string()
}

fn script_error(script: &str) -> String {
    eval(script).expect_err("the script fails")
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("expected an object, got {other}"),
    }
}

/// Resolves `key=value` arguments alone; the error text on failure.
fn resolve_args(schema: &ParameterSchema, given: &[&str]) -> Result<Value, String> {
    let given = schema.parse_args(&args(given)).map_err(|e| e.to_string())?;
    schema.resolve(&[&given]).map_err(|e| e.to_string())
}

const DESIGN_EXAMPLE: &str = r#"
    // parameter.rhai
    #{
        replicas:  pint(1).max(10).usage("Number of controller replicas"),
        image:     string("ghcr.io/example/controller:1.4.2").usage("Controller image"),
        mode:      enum_of(["standalone", "ha"], "standalone"),
        namespace: string("example-system"),
        clusters:  list(string()).optional().usage("Clusters to deploy to; all clusters when absent"),
        resources: object(#{ cpu: string("100m"), memory: string("128Mi") }),
    }
"#;
