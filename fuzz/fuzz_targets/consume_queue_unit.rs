//! Arbitrary bytes as a consume-queue file: every 20-byte slot decodes without a panic,
//! and a unit re-encodes to its own bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use store::consume_queue::{self as unit, CQ_STORE_UNIT_SIZE, CqSlot};

fuzz_target!(|data: &[u8]| {
    for start in 0..data.len().min(CQ_STORE_UNIT_SIZE) {
        let mut rest = &data[start..];
        while let Some(slot) = unit::decode(rest) {
            match slot {
                CqSlot::Unit(u) => {
                    assert_eq!(u.encode()[..], rest[..CQ_STORE_UNIT_SIZE]);
                    let _ = u.end();
                }
                CqSlot::Blank | CqSlot::Empty => {}
            }
            rest = &rest[CQ_STORE_UNIT_SIZE..];
        }
    }
});
