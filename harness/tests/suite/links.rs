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
