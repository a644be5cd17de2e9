//! `mqadmin console`: a web console in the box — cluster, topics, consumer groups and
//! messages in a browser, with live charts of the rates — served by `mqadmin` itself, so
//! that it needs no other service (RocketMQ's dashboard is a separate Java application).
//!
//! Nothing here is a second admin code path: the pages read through the same calls the
//! `mqadmin` sub commands make ([`api`]), and every changing action (create, update or
//! delete a topic, reset a group's offsets, give a message to a consumer again) *is* an
//! `mqadmin` sub command, run in process
//! with the operator's credentials when the cluster checks them, its output shown as the
//! answer. Off unless started; bound to loopback unless `--listen` says otherwise.
//!
//! The front end is three small files of our own ([`assets`]), compiled into the binary:
//! no build step, nothing fetched at run time.

pub mod api;
pub mod assets;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use clap::Args;

use super::{Common, Ctx};
use crate::client::Client;
use crate::error::{Result, ToolsError};

/// `console`: serve the web console.
#[derive(Debug, Args)]
pub struct Console {
    /// Common options (name servers; credentials for reading when the cluster checks them).
    #[command(flatten)]
    pub common: Common,
    /// Address to serve on (loopback unless given).
    #[arg(long = "listen", default_value = "127.0.0.1:8080")]
    pub listen: String,
}

/// What every handler shares.
#[derive(Debug)]
pub struct Shared {
    /// The client of the reading calls.
    pub client: Client,
    /// `-n`, handed to the changing `mqadmin` sub commands.
    pub namesrv: String,
}

impl Console {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let addr: SocketAddr = self
            .listen
            .parse()
            .map_err(|e| ToolsError::Usage(format!("--listen {}: {e}", self.listen)))?;
        let namesrv = self
            .common
            .namesrv
            .clone()
            .ok_or_else(|| ToolsError::Usage("the console needs -n NAMESRV_ADDR".to_owned()))?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| ToolsError::Usage(format!("cannot listen on {addr}: {e}")))?;
        let local = listener.local_addr()?;
        let state = Arc::new(Shared {
            client: ctx.client.clone(),
            namesrv,
        });
        writeln!(ctx.out, "console listening on http://{local}/")?;
        ctx.out.flush()?;
        axum::serve(listener, router(state))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    }
}

/// The console's routes.
pub fn router(state: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(assets::index))
        .route("/app.js", get(assets::script))
        .route("/app.css", get(assets::style))
        .route("/api/cluster", get(api::cluster))
        .route("/api/topics", get(api::topics))
        .route("/api/topics/offsets", get(api::topic_offsets))
        .route("/api/topic", get(api::topic))
        .route("/api/topic/update", post(api::update_topic))
        .route("/api/topic/delete", post(api::delete_topic))
        .route("/api/groups", get(api::groups))
        .route("/api/group", get(api::group))
        .route("/api/group/reset", post(api::reset_offset))
        .route("/api/message", get(api::message))
        .route("/api/message/resend", post(api::resend))
        .with_state(state)
}

/// How long a changing action may take.
pub const ACTION_TIMEOUT: Duration = Duration::from_secs(30);
