//! Every link in the lab's Markdown resolves: the README, `docs/` and the generated reports
//! link into one another by file and heading, and a page moved or a heading renamed must fail
//! here, not on a reader's click.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The Markdown files a reader starts from, and everything they link to is checked.
fn pages() -> Vec<PathBuf> {
    let root = root();
    let mut pages = vec![root.join("README.md")];
    for dir in [
        "docs",
        "results",
        "results/corpus",
        "results/pr4853",
        "results/cases",
        "results/corpus/cases",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        found.sort();
        pages.extend(found);
    }
    pages
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    text.lines().enumerate().filter(move |(_, line)| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// `line` without its inline code spans (a link written inside backticks is an example).
fn without_code(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// The targets of `[text](target)` and `![alt](target)` on `line`.
fn targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        out.push(after[..end].trim().to_owned());
        rest = &after[end..];
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of `text`'s headings, a repeated one numbered as GitHub numbers it.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let base = slug(heading.trim_start_matches('#'));
        let mut anchor = base.clone();
        let mut n = 0;
        while !seen.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
    }
    seen
}

#[test]
fn every_link_in_the_readme_docs_and_reports_resolves() {
    let pages = pages();
    assert!(pages.len() > 3, "no docs found beside the README");
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (n, line) in prose(&text) {
            for target in targets(&without_code(line)) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    page.parent().unwrap().join(path)
                };
                let at = format!("{}:{}: {target}", page.display(), n + 1);
                if !file.exists() {
                    broken.push(format!("{at}: no such file"));
                } else if !anchor.is_empty() && file.extension().is_some_and(|e| e == "md") {
                    let linked = std::fs::read_to_string(&file).unwrap();
                    if !anchors(&linked).contains(anchor) {
                        broken.push(format!("{at}: no such heading"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_are_the_ones_github_makes() {
    assert_eq!(slug(" What galloc should ship"), "what-galloc-should-ship");
    assert_eq!(slug(" Is the sweep enough?"), "is-the-sweep-enough");
    assert_eq!(
        slug(" Gear's 2025 figure, re-measured"),
        "gears-2025-figure-re-measured"
    );
    let twice = anchors("# A\n## A\n```\n# not a heading\n```\n");
    assert_eq!(twice, BTreeSet::from(["a".to_owned(), "a-1".to_owned()]));
}

/// Every text a reader of the code meets that may name a page of the docs: comments and doc
/// comments of the lab's Rust files (wrapped lines joined), string literals' lines, the
/// justfile's and the Cargo manifests' comments. Each as (file, line, text).
fn code_texts() -> Vec<(PathBuf, usize, String)> {
    let mut files = vec![root().join("justfile")];
    files.extend(crate::codebase::lab_files(|name| {
        name.ends_with(".rs") || name == "Cargo.toml"
    }));
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let rust = file.extension().is_some_and(|e| e == "rs");
        // A paragraph of comment lines, joined, starts at its first line.
        let mut para: Option<(usize, String)> = None;
        for (n, line) in text.lines().enumerate() {
            let t = line.trim_start();
            let comment = if rust {
                t.strip_prefix("//!")
                    .or_else(|| t.strip_prefix("///"))
                    .or_else(|| t.strip_prefix("//"))
            } else {
                t.strip_prefix('#')
            };
            match comment {
                Some(c) => match &mut para {
                    Some((_, p)) => {
                        p.push(' ');
                        p.push_str(c.trim());
                    }
                    None => para = Some((n, c.trim().to_owned())),
                },
                None => {
                    if let Some((at, p)) = para.take() {
                        out.push((file.clone(), at + 1, p));
                    }
                    // Code: its string literals, with their escaped quotes as quotes.
                    out.push((file.clone(), n + 1, line.replace("\\\"", "\"")));
                }
            }
        }
        if let Some((at, p)) = para {
            out.push((file.clone(), at + 1, p));
        }
    }
    out
}

/// The `(page, section)` references in `text`: `docs/x.md, "Section"`, `README, "Section"`
/// (also without the comma, or with `'s`).
fn section_references(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for page_at in text
        .match_indices("docs/")
        .map(|(i, _)| i)
        .chain(text.match_indices("README").map(|(i, _)| i))
    {
        let rest = &text[page_at..];
        let page_len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '/' || c == '-' || c == '.' || c == '_'))
            .unwrap_or(rest.len());
        let page = rest[..page_len].trim_end_matches('.');
        if !(page == "README" || page == "README.md" || page.ends_with(".md")) {
            continue;
        }
        let after = rest[page_len..].trim_start_matches("'s");
        let after = after.strip_prefix(',').unwrap_or(after).trim_start();
        let Some(quoted) = after.strip_prefix('"') else {
            continue;
        };
        let Some(end) = quoted.find('"') else {
            continue;
        };
        // A heading starts with a capital (or a figure) and holds no code.
        let section = &quoted[..end];
        let heading_like = section
            .chars()
            .next()
            .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
            && !section.contains(['|', '(', ')', '{', '}', '=', ';']);
        if heading_like {
            out.push((page.to_owned(), section.to_owned()));
        }
    }
    out
}

/// A page named in code, `README, "Variants"` or `docs/verdicts.md, "The minimum effect"`,
/// exists and has that section (a heading that begins with its words, as a reference may give
/// only a heading's first clause): a reader sent there must find it.
#[test]
fn every_section_named_in_code_exists() {
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    // This file's own examples are not references.
    let me = root.join("harness/tests/suite/links.rs");
    for (file, line, text) in code_texts().into_iter().filter(|t| t.0 != me) {
        for (page, section) in section_references(&text) {
            let path = match page.as_str() {
                "README" | "README.md" => root.join("README.md"),
                p => root.join(p),
            };
            let at = format!("{}:{line}: {page}, \"{section}\"", file.display());
            checked += 1;
            match std::fs::read_to_string(&path) {
                Err(_) => broken.push(format!("{at}: no such page")),
                Ok(t) if !anchors(&t).iter().any(|a| a.starts_with(&slug(&section))) => {
                    broken.push(format!("{at}: no such section"))
                }
                Ok(_) => {}
            }
        }
    }
    assert!(checked > 20, "found only {checked} references");
    assert!(
        broken.is_empty(),
        "sections named in code that do not exist:\n{}",
        broken.join("\n")
    );
}

/// Every repository path the README and the docs name in backticks (`harness/src/…`,
/// `results/gtest/totals.csv`, `allocator/src/compact.rs:3`) exists; a path with a
/// placeholder (`<case>`, `*`, `{…}`) is a pattern, not a path.
#[test]
fn every_repository_path_named_in_the_docs_exists() {
    let root = root();
    let tops = [
        "allocator/",
        "harness/",
        "variants/",
        "contracts/",
        "replay/",
        "fuzz/",
        "docs/",
        ".ci/",
        "results/",
        "images/",
    ];
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut missing = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (n, line) in text.lines().enumerate() {
            for (i, span) in line.split('`').enumerate() {
                if i % 2 == 0 || !tops.iter().any(|t| span.starts_with(t)) {
                    continue;
                }
                if span.contains(['<', '*', '{', '…', '$', ' ', '|', '=']) {
                    continue;
                }
                // `file.rs:12` names a line of the file.
                let path = match span.rsplit_once(':') {
                    Some((p, l)) if l.chars().all(|c| c.is_ascii_digit() || c == '-') => p,
                    _ => span,
                };
                checked += 1;
                if !root.join(path).exists() {
                    missing.push(format!("{}:{}: `{span}`", page.display(), n + 1));
                }
            }
        }
    }
    assert!(checked > 20, "found only {checked} paths");
    assert!(
        missing.is_empty(),
        "paths the docs name that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn section_references_are_found_however_they_are_written() {
    assert_eq!(
        section_references(r#"(docs/verdicts.md, "The minimum effect") and README's "Variants""#),
        [
            (
                "docs/verdicts.md".to_owned(),
                "The minimum effect".to_owned()
            ),
            ("README".to_owned(), "Variants".to_owned())
        ]
    );
    assert_eq!(
        section_references(r#"docs/design.md "Where the heap starts""#),
        [(
            "docs/design.md".to_owned(),
            "Where the heap starts".to_owned()
        )]
    );
    assert!(section_references("README.md has no section here").is_empty());
}
