//! Handlers, one module per resource group of the spec.

pub mod account;
pub mod collections;
pub mod files;
pub mod groups;
pub mod health;
pub mod items;
pub mod openapi;
pub mod users;
