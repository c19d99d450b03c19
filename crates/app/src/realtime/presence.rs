//! Who is on each presence channel, counted per user across every replica: `member_added` goes
//! out on a user's first socket anywhere and `member_removed` on their last, so two tabs (or two
//! tabs on two replicas) make one member.
//!
//! [`LocalPresence`] counts in memory for a single process; the Redis and PostgreSQL stores count
//! per node and total under one atomic step, and hold a lease per node so that a replica killed
//! without cleaning up loses its members once its lease runs out ([`PresenceStore::heartbeat`]).

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::RealtimeError;

/// A presence member: `user_id` and the `user_info` the server signed (`{id, name}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub user_id: String,
    pub user_info: Json,
}

/// Where presence counts live.
#[async_trait]
pub(crate) trait PresenceStore: Send + Sync + std::fmt::Debug {
    /// One more socket of `member` on `channel`: whether it is the user's first anywhere.
    async fn join(&self, channel: &str, member: &Member) -> Result<bool, RealtimeError>;
    /// One socket of `user_id` less on `channel`: whether it was the user's last anywhere.
    async fn leave(&self, channel: &str, user_id: &str) -> Result<bool, RealtimeError>;
    /// The channel's members on every replica.
    async fn members(&self, channel: &str) -> Result<Vec<Member>, RealtimeError>;
    /// Renews this node's lease and reaps the expired leases of others: answers the
    /// (channel, user) pairs that left with them. `held` is what this node holds, restored
    /// when its own lease had been reaped (an outage longer than the lease).
    async fn heartbeat(
        &self,
        held: &[(String, Member, i32)],
    ) -> Result<PresenceChanges, RealtimeError>;
    /// Drops this node's members (a graceful stop, after its sockets closed): answers the
    /// pairs left with no socket anywhere.
    async fn retire(&self) -> Result<PresenceChanges, RealtimeError>;
}

/// Members that appeared or left outside a join or leave of this node's sockets: a dead node's
/// reaped, this node's restored after an outage.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct PresenceChanges {
    pub(crate) added: Vec<(String, Member)>,
    pub(crate) removed: Vec<(String, String)>,
}

/// A channel's members by user id: their socket count and signed member.
type Members = HashMap<String, (u32, Member)>;

/// Presence of a single process.
#[derive(Debug, Default)]
pub(crate) struct LocalPresence {
    /// channel → user → (sockets, member). A plain mutex, held for a map update only.
    channels: Mutex<HashMap<String, Members>>,
}

#[async_trait]
impl PresenceStore for LocalPresence {
    async fn join(&self, channel: &str, member: &Member) -> Result<bool, RealtimeError> {
        let mut channels = self.channels.lock().map_err(|_| RealtimeError::Poisoned)?;
        let users = channels.entry(channel.to_owned()).or_default();
        let entry = users
            .entry(member.user_id.clone())
            .or_insert_with(|| (0, member.clone()));
        entry.0 += 1;
        entry.1 = member.clone();
        Ok(entry.0 == 1)
    }

    async fn leave(&self, channel: &str, user_id: &str) -> Result<bool, RealtimeError> {
        let mut channels = self.channels.lock().map_err(|_| RealtimeError::Poisoned)?;
        let Some(users) = channels.get_mut(channel) else {
            return Ok(false);
        };
        let Some(entry) = users.get_mut(user_id) else {
            return Ok(false);
        };
        entry.0 = entry.0.saturating_sub(1);
        let last = entry.0 == 0;
        if last {
            users.remove(user_id);
            if users.is_empty() {
                channels.remove(channel);
            }
        }
        Ok(last)
    }

    async fn members(&self, channel: &str) -> Result<Vec<Member>, RealtimeError> {
        let channels = self.channels.lock().map_err(|_| RealtimeError::Poisoned)?;
        let mut members: Vec<Member> = channels
            .get(channel)
            .map(|users| users.values().map(|(_, m)| m.clone()).collect())
            .unwrap_or_default();
        members.sort_by(|a, b| a.user_id.cmp(&b.user_id));
        Ok(members)
    }

    async fn heartbeat(
        &self,
        _held: &[(String, Member, i32)],
    ) -> Result<PresenceChanges, RealtimeError> {
        Ok(PresenceChanges::default())
    }

    async fn retire(&self) -> Result<PresenceChanges, RealtimeError> {
        Ok(PresenceChanges::default())
    }
}

/// The `subscription_succeeded` data of a presence channel.
#[must_use]
pub(crate) fn roster(members: &[Member]) -> String {
    let ids: Vec<&str> = members.iter().map(|m| m.user_id.as_str()).collect();
    let hash: serde_json::Map<String, Json> = members
        .iter()
        .map(|m| (m.user_id.clone(), m.user_info.clone()))
        .collect();
    serde_json::json!({"presence": {"ids": ids, "hash": hash, "count": members.len()}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str) -> Member {
        Member {
            user_id: id.to_owned(),
            user_info: serde_json::json!({"id": id, "name": format!("User {id}")}),
        }
    }

    #[tokio::test]
    async fn counts_a_user_once_however_many_sockets() {
        let store = LocalPresence::default();
        assert!(store.join("presence-a", &member("1")).await.unwrap());
        assert!(!store.join("presence-a", &member("1")).await.unwrap());
        assert!(store.join("presence-a", &member("2")).await.unwrap());
        assert_eq!(store.members("presence-a").await.unwrap().len(), 2);
        assert!(!store.leave("presence-a", "1").await.unwrap());
        assert!(store.leave("presence-a", "1").await.unwrap());
        assert!(!store.leave("presence-a", "1").await.unwrap());
        assert_eq!(
            store.members("presence-a").await.unwrap(),
            vec![member("2")]
        );
        assert!(store.leave("presence-a", "2").await.unwrap());
        assert!(store.channels.lock().unwrap().is_empty());
    }

    #[test]
    fn the_roster_is_pusher_s_presence_shape() {
        let data: Json = serde_json::from_str(&roster(&[member("1")])).unwrap();
        assert_eq!(data["presence"]["ids"], serde_json::json!(["1"]));
        assert_eq!(data["presence"]["count"], 1);
        assert_eq!(data["presence"]["hash"]["1"]["name"], "User 1");
    }
}
