use super::*;

#[test]
fn version_tags_are_recognised() {
    for tag in ["1.2.3", "v1.2.3", "v2.0.0-rc.1"] {
        assert!(is_version_tag(tag), "{tag}");
    }
    for tag in ["latest", "v1.2", "release-1.2.3", "1.2.3.4"] {
        assert!(!is_version_tag(tag), "{tag}");
    }
}

#[test]
fn ssh_remotes_are_recognised_in_url_and_scp_forms() {
    let target = |user: Option<&str>, host: &str, port: u16| {
        Some(SshTarget {
            user: user.map(str::to_owned),
            host: host.to_owned(),
            port,
        })
    };
    let cases = [
        (
            "ssh://git@git.example.invalid:2222/o/r.git",
            target(Some("git"), "git.example.invalid", 2222),
        ),
        (
            "ssh://git.example.invalid/o/r.git",
            target(None, "git.example.invalid", 22),
        ),
        (
            "git+ssh://me@[::1]:2200/r.git",
            target(Some("me"), "::1", 2200),
        ),
        (
            "git@git.example.invalid:o/r.git",
            target(Some("git"), "git.example.invalid", 22),
        ),
        (
            "git.example.invalid:r.git",
            target(None, "git.example.invalid", 22),
        ),
        ("me@[::1]:r.git", target(Some("me"), "::1", 22)),
        ("https://git.example.invalid/o/r.git", None),
        ("file:///srv/r.git", None),
        ("/srv/r.git", None),
        ("./r.git", None),
        ("dir/with:colon", None),
    ];
    for (url, expected) in cases {
        assert_eq!(SshTarget::from_url(url), expected, "{url}");
    }
    let ported = SshTarget::from_url("ssh://h.example.invalid:2222/r").unwrap();
    assert_eq!(ported.known_hosts_name(), "[h.example.invalid]:2222");
    let plain = SshTarget::from_url("h.example.invalid:r").unwrap();
    assert_eq!(plain.known_hosts_name(), "h.example.invalid");
}
