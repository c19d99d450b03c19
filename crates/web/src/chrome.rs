//! What every signed-in page shows around its content: who is signed in and the navigation,
//! grouped as [`vellum_app::navigation`] lists the areas the user may open.

use vellum_app::navigation::{self, Area};
use vellum_app::principal::Principal;

/// The frame of a signed-in page.
#[derive(Debug, Clone)]
pub struct Chrome {
    pub user_name: String,
    pub user_email: String,
    pub groups: Vec<NavGroup>,
}

/// A heading of the navigation and its links.
#[derive(Debug, Clone)]
pub struct NavGroup {
    pub label: &'static str,
    pub links: Vec<NavLink>,
}

/// One link; `current` marks the area the page belongs to (`aria-current="page"`).
#[derive(Debug, Clone)]
pub struct NavLink {
    pub label: &'static str,
    pub href: &'static str,
    pub current: bool,
}

impl Chrome {
    /// The frame for `principal` on a page of the area `current` (an [`Area::key`]).
    #[must_use]
    pub fn new(principal: &Principal, current: &str) -> Self {
        let account = &principal.access.account;
        Self {
            user_name: account.name.clone(),
            user_email: account.email.clone().unwrap_or_default(),
            groups: group(&navigation::areas(principal), current),
        }
    }
}

impl Chrome {
    /// Whether the menu links `href`, i.e. the user may open that area.
    #[must_use]
    pub fn opens(&self, href: &str) -> bool {
        self.groups
            .iter()
            .any(|g| g.links.iter().any(|l| l.href == href))
    }
}

/// The areas under their headings, in order; a heading with no area is left out.
fn group(areas: &[Area], current: &str) -> Vec<NavGroup> {
    let mut groups: Vec<NavGroup> = Vec::new();
    for area in areas {
        let link = NavLink {
            label: area.label,
            href: area.href,
            current: area.key == current,
        };
        match groups.last_mut() {
            Some(last) if last.label == area.group => last.links.push(link),
            _ => groups.push(NavGroup {
                label: area.group,
                links: vec![link],
            }),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(key: &'static str, group: &'static str) -> Area {
        Area {
            key,
            label: key,
            href: "/",
            group,
        }
    }

    #[test]
    fn areas_are_grouped_in_order_and_the_current_one_marked() {
        let groups = group(&[area("a", "One"), area("b", "One"), area("c", "Two")], "b");
        let shape: Vec<(&str, Vec<(&str, bool)>)> = groups
            .iter()
            .map(|g| {
                (
                    g.label,
                    g.links.iter().map(|l| (l.label, l.current)).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                ("One", vec![("a", false), ("b", true)]),
                ("Two", vec![("c", false)])
            ]
        );
        assert!(group(&[], "a").is_empty());
    }
}
