//! Handlers, one module per resource group of the spec.

pub mod collections;
pub mod health;
pub mod items;
