//! Arbitrary text as a properties file, a TOML file and `-o` overrides, then the real
//! BrokerConfig / StoreConfig / HaConfig / NamesrvConfig deserialised from it and
//! sanitised: never a panic, and every value error names a key.
#![no_main]

use broker::config::BrokerConfig;
use libfuzzer_sys::fuzz_target;
use remoting::settings::{Settings, Syntax};

fn check(settings: &Settings) {
    match settings.deserialize::<BrokerConfig>() {
        Ok(mut c) => {
            if c.sanitize().is_ok() {
                let _ = c.namesrv_addrs();
                let _ = c.ha_listen_port(c.listen_port);
                let _ = c.fast_listen_port(c.listen_port);
            }
        }
        Err(e) => assert!(e.to_string().contains(" = '"), "{e}"),
    }
    match settings.deserialize::<store::StoreConfig>() {
        Ok(mut c) => {
            if c.sanitize().is_ok() {
                let _ = (c.index_file_size(), c.max_record_size());
                let _ = store::config::parse_delete_when(&c.delete_when);
            }
        }
        Err(e) => assert!(e.to_string().contains(" = '"), "{e}"),
    }
    match settings.deserialize::<ha::HaConfig>() {
        Ok(mut c) => {
            let _ = c.sanitize();
        }
        Err(e) => assert!(e.to_string().contains(" = '"), "{e}"),
    }
    if let Ok(c) = nameserver::config::NamesrvConfig::from_settings(settings) {
        let _ = (c.to_properties(), c.black_list());
    }
    let _ = settings.unknown_keys();
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for syntax in [Syntax::Properties, Syntax::Toml] {
        if let Ok(settings) = Settings::from_text(text, syntax) {
            check(&settings);
        }
    }
    let overrides: Vec<String> = text.lines().map(str::to_owned).collect();
    if let Ok(settings) = Settings::load(None, &overrides) {
        check(&settings);
    }
});
