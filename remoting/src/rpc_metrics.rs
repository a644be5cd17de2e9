//! `rocketmq_rpc_latency`: every answered request in a histogram keyed by its request
//! code, response code, result and whether it was held for long polling, with RocketMQ's
//! label values (`request_code="send_message_v2"`, `response_code="success"`).

use std::fmt;

use metrics::family::Family;
use metrics::meter::{Histogram, RPC_LATENCY_MS};
use metrics::scrape::{Def, Labels, Scrape, flag};

use crate::code::{RequestCode, ResponseCode};
use crate::server::{RpcObserver, RpcOutcome, RpcResult};

/// RocketMQ's description of the metric.
pub const RPC_LATENCY: Def =
    Def::histogram("rocketmq_rpc_latency", "Rpc latency").unit("milliseconds");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    request_code: i32,
    response_code: i32,
    long_polling: bool,
    result: RpcResult,
}

impl From<&Key> for Key {
    fn from(k: &Key) -> Key {
        *k
    }
}

/// The histograms, fed as an [`RpcObserver`] of the servers and held-request answers.
#[derive(Debug)]
pub struct RpcLatency {
    by_key: Family<Key, Histogram>,
}

impl Default for RpcLatency {
    fn default() -> Self {
        RpcLatency {
            by_key: Family::new(|| Histogram::new(RPC_LATENCY_MS)),
        }
    }
}

/// `SEND_MESSAGE_V2` as RocketMQ labels it (`send_message_v2`); an unknown code as its
/// number.
#[must_use]
pub fn request_code_label(code: i32) -> String {
    RequestCode::try_from(code).map_or_else(|c| c.to_string(), |c| c.name().to_ascii_lowercase())
}

/// A response code as RocketMQ labels it (`success`, `pull_not_found`).
#[must_use]
pub fn response_code_label(code: i32) -> String {
    ResponseCode::try_from(code).map_or_else(|c| c.to_string(), |c| c.name().to_ascii_lowercase())
}

impl RpcObserver for RpcLatency {
    fn on_answered(&self, outcome: &RpcOutcome) {
        let key = Key {
            request_code: outcome.request_code,
            response_code: outcome.response_code,
            long_polling: outcome.long_polling,
            result: outcome.result,
        };
        thread_local! {
            static LAST: metrics::family::LastHit<Key, Histogram> = const { std::cell::RefCell::new(None) };
        }
        // In u64 (`as_millis` divides a u128).
        let d = outcome.elapsed;
        let ms = d
            .as_secs()
            .saturating_mul(1000)
            .saturating_add(u64::from(d.subsec_millis()));
        self.by_key.with_last(&LAST, &key, |h| h.observe(ms));
    }
}

impl RpcLatency {
    /// Writes the histograms (`protocol_type="remoting"` on each).
    ///
    /// # Errors
    /// When the scrape cannot be written.
    pub fn collect(&self, scrape: &mut Scrape<'_>) -> fmt::Result {
        let series: Vec<(Labels<'_>, _)> = self
            .by_key
            .entries()
            .into_iter()
            .map(|(k, h)| {
                (
                    vec![
                        ("protocol_type", "remoting".into()),
                        ("request_code", request_code_label(k.request_code).into()),
                        ("response_code", response_code_label(k.response_code).into()),
                        ("result", k.result.label().into()),
                        ("is_long_polling", flag(k.long_polling)),
                    ],
                    h.snapshot(),
                )
            })
            .collect();
        scrape.histogram(&RPC_LATENCY, &series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_labels_are_rocketmq_names_in_lower_case() {
        assert_eq!(request_code_label(310), "send_message_v2");
        assert_eq!(request_code_label(34), "heart_beat");
        assert_eq!(response_code_label(0), "success");
        assert_eq!(request_code_label(987_654), "987654");
    }
}
