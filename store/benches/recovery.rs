//! Recovery scan speed (criterion): the pure scan over a 256 MiB CommitLog file of
//! 1 KiB records, with and without CRC checks, and the whole abnormal-recovery open.
//! `cargo bench -p store --bench recovery -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used)] // bench harness code

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use store::record::{RecordFields, body_crc, encode, encode_blank};
use store::recovery::scan;

const FILE: usize = 256 << 20;

fn file_of_records(body_len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; FILE];
    let body: Vec<u8> = (0..body_len).map(|i| i as u8).collect();
    let host = "10.0.0.1:10911".parse().unwrap();
    let mut pos = 0usize;
    let mut q = 0u64;
    loop {
        let f = RecordFields {
            body_crc: body_crc(&body),
            queue_id: (q % 8) as i32,
            flag: 0,
            queue_offset: q / 8,
            physical_offset: pos as u64,
            sys_flag: 0,
            born_timestamp: 1,
            born_host: host,
            store_timestamp: 2,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: &body,
            topic: b"BenchTopic",
            properties: [b"TAGS\x01t\x02KEYS\x01k", &[], &[]],
        };
        let len = f.encoded_len().unwrap();
        if pos + len + 8 > FILE {
            encode_blank(&mut buf[pos..], (FILE - pos) as u32);
            return buf;
        }
        encode(&mut buf[pos..pos + len], &f);
        pos += len;
        q += 1;
    }
}

fn recovery(c: &mut Criterion) {
    let mut g = c.benchmark_group("recovery_scan");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(FILE as u64));
    for body in [128usize, 1024, 4096] {
        let bytes = file_of_records(body);
        for crc in [true, false] {
            g.bench_function(
                format!("{body}/{}", if crc { "crc" } else { "nocrc" }),
                |b| {
                    b.iter(|| {
                        let mut n = 0u64;
                        let s = scan(&bytes, 0, FILE, crc, |_, m| n += m.queue_offset & 1);
                        assert_eq!(s.stop, store::recovery::StopReason::EndOfFile);
                        std::hint::black_box(n)
                    })
                },
            );
        }
    }
    g.finish();
}

criterion_group!(benches, recovery);
criterion_main!(benches);
