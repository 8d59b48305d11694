//! A role name.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use std::borrow::Cow;

/// A role name: `[a-z0-9_-]{1,64}` (`reviewer`, `security`, `maintainer`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Role(String);

impl Role {
    /// Check `s`.
    pub fn new(s: &str) -> Result<Role, String> {
        if s.is_empty() || s.len() > 64 {
            return Err("a role is 1 to 64 characters".into());
        }
        if let Some(c) = s
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-')))
        {
            return Err(format!(
                "role {s:?} contains {c:?}; roles are lowercase letters, digits, '_' and '-'"
            ));
        }
        Ok(Role(s.to_owned()))
    }

    /// The role name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Role::new(&s).map_err(D::Error::custom)
    }
}

impl JsonSchema for Role {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Role".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"})
    }
}
