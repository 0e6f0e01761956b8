//! The `lab` command refuses bad arguments with a message that names the fix.

use std::process::Command;

fn lab(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run lab");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn unknown_variant_case_and_backend_are_named() {
    let (ok, err) = lab(&["measure", "--variants", "no-buffer,tiny"]);
    assert!(!ok);
    assert!(
        err.contains("unknown variant `tiny`; known variants: shipping,"),
        "{err}"
    );

    let (ok, err) = lab(&["measure", "--cases", "nft,erc20"]);
    assert!(!ok);
    assert!(
        err.contains("unknown case `erc20`; known cases: nft, nft-stress,"),
        "{err}"
    );

    let (ok, err) = lab(&["measure", "--backends", "node"]);
    assert!(!ok);
    assert!(
        err.contains("unknown backend `node`; available here: wasmtime, gtest"),
        "{err}"
    );
}

#[test]
fn outside_the_workspace_the_fix_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["sizes"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not inside the galloc lab workspace") && err.contains("--workspace"),
        "{err}"
    );
}
