//! What the jobs page shows: a page of jobs (filtered by status), how many jobs each status
//! holds (the page's tabs), and whether the user may retry and cancel.

use crate::context::AppState;
use crate::error::AppError;
use crate::paging::Paginated;
use crate::principal::Principal;
use crate::query::{first, pairs};

use super::JobResource;

/// The jobs page's data.
#[derive(Debug, Clone)]
pub struct JobsScreen {
    pub page: Paginated<JobResource>,
    /// Every status with its number of jobs, in the queue's order (queued first).
    pub counts: Vec<(&'static str, u64)>,
    /// The status the list is filtered by (`?status=`), if any.
    pub status: Option<String>,
    /// `can-manage-jobs`: the Retry and Cancel buttons.
    pub can_manage: bool,
}

/// [`super::list`] with the counts per status and what the user may do.
///
/// # Errors
/// As [`super::list`].
pub async fn screen(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<JobsScreen, AppError> {
    let page = super::list(state, principal, query).await?;
    let stored = super::counts(state, principal).await?;
    let counts = vellum_storage::jobs::JobStatus::ALL
        .iter()
        .map(|status| {
            let n = stored
                .iter()
                .filter(|(s, _)| s == status)
                .map(|(_, n)| *n)
                .sum();
            (status.as_str(), n)
        })
        .collect();
    let status = first(&pairs(query), "status")
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    Ok(JobsScreen {
        page,
        counts,
        status,
        can_manage: principal.may("can-manage-jobs"),
    })
}
