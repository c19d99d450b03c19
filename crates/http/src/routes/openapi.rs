//! The OpenAPI 3.1 description of `/api/v1`, served at `GET /api/v1/openapi.json`; the shapes it
//! names are in [`crate::schemas`].
//!
//! Operations come from the `#[utoipa::path]` attributes on the handlers themselves (paths and
//! path parameters from their actix-web route macros), so a route cannot be added, moved or
//! removed without the description following. The response shapes below are declared as types
//! because handlers build their JSON dynamically; what keeps them honest is the black-box suite,
//! which validates every response it receives against this description
//! (`crates/http/tests/api/openapi.rs`), and schemathesis in CI.

use std::sync::OnceLock;

use actix_web::{HttpResponse, get};
use serde_json::Value;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{Components, Server};
use utoipa::{Modify, OpenApi};

#[allow(clippy::wildcard_imports)] // every component the description lists
use crate::schemas::*;

/// The description as JSON.
#[must_use]
pub fn document() -> Value {
    serde_json::to_value(ApiDoc::openapi()).unwrap_or(Value::Null)
}

/// The serialized description, built once.
fn document_bytes() -> &'static [u8] {
    static DOCUMENT: OnceLock<Vec<u8>> = OnceLock::new();
    DOCUMENT.get_or_init(|| serde_json::to_vec(&document()).unwrap_or_default())
}

/// This description (OpenAPI 3.1).
#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "openapi",
    tag = "meta",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "This OpenAPI 3.1 description", content_type = "application/json", body = Object),
        (status = 401, response = Unauthenticated),
        (status = 403, response = Forbidden),
    )
)]
#[get("/openapi.json")]
pub async fn serve() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(document_bytes())
}

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Vellum content API",
        version = "1.0.0",
        description = "The public REST API of Vellum, a headless CMS: collections, items and files, \
            authorized by the acting role's grants. Without `Authorization` the caller acts as the \
            `public` role; with `Authorization: Bearer <API key>` as the key's role.",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        serve,
        super::collections::list,
        super::collections::show,
        super::items::list,
        super::items::create,
        super::items::show,
        super::items::update,
        super::items::destroy,
        super::files::list,
        super::files::upload,
        super::files::show,
        super::files::update,
        super::files::destroy,
        super::files::content,
        super::files::transform,
        super::account::login_page,
        super::passkeys::registration_options,
        super::passkeys::store,
        super::passkeys::list,
        super::passkeys::remove,
        super::passkeys::sign_in_options,
        super::passkeys::sign_in,
        super::account::login,
        super::account::login_code,
        super::account::login_code_verify,
        super::account::logout,
        super::account::show,
        super::account::sessions,
        super::account::revoke_sessions,
        super::realtime::authorize,
        super::chat::hub,
        super::chat::show,
        super::chat::threads,
        super::chat::start,
        super::chat::unread_count,
        super::chat::options,
        super::chat::archive,
        super::chat::unarchive,
        super::chat::participants,
        super::chat::set_participants,
        super::chat::leave,
        super::chat::destroy,
        super::chat::notify,
        super::chat::item_thread,
        super::chat_messages::list,
        super::chat_messages::post,
        super::chat_messages::post_on_item,
        super::chat_messages::edit,
        super::chat_messages::destroy,
        super::chat_messages::pin,
        super::chat_messages::react,
        super::chat_messages::read,
        super::chat_messages::upload,
        super::chat_messages::download,
        super::chat_messages::start_upload,
        super::chat_messages::upload_status,
        super::chat_messages::upload_chunk,
        super::chat_messages::complete_upload,
        super::chat_messages::save,
        super::chat_messages::add_to_field,
        super::ai::home,
        super::ai::conversation_page,
        super::ai::status,
        super::ai::conversations,
        super::ai::create,
        super::ai::bulk_destroy,
        super::ai::show,
        super::ai::rename,
        super::ai::destroy,
        super::ai::pin,
        super::ai::truncate,
        super::ai::chat,
        super::ai::upload,
        super::dashboard::show,
        super::activity::list,
        super::roles::list,
        super::roles::create_page,
        super::roles::store,
        super::roles::bulk,
        super::roles::duplicate,
        super::roles::edit,
        super::roles::update,
        super::roles::destroy,
        super::permissions::list,
        super::permissions::store,
        super::permissions::sync,
        super::permissions::update,
        super::permissions::destroy,
        super::api_keys::list,
        super::api_keys::store,
        super::api_keys::revoke,
        super::webhooks::list,
        super::webhooks::store,
        super::webhooks::show,
        super::webhooks::update,
        super::webhooks::destroy,
        super::webhooks::deliveries,
        super::webhooks::replay,
        super::jobs::list,
        super::jobs::show,
        super::jobs::retry,
        super::jobs::cancel,
        super::settings::show,
        super::settings::update,
        super::users::list,
        super::users::create_form,
        super::users::create,
        super::users::show,
        super::users::edit_form,
        super::users::update,
        super::users::delete,
        super::users::restore,
        super::users::force_delete,
        super::groups::list,
        super::groups::create_form,
        super::groups::create,
        super::groups::show,
        super::groups::edit_form,
        super::groups::update,
        super::groups::delete,
        super::groups::restore,
        super::groups::force_delete,
        super::schema::list,
        super::schema::create,
        super::schema::show,
        super::schema::update,
        super::schema::destroy,
        super::schema::add_field,
        super::schema::update_field,
        super::schema::delete_field,
        super::schema::reorder_fields,
        super::schema::add_field_pack,
        super::schema::create_collection_pack,
        super::presentation::set_list_columns,
        super::presentation::set_form_layout,
        super::presentation::item_options,
        super::presentation::singleton_content,
        super::admin_items::list,
        super::admin_items::export,
        super::admin_items::new_form,
        super::admin_items::create,
        super::admin_items::bulk,
        super::admin_items::show,
        super::admin_items::update,
        super::admin_items::delete_item,
        super::admin_items::restore,
        super::admin_items::force_delete,
        super::admin_items::revisions,
        super::admin_items::restore_revision,
        super::admin_items::preview,
        super::file_admin::blobs::upload,
        super::file_admin::blobs::replace,
        super::file_admin::blobs::copy,
        super::file_admin::blobs::download,
        super::file_admin::trash::bulk,
        super::file_admin::trash::delete_file,
        super::file_admin::trash::restore,
        super::file_admin::trash::force_delete,
        super::file_admin::trash::usage,
        super::file_admin::browse::list,
        super::file_admin::browse::create_folder,
        super::file_admin::browse::list_tags,
        super::file_admin::browse::show,
        super::file_admin::browse::update,
        super::file_admin::browse::add_tags,
        super::file_admin::browse::remove_tag,
        super::file_admin::browse::favorite,
        super::file_admin::browse::unfavorite,
    ),
    components(
        schemas(
            CollectionSummary, CollectionFieldSummary, CollectionResource, MiniUser,
            CollectionItemResource, ExpandedFileField, FileFieldAccessDenied, FileFieldValue,
            FileResource, PaginationMeta, ItemWriteRequest, UpdateFileRequest, UploadFileForm,
            ErrorBody, ValidationErrorBody, CollectionList, CollectionEnvelope, ItemPage,
            ItemEnvelope, FilePage, FileEnvelope, WriteReceipt, ItemWritten, ItemWriteEnvelope,
            FileWritten, FileWriteEnvelope,
            admin::PasswordSignIn, admin::CodeRequest, admin::CodeSignIn, admin::Account,
            admin::AccountEnvelope, admin::SignInMethods, admin::SignInMethodList, admin::PasskeyItem, admin::PasskeyEnvelope, admin::PasskeyList, admin::Ceremony, admin::CeremonyEnvelope, admin::PasskeyRegistration, admin::PasskeySignIn, admin::Message, admin::Session, admin::SessionList,
            admin::RevokedCount, admin::Revoked, admin::ChannelAuthRequest, admin::ChannelAuth,
            crate::schemas::jobs::Job, crate::schemas::jobs::JobPage, crate::schemas::jobs::JobEnvelope,
            crate::schemas::jobs::Webhook, crate::schemas::jobs::WebhookList, crate::schemas::jobs::WebhookEnvelope,
            crate::schemas::jobs::WebhookInput, crate::schemas::jobs::Delivery, crate::schemas::jobs::DeliveryPage,
            crate::schemas::jobs::Replayed, crate::schemas::jobs::ReplayedEnvelope,
            access::CollectionGrant, access::FileGrants, access::RoleSummary, access::RolePage,
            access::Role, access::RoleEnvelope, access::PermissionOption, access::CollectionOption,
            access::RoleForm, access::RoleFormEnvelope, access::RoleEdit, access::RoleEditEnvelope,
            access::RoleWrite, access::RoleDuplicate, access::RoleBulkAction,
            access::RoleBulkResult, access::RoleBulkEnvelope, access::Permission,
            access::PermissionList, access::PermissionEnvelope, access::PermissionWrite,
            access::PermissionSync, access::PermissionSyncResult, access::PermissionSyncEnvelope,
            access::ApiKey, access::ApiKeyPage, access::CreatedApiKey,
            access::CreatedApiKeyEnvelope, access::NewApiKey, access::ProjectSettings,
            access::ProjectSettingsEnvelope, access::ProjectSettingsUpdate, access::Dashboard,
            access::DashboardEnvelope, access::ActivityUser, access::Activity,
            access::ActivityPage,
            users::GroupRef, users::UserResource, users::UserEnvelope, users::UserPage,
            users::UserForm, users::UserFormEnvelope, users::UserEdit, users::UserEditEnvelope,
            users::CreateUserRequest, users::UpdateUserRequest, users::GroupMember,
            users::GroupResource, users::GroupEnvelope, users::GroupPage, users::GroupForm,
            users::GroupFormEnvelope, users::GroupEdit, users::GroupEditEnvelope,
            users::CreateGroupRequest, users::UpdateGroupRequest,
            schema_admin::FieldDefinition, schema_admin::CollectionDefinition,
            schema_admin::CollectionDefinitionEnvelope, schema_admin::CollectionOverview,
            schema_admin::CollectionOverviewList, schema_admin::FieldWrite,
            schema_admin::CreateCollectionRequest, schema_admin::UpdateCollectionRequest,
            schema_admin::UpdateFieldRequest, schema_admin::FieldOrderRequest,
            schema_admin::ValueChanges, schema_admin::ValueChangesEnvelope,
            schema_admin::FieldChange, schema_admin::FieldChangeEnvelope,
            schema_admin::FieldPackResult, schema_admin::FieldPackEnvelope,
            schema_admin::CollectionPackRequest, schema_admin::CollectionPackResult,
            schema_admin::CollectionPackEnvelope,
            presentation::ListColumnsRequest, presentation::ListColumns,
            presentation::ListColumnsEnvelope, presentation::FormSection,
            presentation::FormLayoutRequest, presentation::FormLayout,
            presentation::FormLayoutEnvelope, presentation::ItemOption,
            presentation::ItemOptionPage,
            admin_items::FormLocales, admin_items::ItemForm, admin_items::ItemFormEnvelope,
            admin_items::AdminItemMeta, admin_items::AdminItemEnvelope,
            admin_items::AdminItemWritten, admin_items::BulkItemsRequest,
            admin_items::BulkItemFailure, admin_items::BulkItemsResult,
            admin_items::BulkItemsEnvelope, admin_items::ItemRevision,
            admin_items::ItemRevisionPage, admin_items::PolicyDecision,
            admin_items::PreviewItemFilter, admin_items::DowngradedExpansion,
            admin_items::PreviewExplanation, admin_items::ItemPreview,
            admin_items::ItemPreviewEnvelope,
            file_admin_blobs::UploadFilesForm, file_admin_blobs::ReplaceFileForm,
            file_admin_blobs::CopyFileRequest, file_admin_blobs::UploadedFilesEnvelope,
            file_admin_trash::FileBulkRequest, file_admin_trash::FileBulkFailure,
            file_admin_trash::FileBulkResult, file_admin_trash::FileBulkEnvelope,
            file_admin_trash::FileItemRef, file_admin_trash::FileInUseBody,
            file_admin_trash::FileUsageItem, file_admin_trash::FileUsageGroup,
            file_admin_trash::FileUsage, file_admin_trash::FileUsageEnvelope,
            file_admin_browse::AdminFileResource, file_admin_browse::AdminFileEnvelope,
            file_admin_browse::AdminFilePage, file_admin_browse::CreateFolderRequest,
            file_admin_browse::UpdateAdminFileRequest, file_admin_browse::AddFileTagsRequest,
            file_admin_browse::FileTag, file_admin_browse::FileTagList,
            chat::ChatPerson, chat::ChatMember, chat::ChatCollectionRef, chat::ChatItemRef,
            chat::ChatThread, chat::ChatThreadEnvelope, chat::ChatThreadPage, chat::ChatReaction,
            chat::ChatAttachment, chat::ChatAttachmentEnvelope, chat::ChatReply,
            chat::ChatMentions, chat::ChatMessage, chat::ChatMessageEnvelope,
            chat::ChatMessagePage, chat::ChatThreadView, chat::ChatThreadViewEnvelope,
            chat::ChatItemThreadEnvelope, chat::ChatUnread, chat::ChatUnreadEnvelope,
            chat::ChatHub, chat::ChatHubEnvelope, chat::ChatOption, chat::ChatFileField,
            chat::ChatOptionPage, chat::StartChatThread, chat::PostChatMessage,
            chat::EditChatMessage, chat::ToggleChatReaction, chat::ChatReactionOutcome,
            chat::ChatReactionOutcomeEnvelope, chat::MarkChatRead, chat::ChatReadMark,
            chat::ChatReadMarkEnvelope, chat::SetChatParticipants, chat::ChatParticipants,
            chat::ChatParticipantsEnvelope, chat::ChatNotifyRequest, chat::ChatNotify,
            chat::ChatNotifyEnvelope, chat::StartChatUpload, chat::ChatUpload,
            chat::ChatUploadEnvelope, chat::ChatAttachmentForm, chat::SaveChatAttachment,
            chat::AddChatAttachmentToField, chat::AddedToField, chat::AddedToFieldEnvelope,
            ai::AiConversation, ai::AiConversationEnvelope, ai::AiConversationPage,
            ai::AiAttachmentRef, ai::AiMessage, ai::AiConversationShown,
            ai::AiConversationShownEnvelope, ai::AiHome, ai::AiStatus,
            ai::CreateAiConversation, ai::RenameAiConversation, ai::TruncateAiConversation,
            ai::AiDeletedCount, ai::AiDeleted, ai::BulkDestroyAiConversations, ai::AiChatRequest, ai::AiChatEvent,
            ai::AiAttachmentForm, ai::AiAttachment, ai::AiAttachmentEnvelope,
        ),
        responses(
            Unauthenticated, Forbidden, NotFound, Invalid, ItemInvalid, TooLarge, BodyTimeout,
            Unavailable, admin::TooManyRequests, admin::CrossSite,
            file_admin_trash::FileInUse, ai::AiUnavailable, ai::AiThrottled,
        ),
    ),
    modifiers(&Security),
    tags(
        (name = "collections", description = "Collection schemas the role may read"),
        (name = "items", description = "Items of a collection"),
        (name = "files", description = "Files, folders, content and image transforms"),
        (name = "meta", description = "This description"),
        (name = "admin: jobs", description = "Admin app: the durable job queue (webhook deliveries): look, retry, cancel"),
        (name = "admin: webhooks", description = "Admin app: outbound webhooks, their delivery log and replay"),
        (name = "admin: account", description = "Admin app: sign-in, sessions and the signed-in account (paths relative to the site root, session cookie)"),
        (name = "admin: realtime", description = "Admin app: signing a socket's subscription to a private or presence channel (the WebSocket itself, `GET /app/{key}?protocol=7`, speaks the Pusher protocol; see docs/realtime.md)"),
        (name = "admin: ai", description = "Admin app: AI chat (gated by `can-use-ai` and a verified email): the user's own conversations, short-lived text attachments (csv, txt, xlsx, pdf), and prompts whose answers stream as server-sent events from the configured OpenAI-compatible provider; the model reads content only through tools that run with the user's permissions (see docs/ai.md)"),
        (name = "admin: chat", description = "Admin app: team chat (gated by `can-show-chat`): item threads (access follows the item's read) and direct conversations (their members only), messages with replies, pins, reactions and mentions, read state, archive, participants, attachments (single and chunked, resumable), pickers; events travel on `presence-chat.{id}` and `private-App.Models.User.{id}` (see docs/chat.md)"),
        (name = "admin: dashboard", description = "Admin app: the dashboard's counts"),
        (name = "admin: roles", description = "Admin app: roles, their admin permissions and both matrices (`{role}` is the role's id)"),
        (name = "admin: permissions", description = "Admin app: the admin permission rows, limited to the catalog"),
        (name = "admin: API keys", description = "Admin app: API keys (the secret is shown once, on create)"),
        (name = "admin: settings", description = "Admin app: the project settings"),
        (name = "admin: activity log", description = "Admin app: who changed what, when (changed keys, never values of secrets)"),
        (name = "admin: users", description = "Admin app: users, their roles and groups, soft delete, restore and force delete (site root, session cookie)"),
        (name = "admin: groups", description = "Admin app: groups, their members and roles, soft delete, restore and force delete (site root, session cookie)"),
        (name = "admin: collections", description = "Admin app: the schema editor (collections, fields, field order, field packs and collection packs; changes that touch stored values answer a dry run unless `?confirm=true`), a collection's list columns and form layout, the relation picker's options and the singleton upsert (site root, session cookie)"),
        (name = "admin: items", description = "Admin app: a collection's items above roles (gated by the `can-*-collections` permissions): list and trash, export, create, update, soft delete, restore, force delete, bulk actions, revisions, preview as a role"),
        (name = "admin: files", description = "Admin app: the file manager above the files matrix (gated by the `can-*-files` permissions): browse, folders, metadata, tags, favorites, upload of many files, replace, copy, download, soft delete, restore, force delete, where used, bulk actions"),
    )
)]
pub struct ApiDoc;

/// The bearer scheme (API keys) and the server prefix every path is relative to.
#[derive(Debug)]
struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Components::new);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                Http::builder()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API key secret (`ek_…`), created with `vellum-admin keys create`.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "vellum_session",
                "The admin app's session cookie, set by `POST /login`.",
            ))),
        );
        // One server, the site root: the public API's paths are keyed with their `/api/v1`
        // prefix and the admin app's without one, so `GET /api/v1/collections` and the admin
        // app's `GET /collections` are two operations (relative to `/api/v1`, they would share
        // the key `/collections`).
        openapi.servers = Some(vec![Server::new("/")]);
        name_head_operations(openapi);
    }
}

/// `#[route(…, method = "GET", method = "HEAD")]` documents both methods with one operation id;
/// ids must be unique, so the HEAD is `<id>Head`.
fn name_head_operations(openapi: &mut utoipa::openapi::OpenApi) {
    for item in openapi.paths.paths.values_mut() {
        if let Some(head) = item.head.as_mut() {
            if let Some(id) = head.operation_id.as_mut() {
                id.push_str("Head");
            }
            head.summary = Some("The GET's status and headers, without the body".to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_is_openapi_3_1_with_every_operation() {
        let doc = document();
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(doc["info"]["version"], "1.0.0");
        assert_eq!(doc["servers"][0]["url"], "/");
        // A path item holds its operations by method.
        let methods = [
            "get", "put", "post", "delete", "options", "head", "patch", "trace",
        ];
        let operations: Vec<&Value> = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|p| p.as_object().unwrap().iter())
            .filter(|(key, _)| methods.contains(&key.as_str()))
            .map(|(_, op)| op)
            .collect();
        // 60 before issue 18; + HEAD of file content and transforms, + 4 presentation routes,
        // + 11 schema routes, + 13 item routes; issue 29's file manager: + 9 browse, folder,
        // metadata, tag and favorite routes, + 5 upload, replace, copy and download (GET and
        // HEAD), + 5 delete, restore, force delete, usage and bulk; issue 21's team chat: + 14
        // thread routes, + 17 message and attachment routes (download GET and HEAD); issue 22's
        // AI chat: + 13; issue 24: + 7 webhook routes, + 4 job routes.
        assert_eq!(operations.len(), 172);
        assert_eq!(
            doc["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
        let mut ids: Vec<&str> = operations
            .iter()
            .map(|op| op["operationId"].as_str().unwrap())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(
            ids.len(),
            operations.len(),
            "operation ids must be unique: {ids:?}"
        );
        let union = &doc["components"]["schemas"]["FileFieldValue"]["oneOf"];
        assert_eq!(union.as_array().unwrap().len(), 5, "{union}");
    }
}
