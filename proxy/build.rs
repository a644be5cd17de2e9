//! Generates the `apache.rocketmq.v2` code (prost messages, tonic server and client) from the
//! .proto files under `proto/`. protox parses them in Rust: no `protoc` is needed or used.

/// The include root the files' imports are relative to.
const PROTO_ROOT: &str = "proto";
/// Our statement of the protocol; the google/protobuf imports are built into protox.
const PROTOS: [&str; 2] = [
    "apache/rocketmq/v2/definition.proto",
    "apache/rocketmq/v2/service.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{proto}");
    }
    let descriptors = protox::compile(PROTOS, [PROTO_ROOT])?;
    tonic_prost_build::configure()
        // Message bodies as `Bytes`: a received body is a slice of the request's buffer and
        // a delivered one of the broker's answer, never copied on the way.
        .bytes(".apache.rocketmq.v2")
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
