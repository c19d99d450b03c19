//! The dashboard (`GET /`): the project's figures.

use askama::Template;
use vellum_app::dashboard::Dashboard;
use vellum_app::principal::Principal;

use crate::chrome::Chrome;

#[derive(Debug, Clone, Template)]
#[template(path = "dashboard.html")]
pub struct DashboardPage {
    pub chrome: Chrome,
    pub counts: Dashboard,
    pub stats: Vec<Stat>,
}

/// One figure, linked to its area when the user may open it.
#[derive(Debug, Clone)]
pub struct Stat {
    pub label: &'static str,
    pub value: u64,
    pub href: Option<&'static str>,
}

impl DashboardPage {
    #[must_use]
    pub fn new(principal: &Principal, counts: Dashboard) -> Self {
        let chrome = Chrome::new(principal, "dashboard");
        let stat = |label, value, href| Stat {
            label,
            value,
            href: chrome.opens(href).then_some(href),
        };
        let stats = vec![
            stat("Collections", counts.collections, "/collections"),
            stat("Items", counts.items, "/collections"),
            stat("Files", counts.files, "/files"),
            stat("Users", counts.users, "/users"),
        ];
        Self {
            chrome,
            counts,
            stats,
        }
    }
}
