//! Arbitrary bytes as fastjson bodies (bare and object map keys): never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use remoting::fastjson;
use remoting::protocol::route::{ClusterInfo, TopicRouteData};
use remoting::protocol::topic::RegisterBrokerBody;

fuzz_target!(|data: &[u8]| {
    let _ = fastjson::from_slice::<TopicRouteData>(data);
    let _ = fastjson::from_slice::<ClusterInfo>(data);
    let _ = RegisterBrokerBody::decode(data, false);
    let _ = RegisterBrokerBody::decode(data, true);
});
