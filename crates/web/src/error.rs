/// Why a page could not be rendered: a template failed at run time (a formatting error; missing
/// fields are compile errors).
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("rendering a page failed: {0}")]
    Render(#[from] askama::Error),
}
