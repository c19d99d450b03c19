//! The domain crate's property and rule tests.
//!
//! One test binary for the crate (one link, one process), a module per subject.

mod fuzz_blocks;
mod fuzz_values;
mod properties;
mod rules;
mod value_shapes;
