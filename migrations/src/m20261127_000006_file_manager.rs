//! The admin file manager (issue 29): per-file alt text and custom fields, tags, per-user
//! favorites, and the indexes that keep browsing a folder of many thousands of files cheap.
//!
//! - `files.alt_text` (text) and `files.custom_fields` (JSON object, JSONB where the backend has
//!   it, as the other JSON columns): metadata the public FileResource does not carry.
//! - `file_tags (file_id, tag)`: a file's tags, one row each; the primary key makes adding a tag
//!   twice a no-op, and `(tag, file_id)` serves the tag filter and the tag counts.
//! - `file_favorites (user_id, file_id, created_at)`: per user; the primary key serves both the
//!   favorites view and the per-page "is it a favorite" lookup.
//! - `ix_files_parent_name (parent_id, filename)`: a folder's entries in name order;
//!   `ix_files_deleted (deleted_at)`: the trash view; `ix_files_mime (mime_type)`: the MIME family
//!   filter over the whole tree.
//!
//! Both new tables cascade on the file's (and the user's) delete, so a force delete or an
//! account removal leaves nothing behind. SQLite adds one column per `ALTER TABLE`, so each
//! column is its own statement on both backends.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    integer, json_binary_null, string, text_null, timestamp_with_time_zone,
};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Files {
    Table,
    Id,
    AltText,
    CustomFields,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum FileTags {
    Table,
    FileId,
    Tag,
}

#[derive(DeriveIden)]
enum FileFavorites {
    Table,
    UserId,
    FileId,
    CreatedAt,
}

fn index(name: &str, table: impl IntoIden, cols: &[&str]) -> IndexCreateStatement {
    let mut stmt = Index::create()
        .name(name)
        .table(table)
        .if_not_exists()
        .take();
    for col in cols {
        stmt.col(Alias::new(*col));
    }
    stmt
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            text_null(Files::AltText),
            json_binary_null(Files::CustomFields),
        ] {
            let mut column = column;
            m.alter_table(
                Table::alter()
                    .table(Files::Table)
                    .add_column(&mut column)
                    .take(),
            )
            .await?;
        }

        m.create_table(
            Table::create()
                .table(FileTags::Table)
                .if_not_exists()
                .col(integer(FileTags::FileId))
                .col(string(FileTags::Tag))
                .primary_key(Index::create().col(FileTags::FileId).col(FileTags::Tag))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_file_tags_file")
                        .from(FileTags::Table, FileTags::FileId)
                        .to(Files::Table, Files::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        m.create_index(index(
            "ix_file_tags_tag",
            FileTags::Table,
            &["tag", "file_id"],
        ))
        .await?;

        m.create_table(
            Table::create()
                .table(FileFavorites::Table)
                .if_not_exists()
                .col(integer(FileFavorites::UserId))
                .col(integer(FileFavorites::FileId))
                .col(timestamp_with_time_zone(FileFavorites::CreatedAt))
                .primary_key(
                    Index::create()
                        .col(FileFavorites::UserId)
                        .col(FileFavorites::FileId),
                )
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_file_favorites_user")
                        .from(FileFavorites::Table, FileFavorites::UserId)
                        .to(Users::Table, Users::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_file_favorites_file")
                        .from(FileFavorites::Table, FileFavorites::FileId)
                        .to(Files::Table, Files::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        // The file side of the cascade: without it, deleting a file row scans every favorite.
        m.create_index(index(
            "ix_file_favorites_file",
            FileFavorites::Table,
            &["file_id"],
        ))
        .await?;

        m.create_index(index(
            "ix_files_parent_name",
            Files::Table,
            &["parent_id", "filename"],
        ))
        .await?;
        m.create_index(index("ix_files_deleted", Files::Table, &["deleted_at"]))
            .await?;
        m.create_index(index("ix_files_mime", Files::Table, &["mime_type"]))
            .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for name in ["ix_files_mime", "ix_files_deleted", "ix_files_parent_name"] {
            m.drop_index(Index::drop().name(name).table(Files::Table).to_owned())
                .await?;
        }
        m.drop_table(Table::drop().table(FileFavorites::Table).take())
            .await?;
        m.drop_table(Table::drop().table(FileTags::Table).take())
            .await?;
        for column in [Files::CustomFields, Files::AltText] {
            m.alter_table(
                Table::alter()
                    .table(Files::Table)
                    .drop_column(column)
                    .take(),
            )
            .await?;
        }
        Ok(())
    }
}
