//! Table identifiers as Java `Identifier` parses them: `database.object`, where the object is
//! `table`, `table$branch_<b>`, `table$<system>` or `table$branch_<b>$<system>`.

use super::filesystem::check_name;
use crate::branch::MAIN_BRANCH;
use crate::error::{Error, Result};

const BRANCH_PREFIX: &str = "branch_";

/// A parsed identifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identifier {
    pub database: String,
    pub table: String,
    /// `None`: the main branch.
    pub branch: Option<String>,
    /// A system table (`snapshots`, `files`, ...) of the table or branch.
    pub system: Option<String>,
}

impl Identifier {
    pub fn parse(text: &str) -> Result<Identifier> {
        let (database, object) = text.split_once('.').ok_or_else(|| {
            Error::invalid(format!(
                "table identifier '{text}' must be 'database.table'"
            ))
        })?;
        let mut parts = object.split('$');
        let table = parts.next().unwrap_or_default();
        let (mut branch, mut system) = (None, None);
        match (parts.next(), parts.next(), parts.next()) {
            (None, _, _) => {}
            (Some(one), None, _) => match one.strip_prefix(BRANCH_PREFIX) {
                Some(b) => branch = Some(b.to_string()),
                None => system = Some(one.to_string()),
            },
            (Some(b), Some(s), None) if b.starts_with(BRANCH_PREFIX) => {
                branch = Some(b[BRANCH_PREFIX.len()..].to_string());
                system = Some(s.to_string());
            }
            _ => {
                return Err(Error::invalid(format!(
                    "table identifier '{text}': the object must be table, table$branch_<name>, \
                     table$<system table> or table$branch_<name>$<system table>"
                )))
            }
        }
        check_name("database", database)?;
        check_name("table", table)?;
        if branch.as_deref().is_some_and(str::is_empty)
            || system.as_deref().is_some_and(str::is_empty)
        {
            return Err(Error::invalid(format!(
                "table identifier '{text}' has an empty suffix"
            )));
        }
        Ok(Identifier {
            database: database.to_string(),
            table: table.to_string(),
            branch,
            system,
        })
    }

    /// A plain table's identifier (no branch, no system table), checked.
    pub fn table(text: &str) -> Result<Identifier> {
        let id = Identifier::parse(text)?;
        if id.branch.is_some() || id.system.is_some() {
            return Err(Error::invalid(format!(
                "'{text}' names a branch or system table; this operation takes a table"
            )));
        }
        Ok(id)
    }

    /// The same table's branch `branch` (`main`: the table itself), without a system table.
    pub fn on_branch(&self, branch: &str) -> Identifier {
        Identifier {
            database: self.database.clone(),
            table: self.table.clone(),
            branch: (branch != MAIN_BRANCH).then(|| branch.to_string()),
            system: None,
        }
    }

    /// Java `getObjectName`: `table` or `table$branch_<b>` (what lock ids and REST paths name).
    pub fn object_name(&self) -> String {
        match &self.branch {
            Some(b) => format!("{}${BRANCH_PREFIX}{b}", self.table),
            None => self.table.clone(),
        }
    }
}

impl std::fmt::Display for Identifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.database, self.object_name())?;
        match &self.system {
            Some(s) => write!(f, "${s}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_javas_forms() {
        let id = Identifier::parse("db.t").unwrap();
        assert_eq!((id.branch, id.system), (None, None));
        let id = Identifier::parse("db.t$branch_b").unwrap();
        assert_eq!(id.branch.as_deref(), Some("b"));
        assert_eq!(id.object_name(), "t$branch_b");
        let id = Identifier::parse("db.t$snapshots").unwrap();
        assert_eq!(id.system.as_deref(), Some("snapshots"));
        let id = Identifier::parse("db.t$branch_b$files").unwrap();
        assert_eq!(
            (id.branch.as_deref(), id.system.as_deref()),
            (Some("b"), Some("files"))
        );
        assert_eq!(id.to_string(), "db.t$branch_b$files");
        for bad in [
            "t",
            "db.",
            ".t",
            "db.t$a$b",
            "db.t$branch_",
            "db/x.t",
            "db.t$x$y$z",
        ] {
            assert!(Identifier::parse(bad).is_err(), "{bad}");
        }
        assert!(Identifier::table("db.t$snapshots").is_err());
    }
}
