//! What may name a case: a case name becomes file names in a results directory
//! (`cases/<case>.md`, `traces/<case>-<variant>.csv.zst`), a CSV field and a link in the
//! report, so the results model decides which names it can hold.

use anyhow::{bail, Result};
use std::path::Path;

/// The longest case name, in bytes: with a variant's id and suffixes it stays a file name
/// any file system takes (255 bytes).
pub const MAX_CASE: usize = 100;

/// Checks that `case` (a scenario file's stem) can name a case: it becomes the file names
/// `cases/<case>.md` and `traces/<case>-<variant>.csv.zst`, a CSV field and a link in the
/// report, so it is letters, digits, `-`, `_` and `.`, starting with a letter or digit (no
/// `..`, which named `target/lab/` itself; no tab, which the journal cannot hold; no space,
/// which breaks the report's links). `file` names the scenario file in the message.
pub fn check_case(case: &str, file: &Path) -> Result<()> {
    if case.len() > MAX_CASE {
        bail!(
            "scenario file {}: its name names the case, and a case name is at most {MAX_CASE} \
             bytes (it becomes file names, with the variant's added), not {}. Nothing was built: \
             rename the file",
            file.display(),
            case.len()
        );
    }
    let first_ok = case
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = case
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !first_ok || !rest_ok {
        bail!(
            "scenario file {}: its name `{case}` names the case, and a case name is letters, \
             digits, `-`, `_` and `.`, starting with a letter or digit (it becomes file names and \
             links). Nothing was built: rename the file (e.g. `{}.json`)",
            file.display(),
            suggestion(case)
        );
    }
    Ok(())
}

/// A case name like `case` that [`check_case`] accepts.
fn suggestion(case: &str) -> String {
    let kept: String = case
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                c
            } else {
                '-'
            }
        })
        .collect();
    // A case starts with a letter or digit: `_u` suggested `_u`, itself refused.
    let trimmed = kept.trim_matches(['-', '_']);
    if trimmed.is_empty() {
        "scenario".into()
    } else {
        trimmed.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_name_must_be_a_plain_file_name() {
        let file = Path::new("/s/x.json");
        for good in ["gb", "gb2", "guest-book_1.v2"] {
            check_case(good, file).unwrap();
        }
        let long = "x".repeat(MAX_CASE + 1);
        for bad in [
            "..",
            ".",
            ".hidden",
            "a b",
            "a\tb",
            "a/b",
            "",
            "-x",
            "_u",
            long.as_str(),
        ] {
            let err = check_case(bad, file).unwrap_err().to_string();
            assert!(err.contains("rename the file"), "{bad}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            // The name it suggests is one it takes.
            if let Some(at) = err.find("(e.g. `") {
                let name = &err[at + 7..];
                let name = &name[..name.find(".json`").unwrap()];
                check_case(name, file).unwrap_or_else(|e| panic!("{bad}: suggested {name}: {e}"));
            }
        }
        check_case(&"x".repeat(MAX_CASE), file).unwrap();
    }
}
