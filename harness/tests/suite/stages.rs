//! The harness's folders are its stages (docs/layout.md), and a stage only uses the ones below
//! it: `results` (the rows and their files) at the bottom, then `build`, `run`, `analyse` (pure
//! functions of rows), `report` (rendering rows), `store` (a results directory written all or
//! nothing, its report published with it), and the commands (`cmd/`) on top. `analyse` may use nothing but `results`, so a verdict is a function
//! of result rows and never of how they were made or shown. No module uses one that uses it
//! back, however far round.
//!
//! Read from the sources as the compiler reads names, with syn: every `use` (brace groups,
//! renames, `self`, `super::super`, a name an earlier `use` brought in) and every path in the
//! code, macro arguments and `impl` headers, resolved to the module it names, outside test
//! items; and every inherent `impl` of a type of another stage, whose methods would let that
//! stage call up unseen. `the_stage_check_finds_each_kind_of_breach` holds the check to a tree
//! of each kind of breach.
//!
//! Why a test and not a crate per stage, which would make Cargo refuse an upward use: the
//! reasons and figures are in docs/layout.md, "Why the stages are one crate".

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

/// Every module file under `src`, by module path.
fn modules_in(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).unwrap().to_path_buf();
                out.insert(module_of(&rel), path);
            }
        }
    }
    out
}

fn modules() -> BTreeMap<Vec<String>, PathBuf> {
    let out = modules_in(&src());
    assert!(out.len() > 40, "found only {} modules", out.len());
    out
}

/// The code of a file: comments dropped, and everything from its test module on.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether an item is compiled only for tests (`#[cfg(test)]`): its uses are not the stage's.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// One file read as the compiler reads its names: its `use` declarations (groups, renames,
/// `self`, `super`, `crate` and names brought in by an earlier `use`) and every path in its
/// code, macros' arguments and `impl` headers included, each resolved to the module of the
/// tree it names. Test-only items are left out.
struct Resolver<'a> {
    modules: &'a BTreeMap<Vec<String>, PathBuf>,
    /// The module being read (an inline `mod` adds to it).
    at: Vec<String>,
    /// Names the file's `use` declarations bring in, and what each stands for.
    names: BTreeMap<String, Vec<String>>,
    /// The modules it uses.
    used: BTreeSet<Vec<String>>,
    /// `impl` blocks of a type of another stage: (the type's module).
    impls: BTreeSet<Vec<String>>,
}

impl<'a> Resolver<'a> {
    /// The absolute path `segments` name from the module being read, if it is the tree's.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let mut base = match first.as_str() {
            "crate" | "galloc_lab" => Vec::new(),
            "self" => self.at.clone(),
            "super" => {
                let mut base = self.at.clone();
                base.pop()?;
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            name => match self.names.get(name) {
                Some(target) => target.clone(),
                None => {
                    let mut child = self.at.clone();
                    child.push(name.to_owned());
                    if !self.modules.contains_key(&child) {
                        return None;
                    }
                    child
                }
            },
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module of the tree an absolute path lies in: its longest prefix that is one.
    fn module(&self, path: &[String]) -> Option<Vec<String>> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| self.modules.contains_key(p))
    }

    fn record(&mut self, segments: &[String]) {
        if let Some(m) = self.absolute(segments).and_then(|p| self.module(&p)) {
            if m != self.at {
                self.used.insert(m);
            }
        }
    }

    /// Every (name, path) a `use` tree brings in, each path as written (after `prefix`).
    fn leaves(
        tree: &syn::UseTree,
        prefix: Vec<String>,
        out: &mut Vec<(Option<String>, Vec<String>)>,
    ) {
        match tree {
            syn::UseTree::Path(p) => {
                let mut prefix = prefix;
                prefix.push(p.ident.to_string());
                Self::leaves(&p.tree, prefix, out);
            }
            syn::UseTree::Name(n) if n.ident == "self" => {
                out.push((prefix.last().cloned(), prefix));
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix;
                path.push(n.ident.to_string());
                out.push((Some(n.ident.to_string()), path));
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix;
                if r.ident != "self" {
                    path.push(r.ident.to_string());
                }
                out.push((Some(r.rename.to_string()), path));
            }
            syn::UseTree::Glob(_) => out.push((None, prefix)),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    Self::leaves(t, prefix.clone(), out);
                }
            }
        }
    }

    /// The names every non-test `use` of `items` brings in, resolved (a `use` may name what
    /// another brought in, so until nothing changes), each leaf recorded as a use.
    fn read_uses(&mut self, items: &[syn::Item]) {
        let mut leaves = Vec::new();
        for item in items {
            if let syn::Item::Use(u) = item {
                if !test_only(&u.attrs) && u.leading_colon.is_none() {
                    Self::leaves(&u.tree, Vec::new(), &mut leaves);
                }
            }
        }
        for _ in 0..8 {
            let before = self.names.clone();
            for (name, path) in &leaves {
                if let (Some(name), Some(abs)) = (name, self.absolute(path)) {
                    self.names.insert(name.clone(), abs);
                }
            }
            if self.names == before {
                break;
            }
        }
        for (_, path) in &leaves {
            self.record(path);
        }
    }
}

impl<'ast> syn::visit::Visit<'ast> for Resolver<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Trait(t) => &t.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !test_only(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if let Some((_, items)) = &m.content {
            self.at.push(m.ident.to_string());
            self.read_uses(items);
            for item in items {
                self.visit_item(item);
            }
            self.at.pop();
        }
    }

    // Read in `read_uses`, where each leaf is resolved whole.
    fn visit_item_use(&mut self, _: &'ast syn::ItemUse) {}

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if i.trait_.is_none() {
            if let syn::Type::Path(t) = &*i.self_ty {
                let segments: Vec<String> = t
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                if let Some(m) = self.absolute(&segments).and_then(|p| self.module(&p)) {
                    if m.first() != self.at.first() {
                        self.impls.insert(m);
                    }
                }
            }
        }
        syn::visit::visit_item_impl(self, i);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.record(&segments);
        }
        syn::visit::visit_path(self, path);
    }

    /// A macro's arguments are tokens to syn: read them as the expressions most are
    /// (`format!`, `assert!`, `vec!`, `matches!`…), or as items.
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        use syn::parse::Parser;
        let exprs = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(list) = exprs.parse2(m.tokens.clone()) {
            for e in &list {
                self.visit_expr(e);
            }
        } else if let Ok(file) = syn::parse2::<syn::File>(m.tokens.clone()) {
            for item in &file.items {
                self.visit_item(item);
            }
        }
        syn::visit::visit_macro(self, m);
    }
}

/// What each module of the tree under `src` uses, and the modules whose types it gives
/// inherent `impl` blocks outside their stage.
#[allow(clippy::type_complexity)]
fn read_tree(
    src: &Path,
) -> (
    BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) {
    let modules = modules_in(src);
    let (mut uses, mut impls) = (BTreeMap::new(), BTreeMap::new());
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{}: not Rust syn reads: {e}", file.display()));
        let mut r = Resolver {
            modules: &modules,
            at: module.clone(),
            names: BTreeMap::new(),
            used: BTreeSet::new(),
            impls: BTreeSet::new(),
        };
        r.read_uses(&parsed.items);
        syn::visit::Visit::visit_file(&mut r, &parsed);
        uses.insert(module.clone(), r.used);
        impls.insert(module.clone(), r.impls);
    }
    (uses, impls)
}

/// Each module's uses of other modules of the lab's tree.
fn uses() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    read_tree(&src()).0
}

/// Every breach of the stage order in the tree under `src`: a module that uses one of a
/// higher stage (or `analyse` one beyond `results`), or an `impl` block that gives a type of
/// another stage methods (which that stage's code could then call, unseen as a path).
fn breaches(src: &Path) -> Vec<String> {
    let (uses, impls) = read_tree(src);
    let mut wrong = Vec::new();
    for (module, used) in uses {
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
    for (module, types) in impls {
        for t in types {
            wrong.push(format!(
                "{} has an impl block of a type of {}",
                module.join("::"),
                t.join("::")
            ));
        }
    }
    wrong
}

/// A tree: what it shows, its files (path under `src/`, text), and the breaches to find.
type Fixture = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);

/// Small trees, each with one kind of breach the textual reading missed, and what must be
/// found in it.
const FIXTURES: [Fixture; 4] = [
    (
        "a brace group",
        &[
            (
                "lib.rs",
                "pub mod results;\npub mod report;\npub mod store;\n",
            ),
            ("results/mod.rs", "pub mod rows;\n"),
            (
                "results/rows.rs",
                "use crate::{report::charts, store};\npub fn f() { charts::g(); store::h(); }\n",
            ),
            ("report/mod.rs", "pub mod charts;\n"),
            ("report/charts.rs", "pub fn g() {}\n"),
            ("store/mod.rs", "pub fn h() {}\n"),
        ],
        &[
            "results::rows uses report::charts",
            "results::rows uses store",
        ],
    ),
    (
        "super::super",
        &[
            ("lib.rs", "pub mod run;\npub mod report;\n"),
            ("run/mod.rs", "pub mod backend;\n"),
            ("run/backend/mod.rs", "pub mod gtest;\n"),
            (
                "run/backend/gtest.rs",
                "pub fn f() { super::super::super::report::tables::row(); }\n",
            ),
            ("report/mod.rs", "pub mod tables;\n"),
            ("report/tables.rs", "pub fn row() {}\n"),
        ],
        &["run::backend::gtest uses report::tables"],
    ),
    (
        "a name an earlier use brought in",
        &[
            ("lib.rs", "pub mod build;\npub mod store;\n"),
            ("build/mod.rs", "pub mod stamp;\n"),
            (
                "build/stamp.rs",
                "use crate as lab;\nuse lab::store as kept;\npub fn f() { kept::publish::go(); }\n",
            ),
            ("store/mod.rs", "pub mod publish;\n"),
            ("store/publish.rs", "pub fn go() {}\n"),
        ],
        &[
            "build::stamp uses store",
            "build::stamp uses store::publish",
        ],
    ),
    (
        "an impl block in a higher stage",
        &[
            ("lib.rs", "pub mod results;\npub mod report;\n"),
            (
                "results/mod.rs",
                "pub struct Row;\npub fn f(r: &Row) { r.render(); }\n",
            ),
            (
                "report/mod.rs",
                "use crate::results::Row;\nimpl Row { pub fn render(&self) {} }\n",
            ),
        ],
        &["report has an impl block of a type of results"],
    ),
];

/// The check finds each fixture's breach (so it can fail), and nothing else in it.
#[test]
fn the_stage_check_finds_each_kind_of_breach() {
    for (what, files, expected) in FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        assert_eq!(breaches(dir.path()), *expected, "{what}");
    }
}

#[test]
fn every_stage_uses_only_the_stages_below_it() {
    let wrong = breaches(&src());
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
