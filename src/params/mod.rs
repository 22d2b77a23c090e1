//! PLACEHOLDER until the parameters module lands.
#![allow(missing_docs, clippy::all, clippy::pedantic, unused)]
use serde_json::{Map, Value};
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Error(pub String);
pub fn register(_engine: &mut rhai::Engine) {}
#[derive(Clone, Debug)]
pub struct ParameterSchema {
    schema: Value,
}
impl ParameterSchema {
    pub fn empty() -> Self {
        Self {
            schema: Value::Null,
        }
    }
    pub fn from_rhai(_v: rhai::Dynamic) -> Result<Self, Error> {
        Ok(Self::empty())
    }
    pub fn from_json_schema(schema: Value) -> Result<Self, Error> {
        Ok(Self { schema })
    }
    pub fn schema(&self) -> &Value {
        &self.schema
    }
    pub fn known(&self) -> Vec<String> {
        vec![]
    }
    pub fn is_secret(&self, _p: &str) -> bool {
        false
    }
    pub fn parse_args(&self, _a: &[String]) -> Result<Map<String, Value>, Error> {
        Ok(Map::new())
    }
    pub fn resolve(&self, layers: &[&Map<String, Value>]) -> Result<Value, Error> {
        let mut m = Map::new();
        for l in layers {
            for (k, v) in *l {
                m.insert(k.clone(), v.clone());
            }
        }
        Ok(Value::Object(m))
    }
    pub fn mask(&self, v: &Value) -> Value {
        v.clone()
    }
}
pub fn merge_values(_b: &mut Value, _o: &Value) {}
