//! The layout sweep's builds: a case's plain build re-linked with its static data moved up by
//! each offset of the plan ([`crate::run::plan`] names the offsets; `relink` moves the statics).

use crate::build::artifact::{build, Artifact, BuildRequest, PostProcess};
use crate::build::workspace::Workspace;
use anyhow::Result;

/// The plain build of `package` for `variant` re-linked at each nonzero offset.
pub fn builds(
    ws: &Workspace,
    base: BuildRequest<'_>,
    offsets: &[u32],
    log: impl Fn(&str),
) -> Result<Vec<(u32, Artifact)>> {
    offsets
        .iter()
        .filter(|o| **o > 0)
        .map(|&layout_offset| {
            let req = BuildRequest {
                probe: false,
                post: PostProcess::Gear,
                layout_pad: 0,
                layout_offset,
                ..base
            };
            log(&format!("building {} for {}", req.package, req.config()));
            Ok((layout_offset, build(ws, req)?))
        })
        .collect()
}
