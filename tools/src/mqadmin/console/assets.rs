//! The console's front end: one page, one script, one style sheet, written for sluice and
//! compiled into the binary (`include_str!`), so the console works offline and has no build
//! step. The script renders each view from the JSON of [`super::api`] and draws the live
//! rate charts as SVG itself.

use axum::http::header;
use axum::response::IntoResponse;

/// GET /.
pub async fn index() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        include_str!("assets/index.html"),
    )
}

/// GET /app.js.
pub async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("assets/app.js"),
    )
}

/// GET /app.css.
pub async fn style() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("assets/app.css"),
    )
}
