//! The generated `apache.rocketmq.v2` code: messages, enums, the `MessagingService` server
//! (`messaging_service_server`) and client (`messaging_service_client`). Timestamps and
//! durations are [`prost_types`]'. The source is `proto/apache/rocketmq/v2/`; the tests below
//! pin a few encodings to bytes worked out by hand from the field numbers there.

#![allow(
    clippy::large_enum_variant,
    reason = "generated: oneofs such as TelemetryCommand.command become enums as they are"
)]

tonic::include_proto!("apache.rocketmq.v2");

/// Where the server's commands to one client's telemetry stream are written.
pub type CommandSender = tokio::sync::mpsc::Sender<Result<TelemetryCommand, tonic::Status>>;

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use prost::Message as _;

    use super::*;

    /// Encodes `msg`, checks the bytes, and decodes them back to `msg`.
    fn assert_wire<M: prost::Message + Default + PartialEq + std::fmt::Debug>(
        msg: &M,
        wire: &[u8],
    ) {
        let bytes = msg.encode_to_vec();
        assert_eq!(bytes, wire, "encoding of {msg:?}");
        assert_eq!(M::decode(wire).expect("valid encoding"), *msg);
    }

    #[test]
    fn resource() {
        let resource = Resource {
            resource_namespace: "ns".into(),
            name: "T".into(),
        };
        assert_wire(
            &resource,
            &[
                0x0a, 2, b'n', b's', // 1 resource_namespace, length-delimited
                0x12, 1, b'T', // 2 name
            ],
        );
        // Field order is free on the wire.
        let swapped = [0x12, 1, b'T', 0x0a, 2, b'n', b's'];
        assert_eq!(Resource::decode(&swapped[..]).expect("valid"), resource);
    }

    #[test]
    fn send_message_request() {
        let request = SendMessageRequest {
            messages: vec![Message {
                topic: Some(Resource {
                    resource_namespace: String::new(),
                    name: "T".into(),
                }),
                user_properties: HashMap::from([("k".into(), "v".into())]),
                system_properties: Some(SystemProperties {
                    tag: Some("a".into()),
                    message_id: "01".into(),
                    body_encoding: Encoding::Identity.into(),
                    message_type: MessageType::Normal.into(),
                    ..Default::default()
                }),
                body: b"hi".to_vec().into(),
            }],
        };
        #[rustfmt::skip]
        let wire = [
            0x0a, 30, // SendMessageRequest 1 messages (repeated Message)
              0x0a, 3, // Message 1 topic
                0x12, 1, b'T', // Resource 2 name (an empty namespace is not sent)
              0x12, 6, // Message 2 user_properties: one map entry
                0x0a, 1, b'k', // entry 1 key
                0x12, 1, b'v', // entry 2 value
              0x1a, 11, // Message 3 system_properties
                0x0a, 1, b'a', // 1 tag (optional string)
                0x1a, 2, b'0', b'1', // 3 message_id
                0x28, 1, // 5 body_encoding = IDENTITY, varint
                0x30, 1, // 6 message_type = NORMAL
              0x22, 2, b'h', b'i', // Message 4 body
        ];
        assert_wire(&request, &wire);
    }

    #[test]
    fn optional_fields_are_sent_when_zero() {
        // proto3 `optional`: presence is kept, so Some(0) is on the wire and a plain zero is not.
        let props = SystemProperties {
            delivery_attempt: Some(0),
            queue_id: 0,
            ..Default::default()
        };
        assert_wire(&props, &[0x80, 0x01, 0]); // 16 delivery_attempt: key (16 << 3) | 0 = 128
        let props = SystemProperties {
            queue_offset: Some(7),
            priority: Some(3),
            ..Default::default()
        };
        assert_wire(&props, &[0x70, 7, 0xb0, 0x01, 3]); // 14 queue_offset, 22 priority
    }

    #[test]
    fn telemetry_command_variants() {
        let print = TelemetryCommand {
            status: None,
            command: Some(telemetry_command::Command::PrintThreadStackTraceCommand(
                PrintThreadStackTraceCommand { nonce: "n".into() },
            )),
        };
        // 6 print_thread_stack_trace_command { 1 nonce }
        assert_wire(&print, &[0x32, 3, 0x0a, 1, b'n']);

        let settings = TelemetryCommand {
            status: Some(Status {
                code: Code::Ok.into(),
                message: "ok".into(),
            }),
            command: Some(telemetry_command::Command::Settings(Settings {
                client_type: Some(ClientType::Producer.into()),
                request_timeout: Some(prost_types::Duration {
                    seconds: 3,
                    nanos: 0,
                }),
                ..Default::default()
            })),
        };
        #[rustfmt::skip]
        let wire = [
            0x0a, 8, // 1 status
              0x08, 0xa0, 0x9c, 0x01, // 1 code = OK = 20000 as a varint
              0x12, 2, b'o', b'k', // 2 message
            0x12, 6, // 2 settings
              0x08, 1, // 1 client_type = PRODUCER (optional enum)
              0x22, 2, // 4 request_timeout (google.protobuf.Duration)
                0x08, 3, // 1 seconds
        ];
        assert_wire(&settings, &wire);

        let unsubscribe = TelemetryCommand {
            status: None,
            command: Some(telemetry_command::Command::NotifyUnsubscribeLiteCommand(
                NotifyUnsubscribeLiteCommand {
                    lite_topic: "L".into(),
                },
            )),
        };
        assert_wire(&unsubscribe, &[0x4a, 3, 0x0a, 1, b'L']); // 9, then 1 lite_topic
    }

    #[test]
    fn receive_message_response_variants() {
        let started = ReceiveMessageResponse {
            content: Some(receive_message_response::Content::DeliveryTimestamp(
                prost_types::Timestamp {
                    seconds: 1,
                    nanos: 2,
                },
            )),
        };
        // 3 delivery_timestamp { 1 seconds, 2 nanos }
        assert_wire(&started, &[0x1a, 4, 0x08, 1, 0x10, 2]);
        let pulled = PullMessageResponse {
            content: Some(pull_message_response::Content::NextOffset(300)),
        };
        assert_wire(&pulled, &[0x18, 0xac, 0x02]); // 3 next_offset = 300 (int64 varint)
    }

    #[test]
    fn enum_numbers() {
        assert_eq!(Code::Ok as i32, 20000);
        assert_eq!(Code::MessageBodyEmpty as i32, 41302);
        assert_eq!(Code::InvalidClientProperties as i32, 40021);
        assert_eq!(Code::FailedToConsumeMessage as i32, 60000);
        assert_eq!(
            Code::from_str_name("TOO_MANY_REQUESTS"),
            Some(Code::TooManyRequests)
        );
        assert_eq!(MessageType::Priority as i32, 6);
        assert_eq!(ClientType::LiteSimpleConsumer as i32, 6);
        assert_eq!(Language::Rust as i32, 5);
        assert_eq!(Permission::ReadWrite as i32, 4);
        assert_eq!(AddressScheme::DomainName as i32, 3);
        assert_eq!(LiteSubscriptionAction::CompleteRemove as i32, 3);
        assert_eq!(QueryOffsetPolicy::Timestamp as i32, 2);
        assert_eq!(offset_option::Policy::Max as i32, 2);
        assert_eq!(
            TransactionSource::SourceServerCheck.as_str_name(),
            "SOURCE_SERVER_CHECK"
        );
    }

    #[test]
    fn service_name() {
        // The gRPC path prefix of every call: /apache.rocketmq.v2.MessagingService/<Rpc>.
        assert_eq!(
            messaging_service_server::SERVICE_NAME,
            "apache.rocketmq.v2.MessagingService"
        );
    }
}
