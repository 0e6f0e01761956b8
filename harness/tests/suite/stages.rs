//! The harness's folders are its stages (docs/layout.md), and a stage only uses the ones below
//! it: `results` (the rows and their files) at the bottom, then `build`, `run`, `analyse` (pure
//! functions of rows), `report` (rendering rows), `store` (a results directory written all or
//! nothing, its report published with it), and the commands (`cmd/`) on top. `analyse` may use nothing but `results`, so a verdict is a function
//! of result rows and never of how they were made or shown. No module uses one that uses it
//! back, however far round.
//!
//! Read from the sources: every `crate::…` (`galloc_lab::…` in the commands, `super::…`
//! resolved) outside comments and test modules, mapped to the module file it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The stages from the bottom up; a module may use its own stage and those before it.
const ORDER: [&str; 7] = [
    "results", "build", "run", "analyse", "report", "store", "cmd",
];

/// Stages a stage may use beyond itself, where the order allows more than it should.
fn allowed(stage: &str) -> Vec<&'static str> {
    match stage {
        // Verdicts, fits, the gate: functions of rows alone.
        "analyse" => vec!["results"],
        s => {
            let rank = ORDER.iter().position(|o| *o == s).unwrap_or(ORDER.len());
            ORDER[..rank].to_vec()
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A file's module path: `analyse/layout.rs` is `analyse::layout`, `run/mod.rs` is `run`;
/// the binary's files (`main.rs`, `cmd/`) keep theirs, `cmd::…`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Every module file under `src/`, by module path.
fn modules() -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src()).unwrap().to_path_buf();
                out.insert(module_of(&rel), path);
            }
        }
    }
    assert!(out.len() > 40, "found only {} modules", out.len());
    out
}

/// The code of a file: comments dropped, and everything from its test module on.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths `text` names after `prefix` (`crate::`, `super::`, `galloc_lab::`), each as its
/// segments (identifiers only: a `{` or `*` ends it).
fn paths_after<'a>(text: &'a str, prefix: &'a str) -> impl Iterator<Item = Vec<String>> + 'a {
    text.match_indices(prefix).filter_map(move |(i, _)| {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            return None;
        }
        let rest = &text[i + prefix.len()..];
        let mut segs = Vec::new();
        for seg in rest.split("::") {
            let ident: String = seg
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if ident.is_empty() {
                break;
            }
            let whole = ident.len() == seg.len();
            segs.push(ident);
            if !whole {
                break;
            }
        }
        Some(segs)
    })
}

/// Each module's uses of other modules: the longest module path each reference begins with.
fn uses() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules = modules();
    let resolve = |path: Vec<String>| -> Option<Vec<String>> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| modules.contains_key(p))
    };
    let mut out = BTreeMap::new();
    for (module, file) in &modules {
        let text = code(file);
        // `super::` from `a/b.rs` and from `a/b/mod.rs` is `a`.
        let parent = module[..module.len().saturating_sub(1)].to_vec();
        let mut used = BTreeSet::new();
        let mut add = |p: Vec<String>| {
            if let Some(m) = resolve(p).filter(|m| m != module) {
                used.insert(m);
            }
        };
        // In the binary (`main.rs`, `cmd/`), `crate::` is its own modules and `galloc_lab::`
        // the library's.
        for p in paths_after(&text, "crate::") {
            add(p);
        }
        for p in paths_after(&text, "galloc_lab::") {
            add(p);
        }
        for p in paths_after(&text, "super::") {
            let mut full = parent.clone();
            full.extend(p);
            add(full);
        }
        out.insert(module.clone(), used);
    }
    out
}

#[test]
fn every_stage_uses_only_the_stages_below_it() {
    let mut wrong = Vec::new();
    for (module, used) in uses() {
        let Some(stage) = module.first() else {
            continue;
        };
        let ok = allowed(stage);
        for u in used {
            let to = &u[0];
            if to != stage && !ok.contains(&to.as_str()) {
                wrong.push(format!("{} uses {}", module.join("::"), u.join("::")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a stage uses one above it (or analyse uses more than results):\n{}",
        wrong.join("\n")
    );
}

/// Uses as the tree sees them: where module `m` uses `t` (neither inside the other), the child
/// of their nearest common ancestor that holds `m` uses the one that holds `t`. So `a/x.rs`
/// using `a/y/z.rs` is `a::x` using `a::y`, and `a/y/z.rs` using `a/x.rs` closes a circle
/// between the two.
fn sibling_uses() -> BTreeSet<(Vec<String>, Vec<String>)> {
    let mut out = BTreeSet::new();
    for (m, used) in uses() {
        for t in used {
            if t.starts_with(&m) || m.starts_with(&t) {
                continue;
            }
            let common = m.iter().zip(&t).take_while(|(a, b)| a == b).count();
            out.insert((m[..=common].to_vec(), t[..=common].to_vec()));
        }
    }
    out
}

#[test]
fn no_module_uses_one_that_uses_it_back() {
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (a, b) in sibling_uses() {
        graph.entry(a).or_default().insert(b);
    }
    // Depth-first from every module; one met again on the current path closes a circle.
    fn visit(
        at: &Vec<String>,
        graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        path: &mut Vec<Vec<String>>,
        done: &mut BTreeSet<Vec<String>>,
        circles: &mut Vec<String>,
    ) {
        if let Some(i) = path.iter().position(|p| p == at) {
            let names: Vec<String> = path[i..].iter().chain([at]).map(|m| m.join("::")).collect();
            circles.push(names.join(" -> "));
            return;
        }
        if !done.insert(at.clone()) {
            return;
        }
        path.push(at.clone());
        for next in graph.get(at).into_iter().flatten() {
            visit(next, graph, path, done, circles);
        }
        path.pop();
    }
    let mut circles = Vec::new();
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done, &mut circles);
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

/// `lab measure` reads as its pipeline: its command function only composes the stages (plan,
/// build and run, write and render) and stays under 80 lines; no other command calls it
/// (`lab pick` composes the same stages itself).
#[test]
fn lab_measure_is_a_short_pipeline_and_no_command_calls_it() {
    let text = std::fs::read_to_string(src().join("cmd/measure/mod.rs")).unwrap();
    let start = text
        .find("\npub fn run(")
        .expect("lab measure's command function");
    let lines = text[start + 1..]
        .lines()
        .position(|l| l == "}")
        .expect("its end")
        + 1;
    assert!(
        lines < 80,
        "lab measure's command function is {lines} lines"
    );
    for (module, file) in modules() {
        if module.first().is_some_and(|m| m == "cmd")
            && module.get(1).is_some_and(|m| m != "measure")
        {
            let code = code(&file);
            assert!(
                !code.contains("measure::run("),
                "{} calls lab measure's command instead of composing its stages",
                file.display()
            );
        }
    }
}
