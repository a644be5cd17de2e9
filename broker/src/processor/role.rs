//! SLUICE_SWITCH_ROLE (40001) and SLUICE_HA_STATUS (40002), sluice's private codes:
//! decode, call the role state machine ([`crate::role`]), encode.

use std::sync::Arc;

use remoting::protocol::role::{SwitchRoleRequestHeader, SwitchTarget};
use remoting::server::Reply;
use remoting::{RemotingCommand, ResponseCode, fastjson};
use serde::Serialize;

use super::{Refusal, success};
use crate::role::{Role, SwitchError};

/// SLUICE_SWITCH_ROLE: answered once the switch is done (or refused).
pub fn switch_role(role: &Arc<Role>, request: &RemotingCommand) -> Reply {
    let header: SwitchRoleRequestHeader = match request.decode_header() {
        Ok(h) => h,
        Err(e) => {
            return Reply::Now(
                Refusal::new(ResponseCode::InvalidParameter, e.to_string()).into_response(),
            );
        }
    };
    let role = Arc::clone(role);
    Reply::later(async move {
        Some(match header.role {
            SwitchTarget::Fence => answer(role.fence().await),
            SwitchTarget::Master | SwitchTarget::Slave => answer(role.switch(&header).await),
        })
    })
}

/// SLUICE_HA_STATUS.
#[must_use]
pub fn ha_status(role: &Role) -> RemotingCommand {
    answer::<_>(Ok(role.status()))
}

fn answer<T: Serialize>(outcome: Result<T, SwitchError>) -> RemotingCommand {
    match outcome {
        Ok(body) => match fastjson::to_vec(&body, fastjson::KeyStyle::Fastjson) {
            Ok(bytes) => success().with_body(bytes),
            Err(e) => Refusal::from(e).into_response(),
        },
        Err(e) => Refusal::from(e).into_response(),
    }
}

impl From<SwitchError> for Refusal {
    fn from(e: SwitchError) -> Self {
        match e {
            SwitchError::Invalid(_) | SwitchError::NotMaster(_) => {
                Refusal::new(ResponseCode::InvalidParameter, e.to_string())
            }
            _ => Refusal::system(e.to_string()),
        }
    }
}
