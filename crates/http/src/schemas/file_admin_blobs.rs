//! The shapes of the admin file manager's upload, replace, copy and download routes
//! (`/files/upload`, `/files/{file}/replace|copy|download`) in the OpenAPI description.

use serde::Serialize;
use utoipa::ToSchema;

use super::file_admin_browse::AdminFileResource;

/// The many-file upload body (`multipart/form-data`): up to 100 `file` parts, each at most the
/// project's `files_max_upload_bytes`.
#[derive(Debug, ToSchema, Serialize)]
pub struct UploadFilesForm {
    /// One part per file (repeat the `file` name); the part's file name is the stored name.
    #[schema(value_type = Vec<String>, format = Binary, max_items = 100, min_items = 1)]
    pub file: Vec<Vec<u8>>,
    /// The folder every file goes into (absent, empty or `null`: the top level).
    pub parent_id: Option<i64>,
}

/// The replace body (`multipart/form-data`): the new bytes in one `file` part.
#[derive(Debug, ToSchema, Serialize)]
pub struct ReplaceFileForm {
    #[schema(value_type = String, format = Binary, content_media_type = "application/octet-stream")]
    pub file: Vec<u8>,
}

/// The copy body: where the copy goes and what it is called.
#[derive(Debug, ToSchema, Serialize)]
pub struct CopyFileRequest {
    /// The folder of the copy: absent for the source's folder, `null` for the top level.
    pub parent_id: Option<i64>,
    /// The copy's name (absent or `null`: the source's), cleaned of directories.
    #[schema(max_length = 255)]
    pub filename: Option<String>,
}

/// The files an upload created, in the order of their parts.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UploadedFilesEnvelope {
    pub data: Vec<AdminFileResource>,
}
