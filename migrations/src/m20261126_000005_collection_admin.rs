//! What the admin app keeps per collection beside its fields (issue 18): the display field and
//! display template that label an item in pickers and lists, the list columns an editor chose,
//! and the form layout. All four are optional; a collection without them labels items by id,
//! lists its first fields and lays its form out in field order.
//!
//! SQLite adds one column per `ALTER TABLE`, so each column is its own statement on both backends.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{json_binary_null, string_null};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Collections {
    Table,
    DisplayField,
    DisplayTemplate,
    ListColumns,
    FormLayout,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            string_null(Collections::DisplayField),
            string_null(Collections::DisplayTemplate),
            json_binary_null(Collections::ListColumns),
            json_binary_null(Collections::FormLayout),
        ] {
            let mut column = column;
            m.alter_table(
                Table::alter()
                    .table(Collections::Table)
                    .add_column(&mut column)
                    .take(),
            )
            .await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            Collections::DisplayField,
            Collections::DisplayTemplate,
            Collections::ListColumns,
            Collections::FormLayout,
        ] {
            m.alter_table(
                Table::alter()
                    .table(Collections::Table)
                    .drop_column(column)
                    .take(),
            )
            .await?;
        }
        Ok(())
    }
}
