//! The admin dashboard (`GET /`): how many collections, items, files and users the project has.
//! One query of four counts, whatever the project's size in rows to return.

use serde::Serialize;
use vellum_storage::dashboard;

use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;

/// The dashboard's figures: items, files (not folders) and users that are not soft-deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dashboard {
    pub collections: u64,
    pub items: u64,
    pub files: u64,
    pub users: u64,
}

/// The dashboard.
///
/// # Errors
/// 403 without `can-show-dashboard`, the database.
pub async fn show(state: &AppState, principal: &Principal) -> Result<Dashboard, AppError> {
    principal.require("can-show-dashboard")?;
    let counts = dashboard::counts(state.db()).await?;
    Ok(Dashboard {
        collections: counts.collections,
        items: counts.items,
        files: counts.files,
        users: counts.users,
    })
}
