//! `switchRole` and `haStatus`: sluice's failover drill commands (private request
//! codes SLUICE_SWITCH_ROLE 40001 and SLUICE_HA_STATUS 40002).

use std::time::Duration;

use clap::Args;
use remoting::protocol::role::{
    HaStatusBody, MasterRole, SwitchResult, SwitchRoleRequestHeader, SwitchTarget,
};
use remoting::{RemotingCommand, RequestCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Common, Ctx};
use crate::error::{Result, ToolsError};

/// A switch waits for dispatch to catch up and for re-registration.
const SWITCH_TIMEOUT: Duration = Duration::from_secs(30);

/// What `switchRole --help` says: what each target role means for producers during a
/// drill, and the sequence that keeps a SYNC_MASTER pair writable throughout.
pub const SWITCH_ROLE_HELP: &str = "\
Switch a broker between master and slave (sluice failover drills).

-r MASTER promotes a slave: if its master can be reached (a planned switchover), it
first fences it — the master stops acknowledging sends and leaves the routes, and the
slave catches up with everything it acknowledged, so the demotion that follows cuts
nothing; then it stops
replicating, cuts a partial last record, takes writes and registers as brokerId 0. What producers get from it depends on the role it
takes (-t; default: the role it was started with if that was a master, else its
masterRoleOnSwitch):
  SYNC_MASTER   SEND_OK only once a slave holds the message. Promoted with no slave, it
                answers every send SLAVE_NOT_AVAILABLE (stored on this broker only)
                until a slave has joined: producers see an outage.
  ASYNC_MASTER  SEND_OK once this broker holds the message; a slave catches up when it
                joins. No outage, but until then an acknowledged message exists once.
On a master, -r MASTER -t SYNC_MASTER|ASYNC_MASTER changes the replication mode only.

-r SLAVE -m NEW_MASTER demotes a master: it stops taking writes, cuts what NEW_MASTER
does not have (never a message a SYNC_MASTER acknowledged with SEND_OK: its slave held
it before it was promoted) and follows NEW_MASTER.

The safe switchover of a SYNC_MASTER pair (no outage; a single copy only while the old
master catches up):
  1. switchRole -b SLAVE_ADDR -r MASTER -t ASYNC_MASTER
  2. switchRole -b OLD_MASTER_ADDR -r SLAVE -m SLAVE_ADDR
  3. haStatus -b OLD_MASTER_ADDR until connected and maxOffset equals the new master's
  4. switchRole -b SLAVE_ADDR -r MASTER -t SYNC_MASTER
(deploy/local-cluster.sh drill runs exactly this.) After the master crashed: step 1,
then restart the old master as a slave (brokerRole=SLAVE; it cuts what the new master
does not have and follows it), then steps 3 and 4. Promoting with -t SYNC_MASTER instead
refuses every write until the old master is back as a slave.

A switch that cannot complete (its HA port taken, say) fails, exits non-zero and leaves
the broker as it was.";

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
    /// For MASTER: SYNC_MASTER (SEND_OK only once a slave holds it: with no slave, every
    /// send is answered SLAVE_NOT_AVAILABLE) or ASYNC_MASTER (SEND_OK at once). Default:
    /// its start role if a master, else its masterRoleOnSwitch.
    #[arg(short = 't', long = "brokerRole")]
    pub broker_role: Option<String>,
    /// For SLAVE: the slave's broker id (default: its current one, or 1).
    #[arg(short = 'i', long = "brokerId")]
    pub broker_id: Option<i64>,
}

impl SwitchRole {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let role = match self.role.trim().to_ascii_uppercase().as_str() {
            "MASTER" => SwitchTarget::Master,
            "SLAVE" => SwitchTarget::Slave,
            _ => {
                return Err(ToolsError::Usage(format!(
                    "-r must be MASTER or SLAVE, not {}",
                    self.role
                )));
            }
        };
        if role == SwitchTarget::Slave
            && self.master_addr.is_none()
            && self.ha_master_address.is_none()
        {
            return Err(ToolsError::Usage(
                "-r SLAVE needs -m NEW_MASTER_ADDR".into(),
            ));
        }
        let broker_role = match &self.broker_role {
            None => None,
            Some(r) => Some(MasterRole::from_name(r).ok_or_else(|| {
                ToolsError::Usage(format!("-t must be SYNC_MASTER or ASYNC_MASTER, not {r}"))
            })?),
        };
        let header = SwitchRoleRequestHeader {
            role,
            broker_role,
            master_address: self.master_addr.as_deref().map(|m| m.trim().to_owned()),
            ha_master_address: self
                .ha_master_address
                .as_deref()
                .map(|h| h.trim().to_owned()),
            broker_id: self.broker_id,
        };
        let request = RemotingCommand::request_with(RequestCode::SluiceSwitchRole, &header);
        let response = ctx
            .client
            .call_with_timeout(self.broker_addr.trim(), request, SWITCH_TIMEOUT)
            .await?;
        writeln!(ctx.out, "switchRole {} -> {role}: OK", self.broker_addr)?;
        print_body::<SwitchResult>(ctx, &response.body.to_bytes())
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
        print_body::<HaStatusBody>(ctx, &response.body.to_bytes())
    }
}

/// Prints a body of type `T` as `key: value` lines, one per field.
fn print_body<T: Serialize + DeserializeOwned>(ctx: &mut Ctx<'_>, body: &[u8]) -> Result<()> {
    let typed: T =
        remoting::fastjson::from_slice(body).map_err(|e| ToolsError::Usage(e.to_string()))?;
    let value = serde_json::to_value(&typed).map_err(|e| ToolsError::Usage(e.to_string()))?;
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
