//! The timer engine's admin requests (RocketMQ 5.x): SWITCH_TIMER_ENGINE (5001) names
//! the engine in ext field `E_T` (`MessageConst.TIMER_ENGINE_TYPE`): `F` for the file
//! time wheel, `R` for the RocksDB timeline (5.4+). GET_TIMER_CHECK_POINT (60) answers
//! the 56-byte checkpoint (`store::timer::checkpoint`).

use crate::ext_header;

/// `E_T` value of the file time wheel (`TIMER_ENGINE_FILE_TIME_WHEEL`).
pub const FILE_TIME_WHEEL: &str = "F";
/// `E_T` value of the RocksDB timeline (`TIMER_ENGINE_ROCKSDB_TIMELINE`).
pub const ROCKSDB_TIMELINE: &str = "R";

ext_header! {
    /// SWITCH_TIMER_ENGINE (5001) request.
    pub struct SwitchTimerEngineRequestHeader {
        engine_type: Option<String> = "E_T",
    }
}

/// The engine's name as `mqadmin switchTimerEngine -c` prints it.
#[must_use]
pub fn engine_name(engine_type: &str) -> Option<&'static str> {
    match engine_type {
        FILE_TIME_WHEEL => Some("FILE_TIME_WHEEL"),
        ROCKSDB_TIMELINE => Some("ROCKSDB_TIMELINE"),
        _ => None,
    }
}

/// A recall handle (RocketMQ `RecallMessageHandle.HandleV1`): what a send of a timer
/// message answers in `recallHandle`, and what RECALL_MESSAGE (370) takes back. The
/// URL-safe Base64 of `v1 <topic> <brokerName> <timestamp> <UNIQ_KEY>`, the timestamp
/// being the message's `TIMER_OUT_MS` + 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallHandle {
    /// The real topic.
    pub topic: String,
    /// The broker that holds the timer.
    pub broker_name: String,
    /// `TIMER_OUT_MS` + 1, as text (RocketMQ keeps it as a string).
    pub timestamp: String,
    /// The message's `UNIQ_KEY`.
    pub message_id: String,
}

/// Why a recall handle does not decode (RocketMQ's one remark for all cases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("recall handle is invalid")]
pub struct InvalidRecallHandle;

impl RecallHandle {
    /// The handle's text.
    #[must_use]
    pub fn encode(&self) -> String {
        use base64::Engine as _;
        let raw = format!(
            "v1 {} {} {} {}",
            self.topic, self.broker_name, self.timestamp, self.message_id
        );
        base64::engine::general_purpose::URL_SAFE.encode(raw)
    }

    /// Decodes a handle (padding optional, as Java's URL decoder takes it).
    ///
    /// # Errors
    /// Empty, not Base64, not UTF-8, not version 1, or fewer than five fields.
    pub fn decode(text: &str) -> Result<Self, InvalidRecallHandle> {
        use base64::Engine as _;
        let engine = base64::engine::GeneralPurpose::new(
            &base64::alphabet::URL_SAFE,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        );
        if text.is_empty() {
            return Err(InvalidRecallHandle);
        }
        let raw = engine.decode(text).map_err(|_| InvalidRecallHandle)?;
        let raw = String::from_utf8(raw).map_err(|_| InvalidRecallHandle)?;
        let items: Vec<&str> = raw.split(' ').collect();
        match items.as_slice() {
            ["v1", topic, broker_name, timestamp, message_id, ..] => Ok(RecallHandle {
                topic: (*topic).to_owned(),
                broker_name: (*broker_name).to_owned(),
                timestamp: (*timestamp).to_owned(),
                message_id: (*message_id).to_owned(),
            }),
            _ => Err(InvalidRecallHandle),
        }
    }
}

ext_header! {
    /// RECALL_MESSAGE (370) request.
    pub struct RecallMessageRequestHeader {
        producer_group: Option<String> = "producerGroup",
        topic: String = "topic",
        recall_handle: String = "recallHandle",
        broker_name: Option<String> = "brokerName",
    }
}

ext_header! {
    /// RECALL_MESSAGE response: the recalled message's id.
    pub struct RecallMessageResponseHeader {
        msg_id: Option<String> = "msgId",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_rocketmq_s_base64_of_five_fields() {
        let h = RecallHandle {
            topic: "T".into(),
            broker_name: "broker-a".into(),
            timestamp: "1764600010001".into(),
            message_id: "7F00000100002A9F0000000000000001".into(),
        };
        let text = h.encode();
        // Java: Base64.getUrlEncoder().encodeToString("v1 T broker-a 1764600010001 7F00…01")
        assert_eq!(
            text,
            "djEgVCBicm9rZXItYSAxNzY0NjAwMDEwMDAxIDdGMDAwMDAxMDAwMDJBOUYwMDAwMDAwMDAwMDAwMDAx"
        );
        assert_eq!(RecallHandle::decode(&text), Ok(h.clone()));
        assert_eq!(RecallHandle::decode(text.trim_end_matches('=')), Ok(h));
        for bad in ["", "!!", "djIgVCBi", "djEgVCBicm9rZXItYQ=="] {
            assert_eq!(RecallHandle::decode(bad), Err(InvalidRecallHandle), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_decodes_or_is_refused_never_panics(text in ".{0,120}") {
            let _ = RecallHandle::decode(&text);
        }

        #[test]
        fn handles_round_trip(topic in "[A-Za-z0-9_%-]{1,20}", broker in "[a-z0-9-]{1,12}", ts in 0i64.., id in "[0-9A-F]{32}") {
            let h = RecallHandle { topic, broker_name: broker, timestamp: ts.to_string(), message_id: id };
            proptest::prop_assert_eq!(RecallHandle::decode(&h.encode()), Ok(h));
        }
    }
}
