//! The shapes of the admin app's users and groups routes (`/users…`, `/groups…`) in the OpenAPI
//! description, checked against every response by the black-box suite.

use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::PaginationMeta;

/// Query parameters of the users and groups lists.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AdminListParams {
    /// 1-based page.
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
    /// Entries whose name (users: or email) contains this text, in any case.
    #[param(max_length = 255, nullable = false)]
    pub search: Option<String>,
    /// `with`: deleted entries too; `only`: deleted entries only. Without it: not deleted.
    #[param(nullable = false, pattern = "^(with|only)$")]
    pub trashed: Option<String>,
}

/// A group as a user's memberships show it.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupRef {
    pub id: i64,
    pub name: String,
}

/// A user (never its password).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UserResource {
    pub id: i64,
    pub name: String,
    #[schema(required = true)]
    pub email: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub email_verified_at: Option<String>,
    /// Set while the user is soft-deleted (it cannot sign in).
    #[schema(required = true, format = DateTime)]
    pub deleted_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// The roles held directly (not through groups).
    pub roles: Vec<String>,
    /// Every group the user is a member of.
    pub groups: Vec<GroupRef>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UserEnvelope {
    pub data: UserResource,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UserPage {
    pub data: Vec<UserResource>,
    pub meta: PaginationMeta,
}

/// What the user forms offer: every role but `public`, and the groups that are not deleted
/// (each at most 1000).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UserForm {
    pub roles: Vec<String>,
    pub groups: Vec<GroupRef>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UserFormEnvelope {
    pub data: UserForm,
}

/// The edit form: the user and what the create form offers.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UserEdit {
    pub user: UserResource,
    pub roles: Vec<String>,
    pub groups: Vec<GroupRef>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UserEditEnvelope {
    pub data: UserEdit,
}

/// `POST /users`.
#[derive(Debug, ToSchema, Serialize)]
pub struct CreateUserRequest {
    #[schema(max_length = 255)]
    pub name: String,
    /// Unique in any case.
    #[schema(max_length = 254)]
    pub email: String,
    /// 8 to 256 characters; absent, null or empty: the account signs in by mailed code only.
    #[schema(max_length = 256)]
    pub password: Option<String>,
    /// Role names held directly; `public` is not assignable.
    #[schema(max_items = 1000)]
    pub roles: Option<Vec<String>>,
    #[schema(max_items = 1000)]
    pub group_ids: Option<Vec<i64>>,
    /// Whether the email counts as verified (default false).
    pub email_verified: Option<bool>,
}

/// `PUT /users/{user}`: every field optional; `roles` and `group_ids` replace.
#[derive(Debug, ToSchema, Serialize)]
pub struct UpdateUserRequest {
    #[schema(max_length = 255)]
    pub name: Option<String>,
    #[schema(max_length = 254)]
    pub email: Option<String>,
    /// A new password (8 to 256 characters) ends the user's other sessions; absent, null or
    /// empty: unchanged.
    #[schema(max_length = 256)]
    pub password: Option<String>,
    #[schema(max_items = 1000)]
    pub roles: Option<Vec<String>>,
    #[schema(max_items = 1000)]
    pub group_ids: Option<Vec<i64>>,
    pub email_verified: Option<bool>,
}

/// A member as a group shows it.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupMember {
    pub id: i64,
    pub name: String,
    #[schema(required = true)]
    pub email: Option<String>,
}

/// A group.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupResource {
    pub id: i64,
    pub name: String,
    /// Set while the group is soft-deleted (its members do not hold its roles).
    #[schema(required = true, format = DateTime)]
    pub deleted_at: Option<String>,
    pub roles: Vec<String>,
    /// The first 100 members by id.
    #[schema(max_items = 100)]
    pub users: Vec<GroupMember>,
    /// Every member.
    #[schema(minimum = 0)]
    pub users_count: i64,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupEnvelope {
    pub data: GroupResource,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupPage {
    pub data: Vec<GroupResource>,
    pub meta: PaginationMeta,
}

/// What the group forms offer: every role but `public`, and the users that are not deleted
/// (each at most 1000).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupForm {
    pub roles: Vec<String>,
    pub users: Vec<GroupMember>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupFormEnvelope {
    pub data: GroupForm,
}

/// The edit form: the group and what the create form offers.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupEdit {
    pub group: GroupResource,
    pub roles: Vec<String>,
    pub users: Vec<GroupMember>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupEditEnvelope {
    pub data: GroupEdit,
}

/// `POST /groups`.
#[derive(Debug, ToSchema, Serialize)]
pub struct CreateGroupRequest {
    /// Unique.
    #[schema(max_length = 255)]
    pub name: String,
    #[schema(max_items = 1000)]
    pub user_ids: Option<Vec<i64>>,
    /// Role names; `public` is not assignable.
    #[schema(max_items = 1000)]
    pub roles: Option<Vec<String>>,
}

/// `PUT /groups/{group}`: every field optional; `user_ids` and `roles` replace.
#[derive(Debug, ToSchema, Serialize)]
pub struct UpdateGroupRequest {
    #[schema(max_length = 255)]
    pub name: Option<String>,
    #[schema(max_items = 1000)]
    pub user_ids: Option<Vec<i64>>,
    #[schema(max_items = 1000)]
    pub roles: Option<Vec<String>>,
}
