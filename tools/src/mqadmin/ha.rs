//! `switchRole` and `haStatus`: sluice's failover drill commands (private request
//! codes SLUICE_SWITCH_ROLE 40001 and SLUICE_HA_STATUS 40002).

use std::time::Duration;

use clap::Args;
use remoting::{RemotingCommand, RequestCode};

use super::{Common, Ctx};
use crate::error::{Result, ToolsError};

/// A switch waits for dispatch to catch up and for re-registration.
const SWITCH_TIMEOUT: Duration = Duration::from_secs(30);

/// `switchRole -b ADDR -r MASTER|SLAVE [-m NEW_MASTER_ADDR]`.
#[derive(Debug, Args)]
pub struct SwitchRole {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// The broker to switch (`ip:port` of its main port).
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker_addr: String,
    /// MASTER or SLAVE.
    #[arg(short = 'r', long = "role")]
    pub role: String,
    /// For SLAVE: the new master's main address (`ip:port`).
    #[arg(short = 'm', long = "masterAddr")]
    pub master_addr: Option<String>,
    /// For SLAVE: the new master's HA address, if not asked from the master itself.
    #[arg(long = "haMasterAddress")]
    pub ha_master_address: Option<String>,
    /// For MASTER: SYNC_MASTER or ASYNC_MASTER (default: the broker's configured one).
    #[arg(short = 't', long = "brokerRole")]
    pub broker_role: Option<String>,
    /// For SLAVE: the slave's broker id (default: its current one, or 1).
    #[arg(short = 'i', long = "brokerId")]
    pub broker_id: Option<i64>,
}

impl SwitchRole {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let role = self.role.to_ascii_uppercase();
        if role != "MASTER" && role != "SLAVE" {
            return Err(ToolsError::Usage(format!(
                "-r must be MASTER or SLAVE, not {}",
                self.role
            )));
        }
        if role == "SLAVE" && self.master_addr.is_none() && self.ha_master_address.is_none() {
            return Err(ToolsError::Usage(
                "-r SLAVE needs -m NEW_MASTER_ADDR".into(),
            ));
        }
        let mut request = RemotingCommand::request(RequestCode::SluiceSwitchRole);
        let ext = &mut request.header.ext_fields;
        ext.insert("role", role.clone());
        if let Some(m) = &self.master_addr {
            ext.insert("masterAddress", m.trim());
        }
        if let Some(h) = &self.ha_master_address {
            ext.insert("haMasterAddress", h.trim());
        }
        if let Some(r) = &self.broker_role {
            ext.insert("brokerRole", r.to_ascii_uppercase());
        }
        if let Some(id) = self.broker_id {
            ext.insert("brokerId", id.to_string());
        }
        let response = ctx
            .client
            .call_with_timeout(self.broker_addr.trim(), request, SWITCH_TIMEOUT)
            .await?;
        writeln!(ctx.out, "switchRole {} -> {role}: OK", self.broker_addr)?;
        print_json(ctx, &response.body.to_bytes())
    }
}

/// `haStatus -b ADDR`.
#[derive(Debug, Args)]
pub struct HaStatus {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// The broker (`ip:port` of its main port).
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker_addr: String,
}

impl HaStatus {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let response = ctx
            .client
            .call(
                self.broker_addr.trim(),
                RemotingCommand::request(RequestCode::SluiceHaStatus),
            )
            .await?;
        print_json(ctx, &response.body.to_bytes())
    }
}

/// Prints a JSON object body as `key: value` lines.
fn print_json(ctx: &mut Ctx<'_>, body: &[u8]) -> Result<()> {
    let value: serde_json::Value =
        remoting::fastjson::from_slice(body).map_err(|e| ToolsError::Usage(e.to_string()))?;
    if let serde_json::Value::Object(map) = value {
        for (k, v) in map {
            let text = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            writeln!(ctx.out, "{k:<20}: {text}")?;
        }
    }
    Ok(())
}
