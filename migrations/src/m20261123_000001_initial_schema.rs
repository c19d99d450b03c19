//! The initial schema: everything the spec names.
//!
//! Items live in one `items` table with a JSON `data` column (JSONB on PostgreSQL, JSON text on
//! SQLite), plus `item_links` for many_to_many, m2a and one_to_many links so reverse lookups and
//! batched expansion are indexed queries. See `docs/ARCHITECTURE.md` ("Item storage") for why and
//! what it costs as collections grow.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    big_integer_null, boolean, double_null, integer, integer_null, json_binary, json_binary_null,
    pk_auto, string, string_null, string_uniq, text_null, timestamp_with_time_zone,
    timestamp_with_time_zone_null,
};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Settings {
    Table,
    Key,
    Value,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    Name,
    Email,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Groups {
    Table,
    Id,
    Name,
}

#[derive(DeriveIden)]
enum GroupUsers {
    Table,
    GroupId,
    UserId,
}

#[derive(DeriveIden)]
enum Roles {
    Table,
    Id,
    Name,
    IsSystem,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Permissions {
    Table,
    Id,
    Name,
}

#[derive(DeriveIden)]
enum RolePermissions {
    Table,
    RoleId,
    PermissionId,
}

#[derive(DeriveIden)]
enum RoleGroups {
    Table,
    RoleId,
    GroupId,
}

#[derive(DeriveIden)]
enum UserRoles {
    Table,
    UserId,
    RoleId,
}

#[derive(DeriveIden)]
enum Collections {
    Table,
    Id,
    Slug,
    Name,
    IsSingleton,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Fields {
    Table,
    Id,
    CollectionId,
    Name,
    Type,
    Translatable,
    Settings,
    Sort,
}

#[derive(DeriveIden)]
enum CollectionGrants {
    Table,
    RoleId,
    CollectionId,
    CanCreate,
    CanRead,
    CanUpdate,
    CanDelete,
    Rules,
}

#[derive(DeriveIden)]
enum FileGrants {
    Table,
    RoleId,
    CanCreate,
    CanRead,
    CanReadPrivate,
    CanUpdate,
    CanDelete,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
    Name,
    KeyId,
    Digest,
    RoleId,
    IpAllowlist,
    ExpiresAt,
    RevokedAt,
    LastUsedAt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Items {
    Table,
    Id,
    CollectionId,
    Data,
    CreatedAt,
    UpdatedAt,
    DeletedAt,
    UserCreatedId,
    UserUpdatedId,
}

#[derive(DeriveIden)]
enum ItemRevisions {
    Table,
    Id,
    ItemId,
    Data,
    UserId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ItemLinks {
    Table,
    Id,
    ItemId,
    FieldId,
    Position,
    RelatedCollectionId,
    RelatedItemId,
    Meta,
}

#[derive(DeriveIden)]
enum Files {
    Table,
    Id,
    ParentId,
    Type,
    Access,
    Filename,
    Title,
    Description,
    Location,
    DownloadName,
    MimeType,
    Extension,
    Filesize,
    Width,
    Height,
    FocalPointX,
    FocalPointY,
    ContentHash,
    StorageKey,
    CreatedAt,
    UpdatedAt,
    DeletedAt,
}

#[derive(DeriveIden)]
enum FileTransforms {
    Table,
    Id,
    FileId,
    ContentHash,
    Key,
    StorageKey,
    MimeType,
    Filesize,
    Width,
    Height,
    CreatedAt,
}

fn fk(
    name: &str,
    from: (impl IntoIden, impl IntoIden),
    to: (impl IntoIden, impl IntoIden),
    on_delete: ForeignKeyAction,
) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .name(name)
        .from(from.0, from.1)
        .to(to.0, to.1)
        .on_delete(on_delete)
        .take()
}

/// A many-to-many link table: two integer columns forming the primary key, each a foreign key
/// to its parent's `id` that cascades on delete.
fn link_table(
    table: impl IntoIden,
    left: (impl IntoIden, impl IntoIden, &str),
    right: (impl IntoIden, impl IntoIden, &str),
) -> TableCreateStatement {
    let table = table.into_iden();
    let (l_col, r_col) = (left.0.into_iden(), right.0.into_iden());
    Table::create()
        .table(table.clone())
        .if_not_exists()
        .col(integer(l_col.clone()))
        .col(integer(r_col.clone()))
        .primary_key(Index::create().col(l_col.clone()).col(r_col.clone()))
        .foreign_key(&mut fk(
            left.2,
            (table.clone(), l_col),
            (left.1, Alias::new("id")),
            ForeignKeyAction::Cascade,
        ))
        .foreign_key(&mut fk(
            right.2,
            (table, r_col),
            (right.1, Alias::new("id")),
            ForeignKeyAction::Cascade,
        ))
        .take()
}

fn index(name: &str, table: impl IntoIden, cols: &[&str], unique: bool) -> IndexCreateStatement {
    let mut stmt = Index::create()
        .name(name)
        .table(table)
        .if_not_exists()
        .take();
    for col in cols {
        stmt.col(Alias::new(*col));
    }
    if unique {
        stmt.unique();
    }
    stmt
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    #[allow(clippy::too_many_lines)]
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        use ForeignKeyAction::{Cascade, SetNull};

        m.create_table(
            Table::create()
                .table(Settings::Table)
                .if_not_exists()
                .col(string(Settings::Key).primary_key())
                .col(json_binary(Settings::Value))
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Users::Table)
                .if_not_exists()
                .col(pk_auto(Users::Id))
                .col(string(Users::Name))
                .col(string_null(Users::Email).unique_key())
                .col(timestamp_with_time_zone(Users::CreatedAt))
                .col(timestamp_with_time_zone(Users::UpdatedAt))
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Groups::Table)
                .if_not_exists()
                .col(pk_auto(Groups::Id))
                .col(string_uniq(Groups::Name))
                .take(),
        )
        .await?;

        m.create_table(link_table(
            GroupUsers::Table,
            (GroupUsers::GroupId, Groups::Table, "fk_group_users_group"),
            (GroupUsers::UserId, Users::Table, "fk_group_users_user"),
        ))
        .await?;

        m.create_table(
            Table::create()
                .table(Roles::Table)
                .if_not_exists()
                .col(pk_auto(Roles::Id))
                .col(string_uniq(Roles::Name))
                .col(boolean(Roles::IsSystem).default(false))
                .col(timestamp_with_time_zone(Roles::CreatedAt))
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Permissions::Table)
                .if_not_exists()
                .col(pk_auto(Permissions::Id))
                .col(string_uniq(Permissions::Name))
                .take(),
        )
        .await?;

        m.create_table(link_table(
            RolePermissions::Table,
            (
                RolePermissions::RoleId,
                Roles::Table,
                "fk_role_permissions_role",
            ),
            (
                RolePermissions::PermissionId,
                Permissions::Table,
                "fk_role_permissions_permission",
            ),
        ))
        .await?;

        m.create_table(link_table(
            RoleGroups::Table,
            (RoleGroups::RoleId, Roles::Table, "fk_role_groups_role"),
            (RoleGroups::GroupId, Groups::Table, "fk_role_groups_group"),
        ))
        .await?;

        m.create_table(link_table(
            UserRoles::Table,
            (UserRoles::UserId, Users::Table, "fk_user_roles_user"),
            (UserRoles::RoleId, Roles::Table, "fk_user_roles_role"),
        ))
        .await?;

        m.create_table(
            Table::create()
                .table(Collections::Table)
                .if_not_exists()
                .col(pk_auto(Collections::Id))
                .col(string_uniq(Collections::Slug))
                .col(string(Collections::Name))
                .col(boolean(Collections::IsSingleton).default(false))
                .col(timestamp_with_time_zone(Collections::CreatedAt))
                .col(timestamp_with_time_zone(Collections::UpdatedAt))
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Fields::Table)
                .if_not_exists()
                .col(pk_auto(Fields::Id))
                .col(integer(Fields::CollectionId))
                .col(string(Fields::Name))
                .col(string(Fields::Type))
                .col(boolean(Fields::Translatable).default(false))
                .col(json_binary(Fields::Settings))
                .col(integer(Fields::Sort).default(0))
                .foreign_key(&mut fk(
                    "fk_fields_collection",
                    (Fields::Table, Fields::CollectionId),
                    (Collections::Table, Collections::Id),
                    Cascade,
                ))
                .take(),
        )
        .await?;
        m.create_index(index(
            "ux_fields_collection_name",
            Fields::Table,
            &["collection_id", "name"],
            true,
        ))
        .await?;

        m.create_table(
            Table::create()
                .table(CollectionGrants::Table)
                .if_not_exists()
                .col(integer(CollectionGrants::RoleId))
                .col(integer(CollectionGrants::CollectionId))
                .col(boolean(CollectionGrants::CanCreate).default(false))
                .col(boolean(CollectionGrants::CanRead).default(false))
                .col(boolean(CollectionGrants::CanUpdate).default(false))
                .col(boolean(CollectionGrants::CanDelete).default(false))
                .col(json_binary_null(CollectionGrants::Rules))
                .primary_key(
                    Index::create()
                        .col(CollectionGrants::RoleId)
                        .col(CollectionGrants::CollectionId),
                )
                .foreign_key(&mut fk(
                    "fk_collection_grants_role",
                    (CollectionGrants::Table, CollectionGrants::RoleId),
                    (Roles::Table, Roles::Id),
                    Cascade,
                ))
                .foreign_key(&mut fk(
                    "fk_collection_grants_collection",
                    (CollectionGrants::Table, CollectionGrants::CollectionId),
                    (Collections::Table, Collections::Id),
                    Cascade,
                ))
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(FileGrants::Table)
                .if_not_exists()
                .col(integer(FileGrants::RoleId).primary_key())
                .col(boolean(FileGrants::CanCreate).default(false))
                .col(boolean(FileGrants::CanRead).default(false))
                .col(boolean(FileGrants::CanReadPrivate).default(false))
                .col(boolean(FileGrants::CanUpdate).default(false))
                .col(boolean(FileGrants::CanDelete).default(false))
                .foreign_key(&mut fk(
                    "fk_file_grants_role",
                    (FileGrants::Table, FileGrants::RoleId),
                    (Roles::Table, Roles::Id),
                    Cascade,
                ))
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(ApiKeys::Table)
                .if_not_exists()
                .col(pk_auto(ApiKeys::Id))
                .col(string_uniq(ApiKeys::Name))
                // The public lookup id: one indexed lookup per request, never a scan.
                .col(string_uniq(ApiKeys::KeyId))
                // SHA-256 of the secret, hex; the secret itself is never stored.
                .col(string(ApiKeys::Digest))
                .col(integer(ApiKeys::RoleId))
                .col(json_binary(ApiKeys::IpAllowlist))
                .col(timestamp_with_time_zone_null(ApiKeys::ExpiresAt))
                .col(timestamp_with_time_zone_null(ApiKeys::RevokedAt))
                .col(timestamp_with_time_zone_null(ApiKeys::LastUsedAt))
                .col(timestamp_with_time_zone(ApiKeys::CreatedAt))
                .foreign_key(&mut fk(
                    "fk_api_keys_role",
                    (ApiKeys::Table, ApiKeys::RoleId),
                    (Roles::Table, Roles::Id),
                    Cascade,
                ))
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Items::Table)
                .if_not_exists()
                .col(pk_auto(Items::Id))
                .col(integer(Items::CollectionId))
                .col(json_binary(Items::Data))
                .col(timestamp_with_time_zone_null(Items::CreatedAt))
                .col(timestamp_with_time_zone_null(Items::UpdatedAt))
                .col(timestamp_with_time_zone_null(Items::DeletedAt))
                .col(integer_null(Items::UserCreatedId))
                .col(integer_null(Items::UserUpdatedId))
                .foreign_key(&mut fk(
                    "fk_items_collection",
                    (Items::Table, Items::CollectionId),
                    (Collections::Table, Collections::Id),
                    Cascade,
                ))
                .foreign_key(&mut fk(
                    "fk_items_user_created",
                    (Items::Table, Items::UserCreatedId),
                    (Users::Table, Users::Id),
                    SetNull,
                ))
                .foreign_key(&mut fk(
                    "fk_items_user_updated",
                    (Items::Table, Items::UserUpdatedId),
                    (Users::Table, Users::Id),
                    SetNull,
                ))
                .take(),
        )
        .await?;
        // Lists page through one collection's live items in id order.
        m.create_index(index(
            "ix_items_collection_live",
            Items::Table,
            &["collection_id", "deleted_at", "id"],
            false,
        ))
        .await?;

        m.create_table(
            Table::create()
                .table(ItemRevisions::Table)
                .if_not_exists()
                .col(pk_auto(ItemRevisions::Id))
                .col(integer(ItemRevisions::ItemId))
                .col(json_binary(ItemRevisions::Data))
                .col(integer_null(ItemRevisions::UserId))
                .col(timestamp_with_time_zone(ItemRevisions::CreatedAt))
                .foreign_key(&mut fk(
                    "fk_item_revisions_item",
                    (ItemRevisions::Table, ItemRevisions::ItemId),
                    (Items::Table, Items::Id),
                    Cascade,
                ))
                .foreign_key(&mut fk(
                    "fk_item_revisions_user",
                    (ItemRevisions::Table, ItemRevisions::UserId),
                    (Users::Table, Users::Id),
                    SetNull,
                ))
                .take(),
        )
        .await?;
        m.create_index(index(
            "ix_item_revisions_item",
            ItemRevisions::Table,
            &["item_id", "id"],
            false,
        ))
        .await?;

        m.create_table(
            Table::create()
                .table(ItemLinks::Table)
                .if_not_exists()
                .col(pk_auto(ItemLinks::Id))
                .col(integer(ItemLinks::ItemId))
                .col(integer(ItemLinks::FieldId))
                .col(integer(ItemLinks::Position))
                .col(integer(ItemLinks::RelatedCollectionId))
                .col(integer(ItemLinks::RelatedItemId))
                .col(json_binary_null(ItemLinks::Meta))
                .foreign_key(&mut fk(
                    "fk_item_links_item",
                    (ItemLinks::Table, ItemLinks::ItemId),
                    (Items::Table, Items::Id),
                    Cascade,
                ))
                .foreign_key(&mut fk(
                    "fk_item_links_field",
                    (ItemLinks::Table, ItemLinks::FieldId),
                    (Fields::Table, Fields::Id),
                    Cascade,
                ))
                .take(),
        )
        .await?;
        m.create_index(index(
            "ix_item_links_item_field",
            ItemLinks::Table,
            &["item_id", "field_id", "position"],
            false,
        ))
        .await?;
        m.create_index(index(
            "ix_item_links_related",
            ItemLinks::Table,
            &["related_collection_id", "related_item_id"],
            false,
        ))
        .await?;

        m.create_table(
            Table::create()
                .table(Files::Table)
                .if_not_exists()
                .col(pk_auto(Files::Id))
                .col(integer_null(Files::ParentId))
                .col(string(Files::Type))
                .col(string_null(Files::Access))
                .col(string(Files::Filename))
                .col(string_null(Files::Title))
                .col(text_null(Files::Description))
                .col(string_null(Files::Location))
                .col(string_null(Files::DownloadName))
                .col(string_null(Files::MimeType))
                .col(string_null(Files::Extension))
                .col(big_integer_null(Files::Filesize))
                .col(integer_null(Files::Width))
                .col(integer_null(Files::Height))
                .col(double_null(Files::FocalPointX))
                .col(double_null(Files::FocalPointY))
                .col(string_null(Files::ContentHash))
                .col(string_null(Files::StorageKey))
                .col(timestamp_with_time_zone_null(Files::CreatedAt))
                .col(timestamp_with_time_zone_null(Files::UpdatedAt))
                .col(timestamp_with_time_zone_null(Files::DeletedAt))
                .foreign_key(&mut fk(
                    "fk_files_parent",
                    (Files::Table, Files::ParentId),
                    (Files::Table, Files::Id),
                    Cascade,
                ))
                .take(),
        )
        .await?;
        m.create_index(index(
            "ix_files_parent",
            Files::Table,
            &["parent_id", "deleted_at", "id"],
            false,
        ))
        .await?;

        m.create_table(
            Table::create()
                .table(FileTransforms::Table)
                .if_not_exists()
                .col(pk_auto(FileTransforms::Id))
                .col(integer(FileTransforms::FileId))
                .col(string(FileTransforms::ContentHash))
                .col(string(FileTransforms::Key))
                .col(string(FileTransforms::StorageKey))
                .col(string(FileTransforms::MimeType))
                .col(big_integer_null(FileTransforms::Filesize))
                .col(integer_null(FileTransforms::Width))
                .col(integer_null(FileTransforms::Height))
                .col(timestamp_with_time_zone(FileTransforms::CreatedAt))
                .foreign_key(&mut fk(
                    "fk_file_transforms_file",
                    (FileTransforms::Table, FileTransforms::FileId),
                    (Files::Table, Files::Id),
                    Cascade,
                ))
                .take(),
        )
        .await?;
        m.create_index(index(
            "ux_file_transforms_hash_key",
            FileTransforms::Table,
            &["content_hash", "key"],
            true,
        ))
        .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // Children before parents, so foreign keys never block a drop.
        let tables: [DynIden; 19] = [
            FileTransforms::Table.into_iden(),
            Files::Table.into_iden(),
            ItemLinks::Table.into_iden(),
            ItemRevisions::Table.into_iden(),
            Items::Table.into_iden(),
            ApiKeys::Table.into_iden(),
            FileGrants::Table.into_iden(),
            CollectionGrants::Table.into_iden(),
            Fields::Table.into_iden(),
            Collections::Table.into_iden(),
            UserRoles::Table.into_iden(),
            RoleGroups::Table.into_iden(),
            RolePermissions::Table.into_iden(),
            Permissions::Table.into_iden(),
            Roles::Table.into_iden(),
            GroupUsers::Table.into_iden(),
            Groups::Table.into_iden(),
            Users::Table.into_iden(),
            Settings::Table.into_iden(),
        ];
        for table in tables {
            m.drop_table(Table::drop().table(table).if_exists().take())
                .await?;
        }
        Ok(())
    }
}
