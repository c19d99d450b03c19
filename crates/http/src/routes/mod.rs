//! Handlers, one module per resource group of the spec.

pub mod account;
pub mod activity;
pub mod admin_items;
pub mod api_keys;
pub mod collections;
pub mod dashboard;
pub mod file_admin;
pub mod file_pages;
pub mod files;
pub mod groups;
pub mod health;
pub mod item_pages;
pub mod items;
pub mod openapi;
pub mod passkeys;
pub mod people_pages;
pub mod permissions;
pub mod presentation;
pub mod realtime;
pub mod role_pages;
pub mod roles;
pub mod schema;
pub mod schema_pages;
pub mod settings;
pub mod settings_pages;
pub mod users;
