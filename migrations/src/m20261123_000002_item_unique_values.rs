//! `unique` fields, enforced by the database: every value a `unique` field holds in a live item is
//! claimed by one row here, and a unique index makes a second claim fail inside the writer's
//! transaction. A check-then-insert in application code would race between two writers; this
//! cannot.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{integer, pk_auto, string};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ItemUniqueValues {
    Table,
    Id,
    CollectionId,
    Field,
    Locale,
    ValueKey,
    ItemId,
}

#[derive(DeriveIden)]
enum Items {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(ItemUniqueValues::Table)
                .if_not_exists()
                .col(pk_auto(ItemUniqueValues::Id))
                .col(integer(ItemUniqueValues::CollectionId))
                .col(string(ItemUniqueValues::Field))
                // '' for fields that are not translatable: NULLs never collide in a unique index.
                .col(string(ItemUniqueValues::Locale))
                // SHA-256 of the value's canonical JSON: fixed width whatever the value's size.
                .col(string(ItemUniqueValues::ValueKey))
                .col(integer(ItemUniqueValues::ItemId))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_item_unique_values_item")
                        .from(ItemUniqueValues::Table, ItemUniqueValues::ItemId)
                        .to(Items::Table, Items::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ux_item_unique_values_claim")
                .table(ItemUniqueValues::Table)
                .if_not_exists()
                .col(ItemUniqueValues::CollectionId)
                .col(ItemUniqueValues::Field)
                .col(ItemUniqueValues::Locale)
                .col(ItemUniqueValues::ValueKey)
                .unique()
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ix_item_unique_values_item")
                .table(ItemUniqueValues::Table)
                .if_not_exists()
                .col(ItemUniqueValues::ItemId)
                .take(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(
            Table::drop()
                .table(ItemUniqueValues::Table)
                .if_exists()
                .take(),
        )
        .await
    }
}
