//! Realtime fan-out over PostgreSQL (issue 20), for replicas that share PostgreSQL but no Redis.
//!
//! `realtime_events` holds each broadcast for a minute: `NOTIFY` carries only the row's id (its
//! payload is capped near 8,000 bytes, and an event may be larger), and every replica reads the
//! event by that id. `realtime_nodes` is each replica's lease (renewed every few seconds); the
//! presence members a replica holds are its rows of `realtime_presence`, one per channel and
//! user with the number of that user's sockets on the replica, so a replica that dies without
//! cleaning up is found by its expired lease and its members are removed by the others.
//!
//! SQLite gets the tables too (one schema for both backends) but never uses them: a single
//! process fans out in memory.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_pk_auto, integer, string, text, timestamp_with_time_zone};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum RealtimeEvents {
    Table,
    Id,
    Body,
    CreatedAt,
}

#[derive(DeriveIden)]
enum RealtimeNodes {
    Table,
    Node,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum RealtimePresence {
    Table,
    Node,
    Channel,
    UserId,
    Sockets,
    UserInfo,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(RealtimeEvents::Table)
                .if_not_exists()
                .col(big_pk_auto(RealtimeEvents::Id))
                .col(text(RealtimeEvents::Body))
                .col(timestamp_with_time_zone(RealtimeEvents::CreatedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("realtime_events_created_at")
                .table(RealtimeEvents::Table)
                .col(RealtimeEvents::CreatedAt)
                .if_not_exists()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(RealtimeNodes::Table)
                .if_not_exists()
                .col(string(RealtimeNodes::Node).primary_key())
                .col(timestamp_with_time_zone(RealtimeNodes::ExpiresAt))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(RealtimePresence::Table)
                .if_not_exists()
                .col(string(RealtimePresence::Node))
                .col(string(RealtimePresence::Channel))
                .col(string(RealtimePresence::UserId))
                .col(integer(RealtimePresence::Sockets))
                .col(text(RealtimePresence::UserInfo))
                .primary_key(
                    Index::create()
                        .col(RealtimePresence::Node)
                        .col(RealtimePresence::Channel)
                        .col(RealtimePresence::UserId),
                )
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("realtime_presence_channel_user")
                .table(RealtimePresence::Table)
                .col(RealtimePresence::Channel)
                .col(RealtimePresence::UserId)
                .if_not_exists()
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            RealtimePresence::Table.into_iden(),
            RealtimeNodes::Table.into_iden(),
            RealtimeEvents::Table.into_iden(),
        ] {
            m.drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}
