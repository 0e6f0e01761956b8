//! Where the gas goes, rendered: a variant's change against shipping split by what Gear charges
//! ([`crate::analyse::anatomy`]), for `lab verdict`, the ship table and the case pages.

use crate::analyse::anatomy::{Fates, Lifetimes, Part, Points, PARTS};

/// The header of an anatomy table whose first column is `first`: one column per part, then the
/// expected change the parts sum to.
pub fn header(first: &str) -> String {
    let names: Vec<&str> = Part::ALL.iter().map(|p| p.name()).collect();
    format!(
        "| {first} | {} | change |\n| --- |{} ---: |\n",
        names.join(" | "),
        " ---: |".repeat(PARTS)
    )
}

/// One row: `label`, each part in points, and the change they sum to.
pub fn row(label: &str, parts: &[f64; PARTS], change: f64) -> String {
    let cells: Vec<String> = parts.iter().map(|p| format!("{p:+.2}")).collect();
    format!("| {label} | {} | {change:+.2} % |\n", cells.join(" | "))
}

/// `variant` against `reference`: a row per program (mean over its layouts), then the row over
/// every program (the mean of theirs), each summing to its expected change.
pub fn table(variant: &str, reference: &str, points: &Points) -> String {
    let mut out = header(&format!("{variant} vs {reference}: program"));
    for p in &points.programs {
        let (parts, change) = p.points();
        out += &row(&format!("`{}`", p.program), &parts, change);
    }
    out += &row(
        &format!("**every program** ({} deployments)", points.deployments),
        &points.parts,
        points.expected_pct,
    );
    out
}

/// What a table's figures are, in one paragraph: the unit and how the parts are measured.
pub const LEGEND: &str = "Points: 1 % of the reference's gas at the same deployment, \
    averaged as the ship rule averages (each program's mean over its layouts, then the mean \
    over programs), scaled so that a row sums to its expected change. Measured at every layout \
    both gtest and the fuel meter ran: code (gear-core's schedule on each build), page charges \
    and held runs (the fuel meter's counts at gear-core's weights), program instructions (the \
    plain build's fuel less the allocator's); the allocator's instructions are its fuel at the \
    linker's layout (the probe runs there) times its measured price per unit of fuel, taken \
    for every layout. The rest is what gtest charged beyond every named part: syscalls and \
    fixed charges, the same on every variant of a program.";

/// One line saying where a variant's change comes from: its largest parts by size, each with
/// its sign, e.g. "pages −3.1 (writes after read −3.4, first writes +1.6), code −0.6".
pub fn sentence(points: &Points) -> String {
    let mut parts: Vec<(Part, f64)> = Part::ALL
        .iter()
        .map(|p| (*p, points.part(*p)))
        .filter(|(_, x)| x.abs() >= 0.05)
        .collect();
    parts.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    if parts.is_empty() {
        return "no part moves by 0.05 points or more".to_owned();
    }
    parts
        .iter()
        .take(3)
        .map(|(p, x)| format!("{} {x:+.2}", p.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `variant`'s pages against `reference`'s by what the messages did with them, per program: the
/// mean difference per layout of the pages written first, read and then written, written at
/// all, only read, and loaded ([`Fates`]), summed over the program's messages.
pub fn fates_table(variant: &str, reference: &str, rows: &[(&str, Fates, usize)]) -> String {
    let mut out = format!(
        "| {variant} − {reference}: program | layouts | written first | read, then written | \
         written at all | only read | loaded |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    );
    for (program, f, n) in rows {
        out += &format!(
            "| `{program}` | {n} | {:+.1} | {:+.1} | {:+.1} | {:+.1} | {:+.1} |\n",
            f.written_first,
            f.read_then_written,
            f.written(),
            f.only_read,
            f.loaded
        );
    }
    out
}

/// Per program, the pages each variant's blocks are on by their lifetimes ([`Lifetimes`]),
/// summed over the messages of its trace at the linker's layout: `rows` holds, per program,
/// each variant's figures in the order of `variants`.
pub fn lifetimes_table(variants: &[&str], rows: &[(&str, Vec<Lifetimes>)]) -> String {
    let mut out = String::from(
        "| program | variant | messages | pages with temporaries | of them with nothing else | \
         pages with kept blocks | pages with old blocks |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (program, figures) in rows {
        for (variant, l) in variants.iter().zip(figures) {
            out += &format!(
                "| `{program}` | `{variant}` | {} | {} | {} | {} | {} |\n",
                l.messages, l.temporary, l.temporary_only, l.kept, l.old
            );
        }
    }
    out
}
