//! The paths that need no node: they must say what is missing and exit non-zero.

use std::process::Command;

fn lab_node(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lab-node"))
        .args(args)
        .output()
        .expect("lab-node runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn without_a_node_it_says_what_to_pass_and_where_to_get_one() {
    let (code, stdout, stderr) = lab_node(&[]);
    assert_eq!(code, Some(2));
    assert_eq!(stdout, "");
    for needed in [
        "--node ws://",
        "--node-bin PATH",
        "get.gear.rs",
        "Measuring on a real node",
    ] {
        assert!(stderr.contains(needed), "missing `{needed}` in: {stderr}");
    }
}

#[test]
fn a_node_binary_that_does_not_exist_is_named() {
    let (code, stdout, stderr) = lab_node(&["--node-bin", "/nonexistent/gear"]);
    assert_eq!(code, Some(1));
    assert_eq!(stdout, "", "no `ready` line without a node");
    assert!(
        stderr.contains("--node-bin /nonexistent/gear: no such file"),
        "{stderr}"
    );
}

#[test]
fn an_address_with_no_node_behind_it_is_a_connection_error() {
    // Port 1 on the loopback: nothing listens there.
    let (code, stdout, stderr) = lab_node(&["--node", "ws://127.0.0.1:1"]);
    assert_eq!(code, Some(1));
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("cannot connect to a Gear node at ws://127.0.0.1:1"),
        "{stderr}"
    );
}

#[test]
fn both_a_node_and_a_binary_is_refused() {
    let (code, _, stderr) = lab_node(&["--node", "ws://127.0.0.1:9944", "--node-bin", "gear"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}
