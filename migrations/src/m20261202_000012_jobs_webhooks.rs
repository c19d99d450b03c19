//! Jobs and webhooks (issue 24).
//!
//! - `jobs`: the durable queue. `id` (a UUID) is also the delivery's idempotency key (the
//!   `webhook-id` header), so a retry of the same job carries the same id. `status` is `queued`,
//!   `running`, `failed` (waiting for its next attempt at `run_at`), `dead` (out of attempts),
//!   `done` or `cancelled`. A claim sets `locked_by` and `locked_until`; a `running` job whose
//!   lease ran out (its replica died) is claimable again. `payload` is JSON.
//! - `webhooks`: where to deliver which events, signed with `secret` (Standard Webhooks);
//!   `failures` counts consecutive failed deliveries and a webhook is disabled past a limit.
//! - `webhook_deliveries`: one row per attempt (status, response code, duration), kept to the
//!   newest few hundred per webhook.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    big_pk_auto, boolean, integer, integer_null, pk_auto, string, string_null, text, text_null,
    timestamp_with_time_zone, timestamp_with_time_zone_null,
};

#[derive(DeriveMigrationName)]
pub struct Migration;

fn name(text: &str) -> Alias {
    Alias::new(text)
}

fn index(index_name: &str, table: &str, cols: &[&str]) -> IndexCreateStatement {
    let mut stmt = Index::create()
        .name(index_name)
        .table(name(table))
        .if_not_exists()
        .take();
    for col in cols {
        stmt.col(name(col));
    }
    stmt
}

fn tables() -> Vec<TableCreateStatement> {
    vec![
        Table::create()
            .table(name("jobs"))
            .if_not_exists()
            .col(string(name("id")).primary_key())
            .col(string(name("queue")))
            .col(text(name("payload")))
            .col(string(name("status")))
            .col(integer(name("attempts")).default(0))
            .col(integer(name("max_attempts")))
            .col(timestamp_with_time_zone(name("run_at")))
            .col(string_null(name("locked_by")))
            .col(timestamp_with_time_zone_null(name("locked_until")))
            .col(text_null(name("last_error")))
            .col(timestamp_with_time_zone(name("created_at")))
            .col(timestamp_with_time_zone(name("updated_at")))
            .take(),
        Table::create()
            .table(name("webhooks"))
            .if_not_exists()
            .col(pk_auto(name("id")))
            .col(string(name("name")))
            .col(text(name("url")))
            .col(text(name("events")))
            .col(text(name("collections")))
            .col(string(name("secret")))
            .col(boolean(name("enabled")).default(true))
            .col(integer(name("failures")).default(0))
            .col(text_null(name("disabled_reason")))
            .col(timestamp_with_time_zone(name("created_at")))
            .col(timestamp_with_time_zone(name("updated_at")))
            .take(),
        Table::create()
            .table(name("webhook_deliveries"))
            .if_not_exists()
            .col(big_pk_auto(name("id")))
            .col(integer(name("webhook_id")))
            .col(string(name("job_id")))
            .col(string(name("event")))
            .col(integer(name("attempt")))
            .col(string(name("status")))
            .col(integer_null(name("response_code")))
            .col(integer(name("duration_ms")))
            .col(text_null(name("error")))
            .col(timestamp_with_time_zone(name("created_at")))
            .foreign_key(
                ForeignKey::create()
                    .name("fk_webhook_deliveries_webhook_id")
                    .from(name("webhook_deliveries"), name("webhook_id"))
                    .to(name("webhooks"), name("id"))
                    .on_delete(ForeignKeyAction::Cascade),
            )
            .take(),
    ]
}

fn indexes() -> Vec<IndexCreateStatement> {
    let mut unique_name = index("ux_webhooks_name", "webhooks", &["name"]);
    unique_name.unique();
    vec![
        // The claim: due jobs by status and time.
        index("ix_jobs_status_run_at", "jobs", &["status", "run_at"]),
        index("ix_jobs_created", "jobs", &["created_at"]),
        unique_name,
        index(
            "ix_webhook_deliveries_webhook",
            "webhook_deliveries",
            &["webhook_id", "id"],
        ),
        index(
            "ix_webhook_deliveries_job",
            "webhook_deliveries",
            &["job_id"],
        ),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in tables() {
            m.create_table(table).await?;
        }
        for index in indexes() {
            m.create_index(index).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in ["webhook_deliveries", "webhooks", "jobs"] {
            m.drop_table(Table::drop().table(name(table)).if_exists().take())
                .await?;
        }
        Ok(())
    }
}
