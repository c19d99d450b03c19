//! `item_files`: which items' file fields point at which files (issue 29). Item `data` stays the
//! source of truth; this reverse index answers "where is this file used" and lets a force delete
//! refuse while items still reference a file, without scanning every item's JSON. It is rewritten
//! in the item's write transaction wherever `item_links` are (top-level file fields and file slots
//! nested in blocks alike, keyed by the top-level field), and filled once for existing items
//! right after this migration (`vellum_storage::item_files::backfill`).
//!
//! No foreign key on `file_id`: an item may keep naming a file that was deleted (writes only
//! check the ids they add), and the index must say so rather than lose the row.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::integer;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ItemFiles {
    Table,
    ItemId,
    FieldId,
    FileId,
}

#[derive(DeriveIden)]
enum Items {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Fields {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(ItemFiles::Table)
                .if_not_exists()
                .col(integer(ItemFiles::ItemId))
                .col(integer(ItemFiles::FieldId))
                .col(integer(ItemFiles::FileId))
                .primary_key(
                    Index::create()
                        .col(ItemFiles::ItemId)
                        .col(ItemFiles::FieldId)
                        .col(ItemFiles::FileId),
                )
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_item_files_item")
                        .from(ItemFiles::Table, ItemFiles::ItemId)
                        .to(Items::Table, Items::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                // A removed field takes its rows with it, as `item_links` does.
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_item_files_field")
                        .from(ItemFiles::Table, ItemFiles::FieldId)
                        .to(Fields::Table, Fields::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ix_item_files_file")
                .table(ItemFiles::Table)
                .if_not_exists()
                .col(ItemFiles::FileId)
                .col(ItemFiles::ItemId)
                .take(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(ItemFiles::Table).if_exists().take())
            .await
    }
}
