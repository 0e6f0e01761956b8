//! The galloc lab harness: builds programs per variant and measures them.
