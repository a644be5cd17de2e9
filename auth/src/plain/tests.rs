use super::*;
use crate::signature::Credentials;
use proptest::prelude::*;

const SAMPLE: &str = r"
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
";

fn config() -> PlainConfig {
    let file = parse_file(SAMPLE).unwrap();
    PlainConfig::build(&[(PathBuf::from("plain_acl.yml"), file)]).unwrap()
}

fn send(topic: &str) -> RemotingCommand {
    let mut r = RemotingCommand::request(RequestCode::SendMessageV2);
    r.header.ext_fields.insert("a", "groupB");
    r.header.ext_fields.insert("b", topic);
    r
}

fn signed(mut r: RemotingCommand, ak: &str, sk: &str) -> RemotingCommand {
    Credentials::new(ak, sk).sign(&mut r);
    r
}

#[test]
fn the_sample_file_parses() {
    let file = parse_file(SAMPLE).unwrap();
    assert_eq!(file.global_white_remote_addresses.len(), 2);
    assert_eq!(file.accounts.len(), 2);
    assert_eq!(file.accounts[0].secret_key.as_deref(), Some("12345678"));
    assert!(file.accounts[1].admin);
    assert_eq!(file.accounts[0].white_remote_address, None);
    assert_eq!(parse_file("").unwrap(), PlainFile::default());
    assert!(parse_file("- a\n- b").is_err());
    assert!(parse_file("accounts: 3").is_err());
}

#[test]
fn validate_as_4_9_8() {
    let c = config();
    let ip = "127.0.0.1";
    assert_eq!(
        c.validate(&signed(send("topicB"), "RocketMQ", "12345678"), ip),
        Ok(())
    );
    assert_eq!(
        c.validate(&signed(send("topicB"), "RocketMQ", "wrong"), ip),
        Err("org.apache.rocketmq.acl.common.AclException: Check signature failed for accessKey=RocketMQ, org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:684)".into())
    );
    assert_eq!(
        c.validate(&send("topicB"), ip),
        Err("org.apache.rocketmq.acl.common.AclException: No accessKey is configured, org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:664)".into())
    );
    assert!(
        c.validate(&signed(send("topicB"), "nobody12", "12345678"), ip)
            .unwrap_err()
            .contains("No acl config for nobody12")
    );
    let denied = c.validate(&signed(send("topicA"), "RocketMQ", "12345678"), ip);
    assert_eq!(
        denied,
        Err("org.apache.rocketmq.acl.common.AclException: No default permission for topic:topicA, org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:611)".into())
    );
    // Not listed: the default topic permission (DENY).
    assert!(
        c.validate(&signed(send("other"), "RocketMQ", "12345678"), ip)
            .unwrap_err()
            .contains("No default permission for topic:other")
    );
    // A global white address needs nothing at all.
    assert_eq!(c.validate(&send("topicA"), "10.10.103.5"), Ok(()));
    // The account's white address skips the signature.
    assert_eq!(
        c.validate(&signed(send("x"), "rocketmq2", "bad"), "192.168.1.9"),
        Ok(())
    );
    // An admin without permissions listed may do anything once signed.
    assert_eq!(
        c.validate(&signed(send("x"), "rocketmq2", "12345678"), ip),
        Ok(())
    );
    let mut create = RemotingCommand::request(RequestCode::UpdateAndCreateTopic);
    create.header.ext_fields.insert("topic", "t");
    assert!(
        c.validate(&signed(create, "RocketMQ", "12345678"), ip)
            .unwrap_err()
            .contains("Need admin permission for request code=17, but accessKey=RocketMQ is not")
    );
}

#[test]
fn pulls_need_topic_and_group() {
    let c = config();
    let mut pull = RemotingCommand::request(RequestCode::PullMessage);
    pull.header.ext_fields.insert("topic", "topicC");
    pull.header.ext_fields.insert("consumerGroup", "groupA");
    let e = c
        .validate(&signed(pull.clone(), "RocketMQ", "12345678"), "127.0.0.1")
        .unwrap_err();
    assert!(e.contains("No default permission for group:groupA"), "{e}");
    pull.header.ext_fields.insert("consumerGroup", "groupC");
    assert_eq!(
        c.validate(&signed(pull, "RocketMQ", "12345678"), "127.0.0.1"),
        Ok(())
    );
}

#[test]
fn short_keys_are_refused_without_the_secret() {
    let e = Account::build(&AccountConfig {
        access_key: Some("abc".into()),
        secret_key: Some("topsecret".into()),
        ..AccountConfig::default()
    })
    .unwrap_err();
    assert!(e.contains("accessKey=abc"));
    assert!(!e.contains("topsecret"));
}

#[test]
fn java_hash_map_order() {
    assert_eq!(java_hash(""), 0);
    assert_eq!(java_hash("a"), 97);
    assert_eq!(java_hash("ab"), 97 * 31 + 98);
    let mut n = Needed::default();
    for k in ["c", "a", "b"] {
        n.add(Some(k), PUB);
    }
    // Java: new HashMap() with c, a, b iterates a, b, c (buckets 1, 2, 3).
    let order: Vec<String> = n.in_java_order().into_iter().map(|e| e.0).collect();
    assert_eq!(order, ["a", "b", "c"]);
}

#[test]
fn files_reload_when_they_change() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("conf/plain_acl.yml");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, SAMPLE).unwrap();
    let acl = PlainAcl::load(file.clone(), dir.path().join("conf/acl")).unwrap();
    let req = signed(send("topicB"), "newuser1", "newsecret1");
    assert!(acl.validate(&req, "127.0.0.1").is_err());
    let more = format!(
        "{SAMPLE}\n  - accessKey: newuser1\n    secretKey: newsecret1\n    defaultTopicPerm: PUB\n"
    );
    fs::write(&file, more).unwrap();
    assert!(acl.reload_if_changed());
    assert_eq!(acl.validate(&req, "127.0.0.1"), Ok(()));
    // A broken file leaves the last good one in force.
    fs::write(&file, "accounts: [oops").unwrap();
    assert!(!acl.reload_if_changed());
    assert_eq!(acl.validate(&req, "127.0.0.1"), Ok(()));
    // Files under conf/acl count too.
    fs::create_dir_all(dir.path().join("conf/acl")).unwrap();
    fs::write(
        dir.path().join("conf/acl/more.yml"),
        "accounts:\n  - accessKey: second12\n    secretKey: second12\n    admin: true\n",
    )
    .unwrap();
    fs::write(&file, SAMPLE).unwrap();
    assert!(acl.reload_if_changed());
    assert_eq!(
        acl.validate(&signed(send("x"), "second12", "second12"), "127.0.0.1"),
        Ok(())
    );
}

#[test]
fn migration_to_acl_2() {
    let store = MetadataStore::in_memory();
    migrate(&config(), &store);
    let user = crate::evaluate::Directory::user(&store, "rocketmq2").unwrap();
    assert_eq!(user.user_type, crate::model::UserType::Super);
    let acl = store.acl_of("RocketMQ").unwrap().unwrap();
    assert_eq!(acl.policy(PolicyType::Custom).unwrap().entries.len(), 6);
    let default = acl.policy(PolicyType::Default).unwrap();
    assert_eq!(default.entries[0].resource.key(), "Topic:*");
    assert_eq!(default.entries[0].decision, Decision::Deny);
}

#[test]
fn deep_nesting_is_refused() {
    let deep = format!("accounts: {}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse_file(&deep).is_err());
}

proptest! {
    /// Operator input: any text parses or is refused, never panics; so does building it.
    #[test]
    fn any_file_is_safe(text in "\\PC{0,200}") {
        if let Ok(file) = parse_file(&text) {
            let _ = PlainConfig::build(&[(PathBuf::from("x.yml"), file)]);
        }
    }

    #[test]
    fn yaml_like_files_are_safe(lines in proptest::collection::vec(
        prop::sample::select(vec![
            "accounts:", "  - accessKey: abcdefgh", "    secretKey: 12345678",
            "    whiteRemoteAddress: 1.2.3.*", "    topicPerms:", "      - a=PUB",
            "      - b", "    admin: yes", "globalWhiteRemoteAddresses:", "  - 300.1.1.1",
            "  - *", "    defaultTopicPerm: PUB|SUB", "- x", "  {", "]",
        ]), 0..20)) {
        let text = lines.join("\n");
        if let Ok(file) = parse_file(&text) {
            let _ = PlainConfig::build(&[(PathBuf::from("x.yml"), file)]);
        }
    }
}
