//! Several replicas over Redis (`VELLUM_REDIS_URL`): envelopes on one pub/sub channel, presence
//! counts in hashes changed by Lua scripts (one atomic step each, so two tabs on two replicas
//! never both count as a user's first), and a lease per node in a sorted set.
//!
//! Keys, under the backend's namespace: `rt:events:{app key}` (the pub/sub channel: pub/sub
//! ignores database numbers, so deployments sharing a Redis server are told apart by key), `rt:presence:{channel}`
//! (user → sockets on every node), `rt:members:{channel}` (user → `user_info`),
//! `rt:node:{node}` (`channel\nuser` → this node's sockets), `rt:nodes` (node → lease expiry,
//! in Redis's own clock).
//!
//! Redis is not required for serving: when it is down, sockets stay up and local delivery goes
//! on; the subscriber reconnects with a back-off and re-subscribes, and the next heartbeat
//! rewrites this node's presence counts from its sockets (the outage may have outlived its
//! lease).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_redis::redis::{self, Value};
use futures_util::StreamExt as _;

use super::presence::{Member, PresenceChanges, PresenceStore};
use super::transport::{Envelope, Transport, backoff};
use super::{Hub, RealtimeError};
use crate::cache::RedisBackend;
use crate::cache::redis::RedisError;

/// Envelopes for the other replicas, over Redis pub/sub.
#[derive(Debug)]
pub(crate) struct RedisTransport {
    backend: Arc<RedisBackend>,
    channel: String,
    up: AtomicBool,
}

impl RedisTransport {
    /// Pub/sub ignores Redis database numbers: the channel is named by the app key too, so
    /// deployments sharing a Redis server (on different databases) never hear each other.
    pub(crate) fn new(backend: Arc<RedisBackend>, app_key: &str) -> Self {
        let channel = backend.key(&format!("rt:events:{app_key}"));
        Self {
            backend,
            channel,
            up: AtomicBool::new(false),
        }
    }

    async fn receive(self: Arc<Self>, hub: Weak<Hub>) {
        let mut attempt = 0u32;
        loop {
            if hub.strong_count() == 0 {
                return;
            }
            match self.backend.subscribe(&self.channel).await {
                Ok(mut messages) => {
                    self.up.store(true, Ordering::Release);
                    if attempt > 0 {
                        tracing::info!("realtime: redis pub/sub is back; fan-out resumes");
                    }
                    attempt = 0;
                    while let Some(message) = messages.next().await {
                        let Some(hub) = hub.upgrade() else { return };
                        match serde_json::from_slice::<Envelope>(message.get_payload_bytes()) {
                            Ok(envelope) => hub.receive(envelope).await,
                            Err(err) => tracing::warn!(%err, "realtime: unreadable envelope"),
                        }
                    }
                    self.up.store(false, Ordering::Release);
                    tracing::warn!("realtime: redis pub/sub connection lost; reconnecting");
                }
                Err(err) => {
                    self.up.store(false, Ordering::Release);
                    if attempt == 0 {
                        tracing::warn!(error = %crate::error_chain(&err), "realtime: cannot subscribe to redis; retrying");
                    }
                }
            }
            tokio::time::sleep(backoff(attempt)).await;
            attempt = attempt.saturating_add(1);
        }
    }
}

#[async_trait]
impl Transport for RedisTransport {
    fn name(&self) -> &'static str {
        "redis"
    }

    async fn publish(&self, envelope: &Envelope) -> Result<(), RealtimeError> {
        let body = serde_json::to_vec(envelope).map_err(RealtimeError::Encode)?;
        let channel = self.channel.clone();
        self.backend
            .command(|mut conn| async move {
                redis::cmd("PUBLISH")
                    .arg(channel)
                    .arg(body)
                    .query_async::<i64>(&mut conn)
                    .await
                    .map_err(RedisError::Command)
            })
            .await
            .map_err(RealtimeError::Redis)?;
        Ok(())
    }

    fn start(self: Arc<Self>, hub: Weak<Hub>) {
        tokio::spawn(self.receive(hub));
    }

    fn healthy(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }
}

const JOIN: &str = r"
redis.call('HINCRBY', KEYS[3], ARGV[3], ARGV[4])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[4])
";

const LEAVE: &str = r"
local held = tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '0')
if held <= 0 then return -1 end
if held == 1 then redis.call('HDEL', KEYS[3], ARGV[2]) else redis.call('HINCRBY', KEYS[3], ARGV[2], -1) end
local total = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if total <= 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
  return 0
end
return total
";

/// Renews the lease (answering whether it was new) and reaps every expired node, answering the
/// `channel\nuser` pairs left with no socket. ARGV: prefix, node, lease in ms.
const HEARTBEAT: &str = r"
local prefix = ARGV[1]
local nodes = prefix .. 'nodes'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local new = redis.call('ZADD', nodes, now + tonumber(ARGV[3]), ARGV[2])
local gone = {}
for _, node in ipairs(redis.call('ZRANGEBYSCORE', nodes, '-inf', now)) do
  local nodekey = prefix .. 'node:' .. node
  local fields = redis.call('HGETALL', nodekey)
  for i = 1, #fields, 2 do
    local f = fields[i]
    local sep = string.find(f, '\n', 1, true)
    if sep then
      local ch = string.sub(f, 1, sep - 1)
      local user = string.sub(f, sep + 1)
      local pkey = prefix .. 'presence:' .. ch
      if redis.call('HINCRBY', pkey, user, -tonumber(fields[i + 1])) <= 0 then
        redis.call('HDEL', pkey, user)
        redis.call('HDEL', prefix .. 'members:' .. ch, user)
        table.insert(gone, f)
      end
    end
  end
  redis.call('DEL', nodekey)
  redis.call('ZREM', nodes, node)
end
return {new, gone}
";

/// Replaces this node's counts by the given ones (after an outage, or at a graceful stop with
/// none), answering the pairs that appeared and those that left. ARGV: prefix, node, then
/// triples of `channel\nuser`, sockets, `user_info`.
const SYNC: &str = r"
local prefix = ARGV[1]
local nodekey = prefix .. 'node:' .. ARGV[2]
local function split(f)
  local sep = string.find(f, '\n', 1, true)
  return string.sub(f, 1, sep - 1), string.sub(f, sep + 1)
end
local function total(f)
  local ch, user = split(f)
  return tonumber(redis.call('HGET', prefix .. 'presence:' .. ch, user) or '0')
end
local old = redis.call('HGETALL', nodekey)
local touched, before = {}, {}
for i = 1, #old, 2 do touched[old[i]] = true end
for i = 3, #ARGV, 3 do touched[ARGV[i]] = true end
for f, _ in pairs(touched) do before[f] = total(f) end
for i = 1, #old, 2 do
  local ch, user = split(old[i])
  redis.call('HINCRBY', prefix .. 'presence:' .. ch, user, -tonumber(old[i + 1]))
end
redis.call('DEL', nodekey)
for i = 3, #ARGV, 3 do
  local ch, user = split(ARGV[i])
  redis.call('HINCRBY', nodekey, ARGV[i], ARGV[i + 1])
  redis.call('HINCRBY', prefix .. 'presence:' .. ch, user, ARGV[i + 1])
  redis.call('HSET', prefix .. 'members:' .. ch, user, ARGV[i + 2])
end
local added, removed = {}, {}
for f, _ in pairs(touched) do
  local after = total(f)
  local ch, user = split(f)
  if after <= 0 then
    redis.call('HDEL', prefix .. 'presence:' .. ch, user)
    redis.call('HDEL', prefix .. 'members:' .. ch, user)
  end
  if before[f] <= 0 and after > 0 then table.insert(added, f) end
  if before[f] > 0 and after <= 0 then table.insert(removed, f) end
end
return {added, removed}
";

/// Presence counts in Redis.
#[derive(Debug)]
pub(crate) struct RedisPresence {
    backend: Arc<RedisBackend>,
    prefix: String,
    node: String,
    lease: Duration,
    /// The last heartbeat failed: the next one that succeeds rewrites this node's counts.
    stale: AtomicBool,
}

impl RedisPresence {
    pub(crate) fn new(backend: Arc<RedisBackend>, node: &str, lease: Duration) -> Self {
        let prefix = format!("{}rt:", backend.namespace());
        Self {
            backend,
            prefix,
            node: node.to_owned(),
            lease,
            stale: AtomicBool::new(true),
        }
    }

    fn field(channel: &str, user: &str) -> String {
        format!("{channel}\n{user}")
    }

    async fn eval(
        &self,
        script: &'static str,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> Result<Value, RealtimeError> {
        self.backend
            .command(|mut conn| async move {
                let mut cmd = redis::cmd("EVAL");
                cmd.arg(script).arg(keys.len());
                for key in keys {
                    cmd.arg(key);
                }
                for arg in args {
                    cmd.arg(arg);
                }
                cmd.query_async::<Value>(&mut conn)
                    .await
                    .map_err(RedisError::Command)
            })
            .await
            .map_err(RealtimeError::Redis)
    }

    fn keys(&self, channel: &str) -> Vec<String> {
        vec![
            format!("{}presence:{channel}", self.prefix),
            format!("{}members:{channel}", self.prefix),
            format!("{}node:{}", self.prefix, self.node),
        ]
    }

    async fn sync(&self, held: &[(String, Member, i32)]) -> Result<PresenceChanges, RealtimeError> {
        let mut args = vec![self.prefix.clone(), self.node.clone()];
        for (channel, member, sockets) in held {
            args.push(Self::field(channel, &member.user_id));
            args.push(sockets.to_string());
            args.push(member.user_info.to_string());
        }
        let reply = self.eval(SYNC, Vec::new(), args).await?;
        let (added, removed) = two_lists(&reply);
        let added = added
            .into_iter()
            .filter_map(|field| {
                let (channel, user) = split_field(&field)?;
                held.iter()
                    .find(|(c, m, _)| *c == channel && m.user_id == user)
                    .map(|(c, m, _)| (c.clone(), m.clone()))
            })
            .collect();
        let removed = removed.iter().filter_map(|f| split_field(f)).collect();
        Ok(PresenceChanges { added, removed })
    }
}

/// `channel\nuser` back into its parts.
fn split_field(field: &str) -> Option<(String, String)> {
    field
        .split_once('\n')
        .map(|(channel, user)| (channel.to_owned(), user.to_owned()))
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .filter_map(|item| redis::from_redis_value_ref::<String>(item).ok())
            .collect(),
        _ => Vec::new(),
    }
}

fn two_lists(value: &Value) -> (Vec<String>, Vec<String>) {
    match value {
        Value::Array(items) => {
            let mut items = items.iter();
            let first = items.next().map(strings).unwrap_or_default();
            let second = items.next().map(strings).unwrap_or_default();
            (first, second)
        }
        _ => (Vec::new(), Vec::new()),
    }
}

fn integer(value: &Value) -> i64 {
    redis::from_redis_value_ref::<i64>(value).unwrap_or(0)
}

#[async_trait]
impl PresenceStore for RedisPresence {
    async fn join(&self, channel: &str, member: &Member) -> Result<bool, RealtimeError> {
        let args = vec![
            member.user_id.clone(),
            member.user_info.to_string(),
            Self::field(channel, &member.user_id),
            "1".to_owned(),
        ];
        Ok(integer(&self.eval(JOIN, self.keys(channel), args).await?) == 1)
    }

    async fn leave(&self, channel: &str, user_id: &str) -> Result<bool, RealtimeError> {
        let args = vec![user_id.to_owned(), Self::field(channel, user_id)];
        Ok(integer(&self.eval(LEAVE, self.keys(channel), args).await?) == 0)
    }

    async fn members(&self, channel: &str) -> Result<Vec<Member>, RealtimeError> {
        let key = format!("{}members:{channel}", self.prefix);
        let pairs: std::collections::HashMap<String, String> = self
            .backend
            .command(|mut conn| async move {
                redis::cmd("HGETALL")
                    .arg(key)
                    .query_async(&mut conn)
                    .await
                    .map_err(RedisError::Command)
            })
            .await
            .map_err(RealtimeError::Redis)?;
        let mut members: Vec<Member> = pairs
            .into_iter()
            .map(|(user_id, info)| Member {
                user_id,
                user_info: serde_json::from_str(&info).unwrap_or_default(),
            })
            .collect();
        members.sort_by(|a, b| a.user_id.cmp(&b.user_id));
        Ok(members)
    }

    async fn heartbeat(
        &self,
        held: &[(String, Member, i32)],
    ) -> Result<PresenceChanges, RealtimeError> {
        let lease = u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX);
        let args = vec![self.prefix.clone(), self.node.clone(), lease.to_string()];
        let reply = match self.eval(HEARTBEAT, Vec::new(), args).await {
            Ok(reply) => reply,
            Err(err) => {
                self.stale.store(true, Ordering::Release);
                return Err(err);
            }
        };
        let new = match &reply {
            Value::Array(items) => items.first().is_some_and(|v| integer(v) == 1),
            _ => false,
        };
        let gone = match &reply {
            Value::Array(items) => items.get(1).map(strings).unwrap_or_default(),
            _ => Vec::new(),
        };
        let mut changes = PresenceChanges {
            added: Vec::new(),
            removed: gone.iter().filter_map(|f| split_field(f)).collect(),
        };
        if new || self.stale.swap(false, Ordering::AcqRel) {
            let synced = self.sync(held).await?;
            changes.added.extend(synced.added);
            changes.removed.extend(synced.removed);
        }
        Ok(changes)
    }

    async fn retire(&self) -> Result<PresenceChanges, RealtimeError> {
        let changes = self.sync(&[]).await?;
        let nodes = format!("{}nodes", self.prefix);
        let node = self.node.clone();
        self.backend
            .command(|mut conn| async move {
                redis::cmd("ZREM")
                    .arg(nodes)
                    .arg(node)
                    .query_async::<i64>(&mut conn)
                    .await
                    .map_err(RedisError::Command)
            })
            .await
            .map_err(RealtimeError::Redis)?;
        Ok(changes)
    }
}
