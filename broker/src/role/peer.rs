//! Calls to the other broker of the pair: its HA status, FENCE, and the unfence (a
//! switch back to master) that undoes a fence.

use std::time::Duration;

use remoting::protocol::role::{HaStatusBody, MasterRole, SwitchRoleRequestHeader, SwitchTarget};
use remoting::{RemotingClient, RemotingCommand, RequestCode, ResponseCode, fastjson};
use tracing::{error, info};

use super::SwitchError;
use crate::broker::Broker;

const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// One request to `addr`, on a connection of its own, signed as the broker's own requests
/// are.
async fn call(
    broker: &Broker,
    addr: &str,
    request: RemotingCommand,
) -> Result<RemotingCommand, SwitchError> {
    let client: RemotingClient = broker.inner_client();
    let answer = client.invoke(addr, request, CALL_TIMEOUT).await;
    client.close_all();
    answer.map_err(|e| SwitchError::Peer(format!("cannot reach {addr}: {e}")))
}

fn body(addr: &str, response: &RemotingCommand) -> Result<HaStatusBody, SwitchError> {
    fastjson::from_slice(&response.body.to_bytes())
        .map_err(|e| SwitchError::Peer(format!("unreadable HA status from {addr}: {e}")))
}

/// SLUICE_HA_STATUS of the new master at `addr`.
///
/// # Errors
/// It cannot be reached, refuses, or is not a sluice broker.
pub async fn fetch_status(broker: &Broker, addr: &str) -> Result<HaStatusBody, SwitchError> {
    ask_status(broker, addr).await?.ok_or_else(|| {
        SwitchError::Peer(format!(
            "the new master {addr} does not answer SLUICE_HA_STATUS (not a sluice broker?)"
        ))
    })
}

/// SLUICE_HA_STATUS of `addr`; `None` when it answers that it does not know the request
/// (an Apache RocketMQ broker).
pub(super) async fn ask_status(
    broker: &Broker,
    addr: &str,
) -> Result<Option<HaStatusBody>, SwitchError> {
    let response = call(
        broker,
        addr,
        RemotingCommand::request(RequestCode::SluiceHaStatus),
    )
    .await?;
    if response.code() == ResponseCode::RequestCodeNotSupported.code() {
        return Ok(None);
    }
    if response.code() != ResponseCode::Success.code() {
        return Err(SwitchError::Peer(format!(
            "{addr} refused SLUICE_HA_STATUS: {:?}",
            response.remark()
        )));
    }
    body(addr, &response).map(Some)
}

/// What a FENCE sent to the master got.
pub(super) enum Fenced {
    /// Fenced: its status (`maxOffset` is the end to catch up with).
    Yes(HaStatusBody),
    /// It answered but refused (its remark).
    Refused(String),
    /// It could not be reached.
    Unreachable(String),
}

/// Asks the master at `addr` to stop taking writes.
pub(super) async fn send_fence(broker: &Broker, addr: &str) -> Result<Fenced, SwitchError> {
    let header = SwitchRoleRequestHeader {
        role: SwitchTarget::Fence,
        ..SwitchRoleRequestHeader::default()
    };
    let request = RemotingCommand::request_with(RequestCode::SluiceSwitchRole, &header);
    match call(broker, addr, request).await {
        Ok(r) if r.code() == ResponseCode::Success.code() => body(addr, &r).map(Fenced::Yes),
        Ok(r) => Ok(Fenced::Refused(format!(
            "code {}: {}",
            r.code(),
            r.remark().unwrap_or("")
        ))),
        Err(e) => Ok(Fenced::Unreachable(e.to_string())),
    }
}

/// Undoes a fence: the master at `addr` takes writes again as `role` (a switch to
/// master on a master). Logged, not returned: nothing the caller can do differs.
pub(super) async fn unfence(broker: &Broker, addr: &str, role: &str) {
    let header = SwitchRoleRequestHeader {
        role: SwitchTarget::Master,
        broker_role: MasterRole::from_name(role),
        ..SwitchRoleRequestHeader::default()
    };
    let request = RemotingCommand::request_with(RequestCode::SluiceSwitchRole, &header);
    match call(broker, addr, request).await {
        Ok(r) if r.code() == ResponseCode::Success.code() => {
            info!(master = addr, "fenced master takes writes again");
        }
        Ok(r) => {
            error!(master = addr, remark = ?r.remark(), "the fenced master refused to take writes again");
        }
        Err(e) => {
            error!(master = addr, error = %e, "cannot tell the fenced master to take writes again")
        }
    }
}
