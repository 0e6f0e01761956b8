//! The same re-exports as Gear's `galloc::prelude`, so code written against it builds here.

extern crate alloc;

pub use alloc::{
    borrow::ToOwned,
    boxed::Box,
    collections::VecDeque,
    format,
    str::FromStr,
    string::{String, ToString},
    vec,
    vec::Vec,
};
