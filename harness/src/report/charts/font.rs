//! The font every chart is drawn with: found on the system (Debian's `fonts-dejavu-core`,
//! which `just setup` installs), registered with plotters once, and named with its hash among
//! what the charts are made from.

use super::FONT;
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use sha2::Digest;
use std::path::PathBuf;

/// Where the fonts are looked for (Debian's `fonts-dejavu-core`, which `just setup` installs).
const FONT_PATHS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];
/// The font the charts are drawn with (its path and SHA-256), or what is missing: part of what
/// the charts are made from.
pub fn font_identity() -> String {
    FONT_PATHS
        .iter()
        .find_map(|p| {
            let bytes = std::fs::read(p).ok()?;
            Some(format!(
                "{p} {}",
                crate::results::hex(&sha2::Sha256::digest(&bytes))
            ))
        })
        .unwrap_or_else(|| "no font".into())
}

/// Registers the system's DejaVu Sans with plotters (once per process).
pub(crate) fn load_font() -> Result<()> {
    static LOADED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    LOADED
        .get_or_init(|| {
            let path = FONT_PATHS
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    format!(
                        "no DejaVu Sans font (looked at {}); run `just setup`, which installs \
                         Debian's fonts-dejavu-core",
                        FONT_PATHS.join(", ")
                    )
                })?;
            let bytes =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            // plotters keeps fonts for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            for style in [FontStyle::Normal, FontStyle::Bold] {
                plotters::style::register_font(FONT, style, bytes)
                    .map_err(|_| format!("{} is not a font plotters reads", path.display()))?;
            }
            Ok(())
        })
        .clone()
        .map_err(|e| anyhow!(e))
}
