//! QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33) (RocketMQ's QueryMessageProcessor):
//! messages by key through the index, and one message by CommitLog offset, sent as
//! slices of the mapped CommitLog.

use remoting::protocol::broker::{
    QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader,
};
use remoting::protocol::constants::UNIQUE_KEY_QUERY;
use remoting::{Body, RemotingCommand, ResponseCode};

use super::{Handled, Refusal, success};
use crate::broker::Broker;

/// QUERY_MESSAGE: up to `maxNum` messages whose key (or UNIQ_KEY, with
/// `_UNIQUE_KEY_QUERY=true`, then at most `defaultQueryMaxNum`) matches in the range.
pub fn query_message(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: QueryMessageRequestHeader = request.decode_header()?;
    let unique = request
        .ext(UNIQUE_KEY_QUERY)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let max = if unique {
        broker.store.config().default_query_max_num
    } else {
        usize::try_from(h.max_num).unwrap_or(0)
    };
    let result =
        broker
            .store
            .query_message(&h.topic, &h.key, max, h.begin_timestamp, h.end_timestamp);
    let header = QueryMessageResponseHeader {
        index_last_update_timestamp: result.index_last_update_timestamp,
        index_last_update_phyoffset: result.index_last_update_phy_offset,
    };
    if result.messages.is_empty() {
        let mut refusal = Refusal::new(
            ResponseCode::QueryNotFound,
            "can not find message, maybe time range not correct",
        )
        .into_response();
        refusal = refusal.with_header(&header);
        return Ok(refusal);
    }
    Ok(success()
        .with_header(&header)
        .with_body(Body::Parts(result.messages)))
}

/// VIEW_MESSAGE_BY_ID: the record at a CommitLog offset (decoded from an offset msg id).
pub fn view_message(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: ViewMessageRequestHeader = request.decode_header()?;
    let message = u64::try_from(h.offset)
        .ok()
        .and_then(|o| broker.store.look_message_by_offset(o))
        .ok_or_else(|| {
            Refusal::system(format!("can not find message by the offset, {}", h.offset))
        })?;
    Ok(success().with_body(message))
}
