//! Passkeys (issue 19): WebAuthn credentials of admin users, and the state of the WebAuthn
//! ceremonies in progress when sessions live in the database.
//!
//! `passkeys.user_handle` is the WebAuthn user id the authenticator stores with a discoverable
//! credential (a random UUID per user, the same for all of a user's passkeys): a usernameless
//! sign-in hands it back, and it names the user without revealing the row id. `credential` is
//! webauthn-rs's serialized `Passkey` (public key, counter, flags), replaced after each use.
//!
//! `webauthn_ceremonies` holds a started registration or sign-in until it is finished (once) or
//! expires (five minutes); with Redis the same state lives there instead.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    integer, pk_auto, string, text, timestamp_with_time_zone, timestamp_with_time_zone_null,
};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Passkeys {
    Table,
    Id,
    UserId,
    UserHandle,
    CredentialId,
    Name,
    Credential,
    CreatedAt,
    LastUsedAt,
}

#[derive(DeriveIden)]
enum WebauthnCeremonies {
    Table,
    Id,
    State,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Passkeys::Table)
                .if_not_exists()
                .col(pk_auto(Passkeys::Id))
                .col(integer(Passkeys::UserId))
                .col(string(Passkeys::UserHandle))
                .col(string(Passkeys::CredentialId).unique_key())
                .col(string(Passkeys::Name))
                .col(text(Passkeys::Credential))
                .col(timestamp_with_time_zone(Passkeys::CreatedAt))
                .col(timestamp_with_time_zone_null(Passkeys::LastUsedAt))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_passkeys_user")
                        .from(Passkeys::Table, Passkeys::UserId)
                        .to(Users::Table, Users::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        for (name, col) in [
            ("ix_passkeys_user", Passkeys::UserId),
            ("ix_passkeys_user_handle", Passkeys::UserHandle),
        ] {
            m.create_index(
                Index::create()
                    .name(name)
                    .table(Passkeys::Table)
                    .if_not_exists()
                    .col(col)
                    .take(),
            )
            .await?;
        }
        m.create_table(
            Table::create()
                .table(WebauthnCeremonies::Table)
                .if_not_exists()
                .col(string(WebauthnCeremonies::Id).primary_key())
                .col(text(WebauthnCeremonies::State))
                .col(timestamp_with_time_zone(WebauthnCeremonies::ExpiresAt))
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ix_webauthn_ceremonies_expires")
                .table(WebauthnCeremonies::Table)
                .if_not_exists()
                .col(WebauthnCeremonies::ExpiresAt)
                .take(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            Passkeys::Table.into_iden(),
            WebauthnCeremonies::Table.into_iden(),
        ] {
            m.drop_table(Table::drop().table(table).if_exists().take())
                .await?;
        }
        Ok(())
    }
}
