//! Label selectors over clusters' labels, as Kubernetes writes them: `matchLabels` and
//! `matchExpressions` (`In`, `NotIn`, `Exists`, `DoesNotExist`), all of which must hold.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A label selector (`{}` selects everything).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Labels that must have these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements that must all hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<Requirement>,
}

/// One requirement of `matchExpressions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// The label.
    pub key: String,
    /// How it is tested.
    pub operator: Operator,
    /// The values (`In`, `NotIn`: at least one; `Exists`, `DoesNotExist`: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// A requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operator {
    /// The label has one of the values.
    In,
    /// The label is absent or has none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

impl LabelSelector {
    /// Whether the labels satisfy every part of the selector.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }

    /// Checks the requirements' values against their operators.
    ///
    /// # Errors
    ///
    /// A message naming the requirement.
    pub fn validate(&self) -> Result<(), String> {
        for requirement in &self.match_expressions {
            let needs_values = matches!(requirement.operator, Operator::In | Operator::NotIn);
            if requirement.key.is_empty() {
                return Err("a requirement has an empty `key`".to_owned());
            }
            if needs_values && requirement.values.is_empty() {
                return Err(format!(
                    "`{}` {:?} needs at least one value",
                    requirement.key, requirement.operator
                ));
            }
            if !needs_values && !requirement.values.is_empty() {
                return Err(format!(
                    "`{}` {:?} takes no values",
                    requirement.key, requirement.operator
                ));
            }
        }
        Ok(())
    }
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn selector(value: serde_json::Value) -> LabelSelector {
        let selector: LabelSelector = serde_json::from_value(value).unwrap();
        selector.validate().unwrap();
        selector
    }

    #[test]
    fn match_labels_and_every_operator_select_as_kubernetes_does() {
        let prod_east = labels(&[("env", "prod"), ("region", "east")]);
        let staging = labels(&[("env", "staging")]);
        let bare = labels(&[]);
        let cases = [
            (json!({}), [true, true, true]),
            (
                json!({"matchLabels": {"env": "prod"}}),
                [true, false, false],
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]}]}),
                [true, true, false],
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}),
                [false, true, true],
            ),
            (
                json!({"matchExpressions": [{"key": "region", "operator": "Exists"}]}),
                [true, false, false],
            ),
            (
                json!({"matchExpressions": [{"key": "region", "operator": "DoesNotExist"}]}),
                [false, true, true],
            ),
            (
                json!({"matchLabels": {"env": "prod"}, "matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["east"]}]}),
                [false, false, false],
            ),
        ];
        for (given, expected) in cases {
            let s = selector(given.clone());
            let got = [s.matches(&prod_east), s.matches(&staging), s.matches(&bare)];
            assert_eq!(got, expected, "{given}");
        }
    }

    #[test]
    fn operators_with_the_wrong_values_are_refused() {
        for (given, expected) in [
            (
                json!({"key": "env", "operator": "In"}),
                "needs at least one value",
            ),
            (
                json!({"key": "env", "operator": "Exists", "values": ["x"]}),
                "takes no values",
            ),
            (json!({"key": "", "operator": "Exists"}), "empty `key`"),
        ] {
            let s: LabelSelector =
                serde_json::from_value(json!({"matchExpressions": [given]})).unwrap();
            let error = s.validate().unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
        assert!(serde_json::from_value::<LabelSelector>(
            json!({"matchExpressions": [{"key": "a", "operator": "Equals"}]})
        )
        .is_err());
    }
}
