//! The font every chart is drawn with: DejaVu Sans 2.37 as the `dejavu` crate carries it,
//! compiled into the lab, so a chart is the same pixels on any system and nothing has to be
//! installed for it (a system font differs by distribution: Debian's build of the same release
//! has other bytes). Registered with plotters once, and named with its hash among what the
//! charts are made from.

use super::FONT;
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use sha2::Digest;

/// The font's bytes.
fn bytes() -> &'static [u8] {
    dejavu::sans::regular()
}

/// The font the charts are drawn with (its name and SHA-256): part of what the charts are made
/// from.
pub fn font_identity() -> String {
    format!(
        "DejaVu Sans 2.37 (the dejavu crate) {}",
        crate::results::hex(&sha2::Sha256::digest(bytes()))
    )
}

/// Registers DejaVu Sans with plotters (once per process).
pub(crate) fn load_font() -> Result<()> {
    static LOADED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    LOADED
        .get_or_init(|| {
            // The charts ask for no other weight; bold is the same face, as it always was.
            for style in [FontStyle::Normal, FontStyle::Bold] {
                plotters::style::register_font(FONT, style, bytes())
                    .map_err(|_| "DejaVu Sans is not a font plotters reads".to_owned())?;
            }
            Ok(())
        })
        .clone()
        .map_err(|e| anyhow!(e))
}

#[cfg(test)]
mod tests {
    /// The font is there with nothing installed, and it is DejaVu Sans: its name table says so.
    #[test]
    fn the_charts_font_comes_with_the_lab() {
        let bytes = super::bytes();
        assert!(bytes.len() > 100_000, "{} bytes", bytes.len());
        assert!(
            bytes.windows(11).any(|w| w == b"DejaVu Sans"),
            "not DejaVu Sans"
        );
        super::load_font().unwrap();
        assert!(super::font_identity().starts_with("DejaVu Sans 2.37 (the dejavu crate) "));
    }
}
